"""The bot's logs: one JSON object per line, with the text of every secret blanked.

The web edge and the worker both call `configure_json_logging` (the CLI's own logging is
`freemad.logs`); gunicorn's logger formats with `JsonLogFormatter` too. `scrub_secrets` filters a
logger's records themselves, so no handler ever sees a secret an exception quoted.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import traceback
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from freemad.redact import Redactor

if TYPE_CHECKING:
    from freemad.bot.settings import BotSettings


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and the delivery's fields.

    With a `redactor`, the message and any traceback pass through it, so a secret that slipped
    into an exception (a queue URL with its password, say) never reaches the log.
    """

    FIELDS = ("delivery_id", "event", "status")

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": self._clean(record.getMessage()),
        }
        for key in self.FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                entry[key] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = self._clean(record.exc_text)
        return json.dumps(entry, default=str)

    def _clean(self, text: str) -> str:
        return self.redactor.text(text) if self.redactor is not None else text


def configure_json_logging(settings: BotSettings) -> None:
    """JSON lines on stderr for the `freemad` logger, with every secret's text redacted."""
    logger = logging.getLogger("freemad")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLogFormatter(secret_redactor(settings)))
    logger.addHandler(handler)
    logger.setLevel(settings.log_level)
    logger.propagate = False


def secret_redactor(settings: BotSettings) -> Redactor:
    """Blanks the text of every secret in `settings`."""
    # Longest first, so a secret that contains another is blanked whole.
    ordered = sorted(set(settings.secret_values()), key=len, reverse=True)
    return Redactor([re.escape(value) for value in ordered])


class _SecretScrubber(logging.Filter):
    """Blanks known secrets in a logger's records (message and traceback) before any handler.

    The executor's exceptions are logged by the web edge, and their text is not ours: a Redis
    error may quote its URL, password included. Filtering the record itself keeps every handler
    clean.
    """

    def __init__(self) -> None:
        super().__init__()
        self.redactor = Redactor([])
        self._secrets: set[str] = set()

    def add(self, secrets: list[str]) -> None:
        self._secrets.update(secrets)
        ordered = sorted(self._secrets, key=len, reverse=True)  # longest first, as above
        self.redactor = Redactor([re.escape(value) for value in ordered])

    def filter(self, record: logging.LogRecord) -> bool:
        redactor = self.redactor
        record.msg, record.args = redactor.text(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        if record.exc_text:
            record.exc_text = redactor.text(record.exc_text)
        return True


_SCRUBBER = _SecretScrubber()


def scrub_secrets(logger: logging.Logger, settings: BotSettings) -> None:
    """Blank the secrets of `settings` (and of any settings given before) in `logger`'s records."""
    _SCRUBBER.add(settings.secret_values())
    if _SCRUBBER not in logger.filters:
        logger.addFilter(_SCRUBBER)
