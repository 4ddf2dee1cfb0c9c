"""Cleaning untrusted issue and comment text before FREE-MAD (or an agent) reads it. No I/O.

``clean(text)`` keeps what a person sees on the rendered GitHub page and drops what they cannot,
so nothing hidden from the humans reviewing an issue reaches an agent or the command parser:

1. Line breaks: ``\\r\\n``, ``\\r`` and every other break ``str.splitlines`` knows (``\\v``,
   ``\\f``, ``\\x1c``-``\\x1e``, NEL ``\\x85``, LINE and PARAGRAPH SEPARATOR ``\\u2028``/``\\u2029``)
   become ``\\n``, so "the first line" means the same everywhere.
2. Removed characters: C0 and C1 controls and DEL other than ``\\n`` and ``\\t`` (NUL included);
   every format character (Unicode category Cf: zero-width space, non-joiner and joiner,
   LRM/RLM, the bidi embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069, ALM
   U+061C, soft hyphen, word joiner and invisible operators U+2060-U+2064, BOM U+FEFF, ...);
   lone surrogates (Cs); and the other default-ignorable code points that render as nothing
   (combining grapheme joiner U+034F, Hangul fillers, Khmer inherent vowels, Mongolian variation
   selectors, U+FFF0-U+FFF8, and the whole tag and supplementary-variation-selector plane
   U+E0000-U+E0FFF). Removing the zero-width joiner splits emoji such as a family into its
   people; that is the price of closing a channel for invisible text.
3. HTML comments: from ``<!--`` to the first ``-->`` after it, across lines, including the
   HTML forms ``<!-->`` and ``<!--->``; an unterminated ``<!--`` hides everything to the end, as
   it does on GitHub. A comment inside a code span or block is removed too: over-removal is safe,
   under-removal is not. Nested comments end at the first ``-->`` (as in HTML), and text that
   only becomes ``<!--`` once a comment or an invisible character is gone is removed as well.
4. Variation selectors VS1-VS16 (U+FE00-U+FE0F) are kept, because emoji presentation depends on
   them, but only one per character: a run keeps its first, and one at the very start goes. (A
   run of selectors can smuggle bytes invisibly; one per visible character cannot carry much.)

Everything else is kept as written: all visible text, spaces including no-break spaces, tabs,
private-use characters, markdown, and ``<details>`` or other HTML (it is visible in the source a
reviewer reads). ``limit`` cuts the result to at most ``limit`` characters, the last line being
a visible marker that says so. ``clean`` is idempotent, with or without the same ``limit``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["clean", "is_removed"]

_LINE_BREAKS = re.compile("\r\n|[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# Anything that is not printable ASCII, tab or newline gets a closer look.
_SUSPECT = re.compile(r"[^\t\n\x20-\x7e]+")
_SELECTORS = "".join(chr(c) for c in range(0xFE00, 0xFE10))
_SELECTOR_RUN = re.compile(f"([{_SELECTORS}])[{_SELECTORS}]+")
_REMOVED_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})
# Default-ignorable code points (Unicode DerivedCoreProperties) outside Cc/Cf/Cs, VS1-16 aside.
_IGNORABLE_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2065, 0x2065),
    (0x3164, 0x3164),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_OPEN = "<!--"


@lru_cache(maxsize=4096)
def is_removed(char: str) -> bool:
    """True for a character that ``clean`` always removes (step 2 of the module docstring)."""
    if char in "\t\n":
        return False
    if unicodedata.category(char) in _REMOVED_CATEGORIES:
        return True
    code = ord(char)
    return any(low <= code <= high for low, high in _IGNORABLE_RANGES)


def _drop_invisible(match: re.Match[str]) -> str:
    run = match.group()
    return "".join(c for c in run if not is_removed(c))


def _tail(pieces: list[str]) -> str:
    """The last three characters of the joined pieces."""
    tail = ""
    for piece in reversed(pieces):
        tail = piece + tail
        if len(tail) >= 3:
            break
    return tail[-3:]


def _pop(pieces: list[str], count: int) -> None:
    while count:
        last = pieces.pop()
        if len(last) > count:
            pieces.append(last[:-count])
            return
        count -= len(last)


def _drop_comments(text: str) -> str:
    """Remove HTML comments in one linear pass; the output never contains ``<!--``."""
    pieces: list[str] = []
    i, n = 0, len(text)
    while i < n:
        # After a removal the kept text may end in "<", "<!" or "<!-" and join what follows.
        tail = _tail(pieces)
        last = -1  # index in `text` of the opener's final "-"
        for kept in (3, 2, 1):
            if tail.endswith(_OPEN[:kept]) and text.startswith(_OPEN[kept:], i):
                _pop(pieces, kept)
                last = i + 3 - kept
                break
        if last < 0:
            start = text.find(_OPEN, i)
            if start < 0:
                pieces.append(text[i:])
                break
            if start > i:
                pieces.append(text[i:start])
            last = start + 3
        if text.startswith(">", last + 1):  # "<!-->"
            i = last + 2
        else:
            close = text.find("-->", last)  # from `last` so that "<!--->" closes
            i = n if close < 0 else close + 3
    return "".join(pieces)


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    marker = f"\n[FREE-MAD cut this text to {limit} of its {len(text)} characters]"
    if len(marker) >= limit:
        return text[:limit]
    return text[: limit - len(marker)] + marker


def clean(text: str, *, limit: int | None = None) -> str:
    """Untrusted text as a person sees it: see the module docstring for what goes and what stays."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be at least 0, not {limit}")
    text = _LINE_BREAKS.sub("\n", text)
    text = _SUSPECT.sub(_drop_invisible, text)
    text = _drop_comments(text)
    text = _SELECTOR_RUN.sub(r"\1", text).lstrip(_SELECTORS)
    return text if limit is None else _truncate(text, limit)
