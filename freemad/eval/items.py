"""An item (one question and how to grade an answer to it) and a dataset (items, and the bad
records left out, each named by its line)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from freemad.eval.checkers import normal_form


@dataclass(frozen=True)
class Item:
    """One question and how to grade an answer to it. For `code`: `test` defines
    `check(candidate)`, `entry_point` names the function it is given, and `prompt` (optional) is
    code put before the answer's, as HumanEval does. For `choice`, `options` (when known) are the
    options' texts in letter order, so an answer may name an option by its text."""

    id: str
    question: str
    checker: str
    answer: str | None = None
    test: str | None = None
    entry_point: str | None = None
    prompt: str = ""
    options: tuple[str, ...] = ()

    @property
    def expected(self) -> str | None:
        """The expected answer in its checker's normal form (None for `code`)."""
        if self.checker == "code" or self.answer is None:
            return None
        return normal_form(self.checker, self.answer, self.options)

    def normal(self, text: str | None) -> str | None:
        """An answer's normal form under this item's checker: what every method counts."""
        return normal_form(self.checker, text, self.options)

    def fingerprint(self) -> str:
        """Changes whenever anything that decides the item's grade does."""
        fields: list[object] = [
            self.id,
            self.question,
            self.checker,
            self.answer,
            self.test,
            self.entry_point,
            self.prompt,
        ]
        if self.options:  # left out when empty, so rows kept before options existed still match
            fields.append(list(self.options))
        text = json.dumps(fields, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Dataset:
    name: str
    items: list[Item]
    problems: list[str]  # one line per bad item, naming where it is
    format: str = "freemad"
    notes: list[str] = field(default_factory=list)
