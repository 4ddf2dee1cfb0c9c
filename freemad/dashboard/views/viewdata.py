"""What every view is built of: defensive readers of untrusted data (a transcript or an event
log may come from anywhere: a missing or mistyped field reads as absent), numbers as pages show
them, and diffs as classed lines. Pure: no I/O.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from typing import Any

from freemad.svg_chart import format_number

DIFF_LINES = 400  # a longer diff is cut, with a note


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(float(value)) else None


def as_text(value: Any) -> str:
    return "" if value is None else str(value)


def number(value: Any) -> str:
    found = as_number(value)
    return "-" if found is None else format_number(found)


_DIFF_KINDS = {"+": "add", "-": "del", "@": "hunk"}


def diff_lines(before: str, after: str) -> dict[str, Any]:
    """A unified diff as classed lines ("add", "del", "hunk", "same"), cut at DIFF_LINES."""
    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2))
    body = diff[2:]  # past the "---" and "+++" lines that name the two texts
    return _cut([{"kind": _DIFF_KINDS.get(line[:1], "same"), "text": line} for line in body])


def patch_lines(patch: str) -> dict[str, Any]:
    """A git diff as classed lines: as `diff_lines`, and each file's header lines ("diff --git",
    "index", "---", "+++", ...) as "hunk"."""
    lines, header = [], False
    for line in patch.splitlines():
        header = line.startswith("diff ") or (header and not line.startswith("@@"))
        kind = "hunk" if header else _DIFF_KINDS.get(line[:1], "same")
        lines.append({"kind": kind, "text": line})
    return _cut(lines)


def _cut(lines: list[dict[str, str]]) -> dict[str, Any]:
    return {"lines": lines[:DIFF_LINES], "cut": max(len(lines) - DIFF_LINES, 0)}
