"""How an answer is graded: each checker's normal form (what majorities count) and its verdict.

`exact`: the text with every run of whitespace made one space, trimmed; right when it equals the
item's answer so normalised. `numeric`: the last number in the text (`1,000`, `-2.5`, `3/4`,
`1e-3`; a number glued to a letter before it, as in `x2`, does not count), as an exact value;
right when within a relative 1e-6 (absolute 1e-9 near zero) of the item's answer. `choice`: an
option letter A-E, found as `choice_letter` says, else the one option whose text the answer
gives. `yesno`: `yes` or `no` (`true`/`false` too), as `yes_no` says. `normalized`: lower case, no
punctuation, no articles (a, an, the), spaces made one (SQuAD's answer normalisation). `math`: the
answer as `math_text.math_normal` says; right when equal to the item's, else when sympy finds the
two equal within its time limit (`freemad.eval.math_check`). `code`: the Python code of the answer
(its fenced blocks, else the whole text), trailing spaces and outer blank lines gone; run against
the item's tests in the sandbox (`freemad.eval.code_check`).

The normal form is the answer's identity for every method: what a majority counts, what a single
agent is graded on, what self-consistency votes over and what the judge picks among.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence
from fractions import Fraction

from freemad.debate.validation import python_source
from freemad.eval.math_text import math_normal

CHECKERS = ("exact", "normalized", "numeric", "math", "choice", "yesno", "code")
LETTERS = "ABCDE"
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
_YES_NO = {"yes": "yes", "no": "no", "true": "yes", "false": "no"}
_STATED_YES_NO = re.compile(r"(?i)\banswer\b(?:\s+is)?\s*\**\s*[:=]?\s*\**\s*(yes|no|true|false)\b")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normal_form(checker: str, text: str | None, options: Sequence[str] = ()) -> str | None:
    """What `checker` compares of `text`; None when it finds nothing to grade (a wrong answer,
    and no vote in a majority). `options`: a `choice` item's option texts, in letter order."""
    if text is None:
        return None
    if checker == "exact":
        return " ".join(text.split()) or None
    if checker == "normalized":
        return normalized_text(text)
    if checker == "numeric":
        return last_number(text)
    if checker == "math":
        return math_normal(text)
    if checker == "choice":
        return choice_letter(text) or option_by_text(text, options)
    if checker == "yesno":
        return yes_no(text)
    if checker == "code":
        return code_of(text)
    raise ValueError(f"unknown checker {checker!r}")


def normalized_text(text: str) -> str | None:
    """Lower case, punctuation and articles gone, spaces made one."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split()) or None


def option_by_text(text: str, options: Sequence[str]) -> str | None:
    """The letter of the option whose text the answer (or its last line) is, normalised; else of
    the one option whose text its last line contains. None when none or several."""
    if not options:
        return None
    wanted = [normalized_text(option) for option in options]
    lines = [line for line in text.splitlines() if line.strip()]
    for candidate in (text, lines[-1] if lines else ""):
        said = normalized_text(candidate)
        if said in wanted and wanted.count(said) == 1:
            return LETTERS[wanted.index(said)]
    said = f" {normalized_text(lines[-1]) if lines else ''} "
    inside = [i for i, option in enumerate(wanted) if option and f" {option} " in said]
    return LETTERS[inside[0]] if len(inside) == 1 else None


def yes_no(text: str) -> str | None:
    """`yes` or `no`: the last "answer: yes" (or "the answer is no"); else the first word of the
    text, or its last line, when that is yes, no, true or false."""
    stated = _STATED_YES_NO.findall(text)
    if stated:
        return _YES_NO[stated[-1].lower()]
    lines = [line for line in text.splitlines() if line.strip()]
    for line in (lines[0], lines[-1]) if lines else ():
        words = line.lower().translate(_PUNCTUATION).split()
        if words and words[0] in _YES_NO:
            return _YES_NO[words[0]]
    return None


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
