"""Parsing agent replies written in the debate contract (generation and critique replies).

A marker is a line that starts, at column 0, with ``SOLUTION:``, ``REASONING:``,
``REVISED_SOLUTION:`` (also ``REVISED SOLUTION:``) or ``DECISION:``, in any case, optionally
decorated as markdown (``**SOLUTION:**``, ``## Solution:``, ``> Reasoning:``); a bare
markdown heading or bold line may drop the colon (``## Reasoning``, ``**Solution**``).
Content may follow the marker on its line. Markers inside closed fenced code blocks do not
count, nor do indented ones, so code in a solution cannot end it early. ANSI escapes are
removed, line endings normalised, and a reply wrapped whole in one fence is unwrapped. Garbage
never becomes an answer: anything that is not clearly in the contract raises
``ReplyFormatError``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from freemad.core.answer_identity import fence_closer, fence_opener, fence_spans, split_lines

__all__ = [
    "Critique",
    "Decision",
    "Generation",
    "ReplyFormatError",
    "degenerate",
    "echo_tail",
    "echoes",
    "parse_critique",
    "parse_generation",
    "prompt_lines",
    "recover",
]


class ReplyFormatError(ValueError):
    """A reply does not follow the debate contract; the message names what is missing."""


@dataclass(frozen=True, slots=True)
class Generation:
    """A generation-round reply."""

    solution: str
    reasoning: str


class Decision(str, Enum):
    """What an agent decided about its own answer in a critique round."""

    KEEP = "keep"
    REVISE = "revise"


@dataclass(frozen=True, slots=True)
class Critique:
    """A critique-round reply; ``revised_solution`` is set only when revising."""

    decision: Decision
    revised_solution: str | None
    reasoning: str


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_MARKER = re.compile(
    r"(?P<heading>#{1,6}[ \t]*)?(?:>[ \t]*)?(?P<open>[*_]*)[ \t]*"
    r"(?P<name>revised[ _-]?solution|solution|reasoning|decision)(?![A-Za-z0-9])"
    r"[ \t]*(?P<close>[*_]*)[ \t]*(?P<colon>:?)[ \t]*(?P<rest>.*)",
    re.IGNORECASE,
)
_DECISION_WORD = re.compile(r"[\s*_`\"'\[(]*([A-Za-z]+)")
_MARKER_STARTS = frozenset("#>*_sSrRdD")


@dataclass(frozen=True, slots=True)
class _Marker:
    line: int
    name: str  # "solution", "revised_solution", "reasoning" or "decision"
    rest: str  # what followed the marker on its line, decorations removed


def _marker(index: int, line: str) -> _Marker | None:
    if not line or line[0] not in _MARKER_STARTS:
        return None
    match = _MARKER.fullmatch(line)
    if match is None:
        return None
    rest = match.group("rest").rstrip()
    opening = match.group("open")
    if opening and not match.group("close"):
        # "**SOLUTION:** x" or "**SOLUTION: x**": the bold closes after the colon
        if rest.startswith(opening):
            rest = rest[len(opening) :].lstrip()
        elif rest.endswith(opening[::-1]):
            rest = rest[: -len(opening)].rstrip()
    # without a colon only a bare heading or bold line counts: "## Reasoning", "**Solution**"
    titled = match.group("heading") or (opening and match.group("close"))
    if not match.group("colon") and not (titled and not rest):
        return None
    name = match.group("name").lower()
    name = "revised_solution" if name.startswith("revised") else name
    return _Marker(index, name, rest)


def _markers(lines: Sequence[str]) -> list[_Marker]:
    fenced = fence_spans(list(lines), require_close=True)
    markers: list[_Marker] = []
    span = 0
    for index, line in enumerate(lines):
        while span < len(fenced) and fenced[span][1] < index:
            span += 1
        if span < len(fenced) and fenced[span][0] <= index:
            continue
        marker = _marker(index, line)
        if marker is not None:
            markers.append(marker)
    return markers


def _trim_blank(lines: Sequence[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return list(lines[start:end])


def _candidates(text: str) -> list[list[str]]:
    """The reply's lines, unwrapped from one enclosing fence first when it has one."""
    lines = _trim_blank(split_lines(_ANSI.sub("", text).lstrip("\ufeff")))
    if len(lines) >= 2:
        opener, closer = fence_opener(lines[0]), fence_closer(lines[-1])
        if opener and closer and closer[0] == opener[0] and closer[1] >= opener[1]:
            return [_trim_blank(lines[1:-1]), lines]
    return [lines]


def _section(lines: Sequence[str], start: _Marker, end: int) -> str:
    body = ([start.rest] if start.rest else []) + list(lines[start.line + 1 : end])
    return "\n".join(_trim_blank(body))


def _first(markers: Sequence[_Marker], name: str, after: int = -1) -> _Marker | None:
    return next((m for m in markers if m.name == name and m.line > after), None)


def _reasoning(lines: Sequence[str], markers: Sequence[_Marker], after: int) -> str:
    marker = _first(markers, "reasoning", after) or _first(markers, "reasoning")
    if marker is None:
        return ""
    following = (m.line for m in markers if m.line > marker.line and m.name != "reasoning")
    return _section(lines, marker, next(following, len(lines))).strip()


def _solution_section(lines: Sequence[str], markers: Sequence[_Marker], start: _Marker) -> str:
    end = _first(markers, "reasoning", start.line)
    return _section(lines, start, len(lines) if end is None else end.line)


def parse_generation(text: str) -> Generation:
    """Parse ``SOLUTION: … REASONING: …``; the solution keeps its inner code fences verbatim."""
    for lines in _candidates(text):
        markers = _markers(lines)
        start = _first(markers, "solution")
        if start is not None:
            break
    else:
        raise ReplyFormatError("reply has no 'SOLUTION:' marker line")
    solution = _solution_section(lines, markers, start)
    if not solution.strip():
        raise ReplyFormatError("the SOLUTION: section is empty")
    return Generation(solution=solution, reasoning=_reasoning(lines, markers, start.line))


def _decision(lines: Sequence[str], marker: _Marker) -> tuple[Decision, int]:
    """The decision and the line its value sat on (the next line when the marker had none)."""
    value, line = marker.rest, marker.line
    if not _DECISION_WORD.match(value):
        nxt = next((i for i in range(line + 1, len(lines)) if lines[i].strip()), None)
        if nxt is None or _marker(nxt, lines[nxt]) is not None:
            raise ReplyFormatError("the DECISION: line has no value; expected KEEP or REVISE")
        value, line = lines[nxt], nxt
    word_match = _DECISION_WORD.match(value)
    word = word_match.group(1) if word_match else ""
    try:
        return Decision(word.lower()), line
    except ValueError:
        shown = word[:40] or value.strip()[:40]
        raise ReplyFormatError(
            f"unknown decision {shown!r}; expected DECISION: KEEP or DECISION: REVISE"
        ) from None


def parse_critique(text: str) -> Critique:
    """Parse ``DECISION: KEEP|REVISE``, then ``REVISED_SOLUTION:`` when revising, ``REASONING:``."""
    for lines in _candidates(text):
        markers = _markers(lines)
        if markers and markers[0].name == "decision" and markers[0].line == 0:
            break
    else:
        raise ReplyFormatError(
            "the first non-empty line must be 'DECISION: KEEP' or 'DECISION: REVISE'"
        )
    decision, decided_on = _decision(lines, markers[0])
    start = _first(markers, "revised_solution", decided_on) or _first(
        markers, "solution", decided_on
    )
    revised = _solution_section(lines, markers, start) if start is not None else ""
    reasoning = _reasoning(lines, markers, decided_on if start is None else start.line)
    if decision is Decision.KEEP:
        return Critique(Decision.KEEP, None, reasoning)
    if not revised.strip():
        raise ReplyFormatError("DECISION: REVISE needs a non-empty REVISED_SOLUTION: section")
    return Critique(Decision.REVISE, revised, reasoning)


# --- replies that are not answers -----------------------------------------------------------
# A small model may copy the prompt's instructions or example, or repeat one line until its
# output runs out. Either parses as the contract asks, and neither is an answer.

_REPEATS = 4  # a line this many times, and half the lines or more: repetition


def _worded(text: str) -> list[str]:
    """The lines of `text` with a letter in them, stripped and with their spaces collapsed."""
    lines = (" ".join(line.split()) for line in split_lines(_ANSI.sub("", text)))
    return [line for line in lines if any(c.isalpha() for c in line)]


def prompt_lines(prompt_text: str) -> frozenset[str]:
    """The lines a prompt's own text is made of (its instructions and its example), in the form
    `echoes` compares a reply's lines in."""
    return frozenset(line.casefold() for line in _worded(prompt_text))


def echo_tail(text: str, prompt: frozenset[str]) -> str:
    """`text` up to where it runs on into the prompt's own text (`prompt_lines`): a small
    model continuing the prompt as a document answers, then writes the prompt's next lines
    again; its answer is what came before. The cut is at the first line of the prompt's that
    follows a line of the reply's own and from which on more than half the lines are the
    prompt's; `text` unchanged where there is none (an echo from the first line on is for
    `echoes` to name)."""
    lines = split_lines(text)
    # Per line: None when it has nothing alphanumeric, else whether it is the prompt's.
    kinds: list[bool | None] = []
    for line in lines:
        worded = " ".join(_ANSI.sub("", line).split())
        kinds.append(worded.casefold() in prompt if any(c.isalnum() for c in worded) else None)
    # From the end: how many counted lines, and how many of them the prompt's, from each on.
    counted, copied = [0] * (len(lines) + 1), [0] * (len(lines) + 1)
    for index in range(len(lines) - 1, -1, -1):
        kind = kinds[index]
        counted[index] = counted[index + 1] + (kind is not None)
        copied[index] = copied[index + 1] + (kind is True)
    answered = False
    for index, kind in enumerate(kinds):
        if kind is False:
            answered = True
        elif kind and answered and 2 * copied[index] > counted[index]:
            return "\n".join(lines[:index]).rstrip()
    return text


def echoes(texts: Sequence[str], prompt: frozenset[str]) -> str | None:
    """Why `texts` (a reply's sections) are the prompt's text again, not an answer: half their
    worded lines or more are lines of `prompt` (`prompt_lines`); None when they are not."""
    lines = [line for text in texts for line in _worded(text)]
    copied = sum(1 for line in lines if line.casefold() in prompt)
    if lines and 2 * copied >= len(lines):
        return (
            f"the reply repeats the prompt's own text ({copied} of its {len(lines)} lines) "
            "instead of answering"
        )
    return None


def degenerate(solution: str) -> str | None:
    """Why `solution` is no answer whatever it says: nothing but punctuation, or one line
    repeated (at least `_REPEATS` times and half the worded lines); None when it is neither."""
    if not any(c.isalnum() for c in solution):
        return "the solution has no words or numbers in it"
    lines = _worded(solution)
    if not lines:
        return None
    [(line, count)] = Counter(lines).most_common(1)
    if count >= _REPEATS and 2 * count >= len(lines):
        return f"the solution repeats one line {count} times ({line[:60]!r})"
    return None


def recover(text: str) -> str | None:
    """A reply with no marker at all (a model that answered but ignored the format) read as
    its answer: its whole text, colours removed and blank edges trimmed. None when the reply
    has a marker (it tried the contract, and is held to it) or nothing in it."""
    for lines in _candidates(text):
        if _markers(lines):
            return None
    body = "\n".join(_trim_blank(split_lines(_ANSI.sub("", text).lstrip("\ufeff"))))
    return body if body.strip() else None
