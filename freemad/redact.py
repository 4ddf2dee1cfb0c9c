"""Redaction of secrets matched by `security.redact_patterns`, for transcripts and logs alike."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

MARK = "[REDACTED]"


class Redactor:
    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = [re.compile(p) for p in patterns]

    def text(self, value: str) -> str:
        for pattern in self.patterns:
            value = pattern.sub(MARK, value)
        return value

    def data(self, value: Any) -> Any:
        """The same structure with every string (keys included) redacted."""
        if not self.patterns:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


class RedactingFilter(logging.Filter):
    """Redacts the fully formatted message, so arguments cannot smuggle a secret past it."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        if self.redactor.patterns:
            record.msg = self.redactor.text(record.getMessage())
            record.args = None
        return True
