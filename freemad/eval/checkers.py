"""How an answer is graded: each checker's normal form (what majorities count) and its verdict.

`exact`: the text with every run of whitespace made one space, trimmed; right when it equals the
item's answer so normalised. `numeric`: the last number in the text (`1,000`, `-2.5`, `3/4`,
`1e-3`; a number glued to a letter before it, as in `x2`, does not count), as an exact value;
right when within a relative 1e-6 (absolute 1e-9 near zero) of the item's answer. `choice`: an
option letter A-E, found as `choice_letter` says. `code`: the Python code of the answer (its
fenced blocks, else the whole text), trailing spaces and outer blank lines gone; run against the
item's tests in the sandbox (`freemad.eval.code_check`).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from freemad.debate.validation import python_source

CHECKERS = ("exact", "numeric", "choice", "code")
NUMERIC_REL_TOL = 1e-6
NUMERIC_ABS_TOL = 1e-9

_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.])([-+\u2212]?)((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
    r"(?:\s*/\s*(\d+(?:\.\d+)?))?(?:[eE]([-+]?\d+))?(?![0-9])"
)
_BOXED = re.compile(r"\\boxed\{\s*[\(\[]?([A-E])[\)\]]?\s*\}")
_STATED = re.compile(
    r"(?i:\b(?:answer|option|choice)\b)(?:\s+(?i:is))?\s*\**\s*[:=]?\s*\**\s*[\(\[]?([A-E])[\)\]]?"
    r"(?![A-Za-z0-9])"
)
_LONE = re.compile(r"^\s*\**[\(\[]?([A-E])[\)\]]?\**[.:]?\s*$")
_LABEL = re.compile(r"^\s*[\(\[]?([A-E])(?:[\)\]]|[.:](?=\s))")


def normal_form(checker: str, text: str | None) -> str | None:
    """What `checker` compares of `text`; None when it finds nothing to grade (a wrong answer,
    and no vote in a majority)."""
    if text is None:
        return None
    if checker == "exact":
        return " ".join(text.split()) or None
    if checker == "numeric":
        return last_number(text)
    if checker == "choice":
        return choice_letter(text)
    if checker == "code":
        return code_of(text)
    raise ValueError(f"unknown checker {checker!r}")


def last_number(text: str) -> str | None:
    """The last number in `text` as an exact value: an integer, else a decimal."""
    found = None
    for match in _NUMBER.finditer(text):
        found = match
    if found is None:
        return None
    sign, body, denominator, exponent = found.groups()
    try:
        value = Fraction(body.replace(",", ""))
        if denominator is not None:
            value /= Fraction(denominator)
        if exponent is not None:
            value *= Fraction(10) ** int(exponent)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    if sign in ("-", "\u2212"):
        value = -value
    if value.denominator == 1:
        return str(value.numerator)
    return format(float(value), ".15g")


def choice_letter(text: str) -> str | None:
    """The option letter (a capital A-E) of an answer, first rule that finds one: the last
    `\\boxed{B}`; the last statement such as `Answer: B`, `the answer is (C)`, `option D`; a letter
    alone (`B`, `(B)`, `[B].`) as the whole text or its last non-blank line; the text opening
    with an option label (`B) ...`, `(B) ...`, `B. ...`)."""
    for pattern in (_BOXED, _STATED):
        matches = pattern.findall(text)
        if matches:
            return str(matches[-1])
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and (lone := _LONE.match(lines[-1])):
        return lone.group(1)
    label = _LABEL.match(text)
    return label.group(1) if label else None


def code_of(text: str) -> str | None:
    """The Python code of an answer: its fenced blocks, else the whole text; line ends made `\\n`,
    trailing spaces and the blank lines around it gone."""
    source = python_source(text) or text
    lines = [line.rstrip() for line in source.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) or None


def matches(checker: str, normal: str | None, expected: str) -> bool:
    """Whether an answer's normal form is right for an item's expected answer (itself a normal
    form); not for `code`, whose verdict is a run."""
    if normal is None:
        return False
    if checker == "numeric":
        return math.isclose(
            float(Fraction(normal)),
            float(Fraction(expected)),
            rel_tol=NUMERIC_REL_TOL,
            abs_tol=NUMERIC_ABS_TOL,
        )
    return normal == expected
