"""Answer identity: the canonical form that decides when two answers are the same, and its id.

Modes (``IdentityMode``):

- ``exact``: the text unchanged.
- ``whitespace``: line endings become ``\\n``, each line loses its trailing whitespace, blank
  lines go. Leading indentation and tabs stay, because Python code depends on them.
- ``code``: the contents of every fenced code block (```` ``` ```` or ``~~~``, with or without
  a language tag; an unclosed fence runs to the end, as in CommonMark), joined by ``\\n`` and
  then whitespace-normalised. Without a fenced block, or when every block is blank, the whole
  text whitespace-normalised.
- ``final_answer``: what a math or multiple-choice benchmark would grade, first rule that
  applies:

  1. the last non-blank ``\\boxed{...}`` (or ``\\fbox{...}``), braces balanced and ``\\{``
     ignored. Its content loses all whitespace, surrounding ``$`` and a brace-free
     ``\\text{}``/``\\textbf{}``/``\\mathrm{}``/``\\mathbf{}`` wrapper; a number is normalised as
     in rule 3, ``\\frac{3}{4}`` (also ``\\dfrac``/``\\tfrac``) becomes ``3/4``, a lone option
     letter such as ``(B)`` becomes ``B``; anything else is kept as it is then.
  2. an explicit option letter, upper-cased: the last "answer" statement (``Answer: B``,
     ``the answer is (C)``, ``**Final answer:** D``, ``correct option is E``), where a bare
     letter must be a capital standing alone (not ``I think``), or else a lone ``(B)``,
     ``[B]`` or ``B`` as the last non-blank line.
  3. the last number: integers, decimals, negatives (also with U+2212), thousands separators
     (``1,234``) and fractions (``3/4``, kept as written, not reduced). A number glued to a
     letter before it (``x2``, ``H2O``) does not count. Separators, leading zeros, trailing
     fractional zeros and the sign of zero go, so ``1,000``, ``1000`` and ``1000.0`` agree, as
     do ``3.50`` and ``3.5``.
  4. otherwise the ``whitespace`` form.

``answer_id`` hashes a canonical form; lone surrogates are hashed as they are, never rejected.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from enum import Enum

__all__ = [
    "IdentityMode",
    "answer_id",
    "canonicalize",
    "fence_body",
    "fence_closer",
    "fence_info",
    "fence_opener",
    "fence_spans",
    "split_lines",
]


class IdentityMode(str, Enum):
    """How answers are compared when deciding whether two agents hold the same one."""

    EXACT = "exact"
    WHITESPACE = "whitespace"
    CODE = "code"
    FINAL_ANSWER = "final_answer"


_FENCE_OPEN = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
# What a fence line has after its up to 3 spaces: most lines are rejected on it, regex unrun.
_FENCE_CHARS = frozenset("`~")


def split_lines(text: str) -> list[str]:
    """Split on ``\\r\\n``, ``\\r`` or ``\\n`` (and nothing else, unlike ``str.splitlines``)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def fence_opener(line: str) -> tuple[str, int, int] | None:
    """``(fence character, fence length, indent)`` if ``line`` opens a fenced code block."""
    if line[:4].lstrip(" ")[:1] not in _FENCE_CHARS:
        return None
    match = _FENCE_OPEN.fullmatch(line)
    if match is None:
        return None
    fence = match.group(2)
    # CommonMark: a backtick fence's info string cannot hold a backtick (that is inline code)
    if fence[0] == "`" and "`" in match.group(3):
        return None
    return fence[0], len(fence), len(match.group(1))


def fence_info(line: str) -> str:
    """The info string of a fence opener (```` ```python ```` gives ``python``), or ``""``."""
    match = _FENCE_OPEN.fullmatch(line)
    return "" if match is None else match.group(3).strip()


def fence_body(lines: list[str], start: int, end: int, indent: int) -> list[str]:
    """The content lines of the fenced block opened at ``start`` and closed at ``end`` (as
    ``fence_spans`` gives them), each less up to the fence's own indentation, as in CommonMark."""
    return [
        line[min(indent, len(line) - len(line.lstrip(" "))) :] for line in lines[start + 1 : end]
    ]


def fence_closer(line: str) -> tuple[str, int] | None:
    """``(fence character, fence length)`` if ``line`` is a bare fence that can close a block."""
    if line[:4].lstrip(" ")[:1] not in _FENCE_CHARS:
        return None
    match = _FENCE_CLOSE.fullmatch(line)
    return None if match is None else (match.group(1)[0], len(match.group(1)))


def fence_spans(lines: list[str], *, require_close: bool) -> list[tuple[int, int, int]]:
    """Fenced code blocks as ``(opening line, closing line, indent)`` line indices.

    An unclosed fence ends at ``len(lines)`` when ``require_close`` is false and is not a fence
    at all when it is true. Runs in linear time whatever the input.
    """
    n = len(lines)
    longest_after: dict[str, list[int]] = {}
    if require_close:
        # longest_after[c][i]: the longest bare fence of c after line i; an opener is closed
        # exactly when some later bare fence of its character is at least as long.
        for char in "`~":
            longest_after[char] = [0] * n
        best = {"`": 0, "~": 0}
        for i in range(n - 1, -1, -1):
            longest_after["`"][i] = best["`"]
            longest_after["~"][i] = best["~"]
            closer = fence_closer(lines[i])
            if closer is not None:
                best[closer[0]] = max(best[closer[0]], closer[1])
    spans: list[tuple[int, int, int]] = []
    i = 0
    while i < n:
        opener = fence_opener(lines[i])
        if opener is None or (require_close and longest_after[opener[0]][i] < opener[1]):
            i += 1
            continue
        char, length, indent = opener
        j = i + 1
        while j < n:
            closer = fence_closer(lines[j])
            if closer is not None and closer[0] == char and closer[1] >= length:
                break
            j += 1
        spans.append((i, j, indent))
        i = j + 1
    return spans


def _normalize_whitespace(text: str) -> str:
    return "\n".join(stripped for line in split_lines(text) if (stripped := line.rstrip()))


def _code(text: str) -> str:
    lines = split_lines(text)
    parts: list[str] = []
    for start, end, indent in fence_spans(lines, require_close=False):
        parts += fence_body(lines, start, end, indent)
    return _normalize_whitespace("\n".join(parts)) or _normalize_whitespace(text)


_BOXED_TOKENS = re.compile(r"\\(?:boxed|fbox)\s*\{|\\[{}]|[{}]")
_WRAPPER = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\{([^{}]*)\}")
_LATEX_FRACTION = re.compile(r"([-−]?)\\[dt]?frac\{(\d+)\}\{(\d+)\}")
_NUMBER_BODY = r"\d+/\d+(?!\d)|(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+"
_WHOLE_NUMBER = re.compile(rf"(?P<sign>[-−+]?)(?P<body>{_NUMBER_BODY})")
_NUMBER = re.compile(rf"(?P<sign>(?<![\w)\]}}.])[-−+])?(?<![\w.])(?P<body>{_NUMBER_BODY})")
_LONE_LETTER = re.compile(r"\(?([A-Z])\)?")
_ANSWER_LETTER = re.compile(
    r"(?i:\banswer|\bcorrect\s+(?:option|choice))\b"
    r"[ \t*_]*(?:(?i:is|would\s+be|should\s+be|will\s+be)\b|[:=])?[ \t*_:]*"
    r"(?:[(\[]([A-Za-z])[)\]]|(?!I\s+[a-z])([A-Z])(?![\w'’]))"
)
_LAST_LINE_LETTER = re.compile(r"[ \t*_>#]*(?:\(([A-Za-z])\)|\[([A-Za-z])\]|([A-Z])[.)]?)[ \t*_.]*")


def _last_boxed(text: str) -> str | None:
    first = min((i for i in (text.find("\\boxed"), text.find("\\fbox")) if i >= 0), default=-1)
    if first < 0:
        return None
    # Braces before the first \boxed cannot close one, so scanning starts there.
    stack: list[int | None] = []
    found: tuple[int, str] | None = None
    for token in _BOXED_TOKENS.finditer(text, first):
        lexeme = token.group()
        if lexeme in ("\\{", "\\}"):
            continue
        if lexeme[0] == "\\":
            stack.append(token.end())
        elif lexeme == "{":
            stack.append(None)
        elif lexeme == "}" and stack:
            start = stack.pop()
            if start is not None:
                content = text[start : token.start()]
                if content.strip() and (found is None or start > found[0]):
                    found = (start, content)
    return None if found is None else found[1]


def _normalize_number(sign: str, body: str) -> str:
    body = body.replace(",", "")
    if "/" in body:
        numerator, denominator = body.split("/")
        value = f"{numerator.lstrip('0') or '0'}/{denominator.lstrip('0') or '0'}"
        is_zero = value.startswith("0/")
    else:
        integer, _, fraction = body.partition(".")
        integer = integer.lstrip("0") or "0"
        fraction = fraction.rstrip("0")
        value = f"{integer}.{fraction}" if fraction else integer
        is_zero = value == "0"
    return f"-{value}" if sign in ("-", "−") and not is_zero else value


def _canonical_boxed(content: str) -> str:
    compact = "".join(content.split()).strip("$")
    wrapped = _WRAPPER.fullmatch(compact)
    if wrapped is not None:
        compact = wrapped.group(1)
    fraction = _LATEX_FRACTION.fullmatch(compact)
    if fraction is not None:
        return _normalize_number(fraction.group(1), f"{fraction.group(2)}/{fraction.group(3)}")
    number = _WHOLE_NUMBER.fullmatch(compact)
    if number is not None:
        return _normalize_number(number.group("sign"), number.group("body"))
    letter = _LONE_LETTER.fullmatch(compact)
    return letter.group(1) if letter is not None else compact


def _last_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    last = deque(pattern.finditer(text), maxlen=1)
    return last[0] if last else None


def _option_letter(text: str) -> str | None:
    last = _last_match(_ANSWER_LETTER, text)
    if last is not None:
        return (last.group(1) or last.group(2)).upper()
    # Only the tail matters: a lone letter line is short, and the text may be megabytes.
    last_line = split_lines(text.rstrip()[-1000:])[-1]
    lone = _LAST_LINE_LETTER.fullmatch(last_line)
    return None if lone is None else next(group for group in lone.groups() if group).upper()


def _last_number(text: str) -> str | None:
    last = _last_match(_NUMBER, text)
    return None if last is None else _normalize_number(last.group("sign") or "", last.group("body"))


def _final_answer(text: str) -> str:
    boxed = _last_boxed(text)
    if boxed is not None:
        return _canonical_boxed(boxed)
    return _option_letter(text) or _last_number(text) or _normalize_whitespace(text)


def canonicalize(text: str, mode: IdentityMode | str) -> str:
    """The canonical form of ``text`` under ``mode``; equal forms mean the same answer."""
    try:
        identity = IdentityMode(mode)
    except ValueError:
        choices = ", ".join(m.value for m in IdentityMode)
        raise ValueError(f"unknown identity mode {mode!r}; expected one of: {choices}") from None
    if identity is IdentityMode.EXACT:
        return text
    if identity is IdentityMode.WHITESPACE:
        return _normalize_whitespace(text)
    if identity is IdentityMode.CODE:
        return _code(text)
    return _final_answer(text)


def answer_id(canonical: str) -> str:
    """The first 16 hex digits of the SHA-256 of ``canonical`` in UTF-8."""
    # surrogatepass: agent output can carry lone surrogates, and an id must never crash
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]
