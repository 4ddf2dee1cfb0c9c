"""Redaction of secrets matched by `security.redact_patterns`, for transcripts and logs alike."""

from __future__ import annotations

import logging
import re
import shlex
from collections.abc import Iterable, Sequence
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


# Option values and words that are credentials whatever the config's patterns say.
_TOKEN_SHAPES = re.compile(r"^(?:sk-|sk_|ghp_|gho_|ghs_|github_pat_|glpat-|xox[abpr]-|AKIA)\S{6,}")


def _secret_name(name: str) -> bool:
    from freemad.sandbox.process import looks_secret

    name = name.lstrip("-").replace("-", "_")
    return bool(name) and looks_secret(name) and not name.upper().endswith("TOKENS")


def argv_for_log(argv: Sequence[str]) -> str:
    """A command line for a log: the values of options named like a credential (`--api-key X`,
    `--token=X`, `API_KEY=X`) and words shaped like a token (`sk-...`) become [REDACTED]."""
    words: list[str] = []
    hide_next = False
    for word in argv:
        if hide_next and not word.startswith("-"):
            words.append(MARK)
            hide_next = False
            continue
        hide_next = False
        name, equals, _value = word.partition("=")
        if equals and _secret_name(name):
            words.append(f"{name}={MARK}")
        elif _TOKEN_SHAPES.match(word):
            words.append(MARK)
        else:
            words.append(word)
            hide_next = word.startswith("-") and _secret_name(word)
    return shlex.join(words)


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
