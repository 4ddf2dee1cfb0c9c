"""Logging as `logging:` in the config says: level, console, file, JSON lines, always redacted."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone

from freemad.config.models import LoggingConfig
from freemad.redact import RedactingFilter, Redactor


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("run_id", "delivery_id"):
            if hasattr(record, key):
                entry[key] = getattr(record, key)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure_logging(config: LoggingConfig, redactor: Redactor) -> None:
    """Configure the `freemad` logger (never the root logger: we are a library too)."""
    logger = logging.getLogger("freemad")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(config.level)
    logger.propagate = False
    formatter: logging.Formatter = (
        JsonLines()
        if config.structured
        else logging.Formatter("freemad: %(levelname)s: %(message)s")
    )
    handlers: list[logging.Handler] = []
    if config.console:
        handlers.append(logging.StreamHandler())
    if config.file:
        handlers.append(logging.FileHandler(config.file, encoding="utf-8"))
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(RedactingFilter(redactor))
        logger.addHandler(handler)
    if not handlers:
        logger.addHandler(logging.NullHandler())
