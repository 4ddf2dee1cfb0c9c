"""Logging as `logging:` in the config says: level, console, file, JSON lines, always redacted."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Protocol

from freemad.config.models import FreemadConfig, LoggingConfig
from freemad.errors import ConfigError
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


class Console(Protocol):
    """Where console log lines go: stderr, or a terminal's live line (freemad.cli.live_line)."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


def start_logging(
    config: FreemadConfig, *, verbose: bool = False, stream: Console | None = None
) -> None:
    """The CLI's logging: the config's `logging:` section (with `--verbose`: at DEBUG, and on the
    console too), redacted with `security.redact_patterns`; console lines go to `stream`
    (default: stderr)."""
    settings = config.logging
    if verbose:
        settings = settings.model_copy(update={"level": "DEBUG", "console": True})
    try:
        configure_logging(settings, Redactor(config.security.redact_patterns), stream=stream)
    except OSError as exc:
        raise ConfigError(
            f"logging.file: cannot open {config.logging.file}: {exc.strerror or exc}"
        ) from None


def configure_logging(
    config: LoggingConfig, redactor: Redactor, *, stream: Console | None = None
) -> None:
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
        handlers.append(logging.StreamHandler(stream))
    if config.file:
        handlers.append(logging.FileHandler(config.file, encoding="utf-8"))
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(RedactingFilter(redactor))
        logger.addHandler(handler)
    if not handlers:
        logger.addHandler(logging.NullHandler())


# The fields of a task's or evolve run's step that say what happened, in this order.
_STEP_FIELDS = (
    "stage",
    "role",
    "agent",
    "item",
    "from",
    "to",
    "iteration",
    "version",
    "detection",
    "reason",
    "cause",
    "detail",
    "question",
)


def step_line(kind: str, data: Mapping[str, Any]) -> str:
    """One step of a task or an evolve run, for a log line: its kind and what says what it did
    (never an agent's whole reply)."""
    shown = [f"{key}={_short(data[key])}" for key in _STEP_FIELDS if data.get(key) is not None]
    verdict = data.get("verdict")
    if isinstance(verdict, Mapping):
        admitted = "admitted" if verdict.get("admitted") else "rejected"
        shown.append(f"verdict={admitted}: {_short(verdict.get('reason', ''))}")
    response = data.get("response")
    if isinstance(response, Mapping) and response.get("review_decision"):
        shown.append(f"decision={response['review_decision']}")
    return " ".join([kind, *shown])


def _short(value: Any) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= 200 else text[:199] + "…"
