"""GitHub's limit on the text of a comment, a review or a pull request's description, kept for
every body FREE-MAD sends, whatever its templates produce. Pure: text in, text out.

GitHub refuses (422, "Body is too long (maximum is 65536 characters)") a body over 65,536
characters. The guard measures in UTF-16 code units, which are never fewer than characters
however GitHub counts them, so a body it lets through is one GitHub takes. A body over the limit
keeps its beginning, cut at a line where it can be, closes a code block or `<details>` the cut
left open, and ends with a line saying how much was cut.
"""

from __future__ import annotations

import re

MAX_BODY = 65_536  # GitHub's limit on an issue comment, a review, a pull request's body
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_OPEN_DETAILS = re.compile(r"<details\b", re.IGNORECASE)
_CLOSE_DETAILS = re.compile(r"</details\s*>", re.IGNORECASE)


def size(text: str) -> int:
    """`text`'s length in UTF-16 code units: its characters, plus one for each beyond U+FFFF."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def cut_note(cut: int) -> str:
    """The line that ends a body cut by `cut` characters."""
    return (
        f"✂️ FREE-MAD cut the last {cut:,} characters of this text to fit GitHub's "
        f"{MAX_BODY:,}-character limit; the run's transcript keeps all of it."
    )


def fit_body(text: str, limit: int = MAX_BODY, *, reserve: int = 0) -> str:
    """`text` as it is when it fits in `limit` less `reserve` (room kept for what the caller
    appends, a hidden marker say); else its beginning, closed, and a line saying what was cut."""
    room = limit - reserve
    if size(text) <= room:
        return text
    # The note and what closes the cut take at most this; the note's count is at most 7 digits.
    tail_room = size(cut_note(9_999_999)) + 64
    kept = _prefix(text, max(0, room - tail_room)).rstrip()
    body = f"{kept}{_closing(kept)}\n\n---\n{cut_note(len(text) - len(kept))}"
    return body if size(body) <= room else _prefix(body, room)


def _prefix(text: str, units: int) -> str:
    """The longest beginning of `text` within `units` UTF-16 code units, ended at a line break
    when one is in its last quarter."""
    end, used = 0, 0
    for end, char in enumerate(text):  # noqa: B007 - `end` is read after the loop
        used += 2 if ord(char) > 0xFFFF else 1
        if used > units:
            break
    else:
        return text
    kept = text[:end]
    line = kept.rfind("\n")
    return kept[: line + 1] if line >= len(kept) * 3 // 4 else kept


def _closing(kept: str) -> str:
    """What closes the code block and the `<details>` sections `kept` leaves open."""
    fence = ""
    for line in kept.splitlines():
        found = _FENCE.match(line)
        if found is None:
            continue
        mark = found.group(1)
        if not fence:
            fence = mark
        elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip()[len(mark) :]:
            fence = ""
    opened = len(_OPEN_DETAILS.findall(kept)) - len(_CLOSE_DETAILS.findall(kept))
    closing = f"\n{fence}" if fence else ""
    return closing + "\n</details>" * max(0, opened)
