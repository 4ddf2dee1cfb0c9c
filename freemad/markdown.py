"""Untrusted text made inert for markdown: reports, GitHub comments and pull request bodies.

Agents, issues and comments are untrusted. What passes through these helpers renders as the
text it is: no HTML, links, images, mentions of other people, headings, emphasis or table
cells split by a pipe.
"""

from __future__ import annotations

import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
_MENTION = re.compile(r"([@#])(?=[A-Za-z0-9_])")
_LINE_START = re.compile(r"^(?:[#+\-=~_]|(\d{1,9})([.)]))")


def one_line(text: Any, limit: int | None = None) -> str:
    """`text` on one line, whitespace collapsed, shortened to `limit` characters with an ellipsis."""
    flat = " ".join(_CONTROL.sub(" ", str(text)).split())
    if limit is not None and len(flat) > limit:
        return flat[: limit - 1].rstrip() + "…"
    return flat


def escape_markdown(text: Any, limit: int | None = None) -> str:
    """Untrusted text as one line of inert markdown, safe in a table cell: no HTML, links,
    images, code spans, emphasis, headings or list markers, and no cell-splitting pipes."""
    line = one_line(text, limit)
    return _escape_line(line)


def _escape_line(line: str) -> str:
    line = line.replace("\\", "\\\\")
    line = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for char in "|`[]*":
        line = line.replace(char, "\\" + char)
    # On GitHub `@name` notifies a person and `#12` links an issue; a zero-width space (as an
    # entity, so it survives copying) after the sign keeps the text and drops the effect.
    line = _MENTION.sub(lambda m: m[1] + "&#8203;", line)
    return _LINE_START.sub(lambda m: f"{m[1]}\\{m[2]}" if m[1] else "\\" + m[0], line)


def escape_markdown_block(text: Any) -> str:
    """Untrusted multi-line text as an inert block quote, its line breaks kept."""
    lines = [
        _escape_line(" ".join(_CONTROL.sub(" ", raw).split())) for raw in str(text).split("\n")
    ]
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        return "> (none)"
    out = []
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else ""
        out.append(f"> {line}\\" if line and following else f"> {line}".rstrip())
    return "\n".join(out)


def code_span(text: Any, table: bool = False) -> str:
    """Text as inline code, with a fence longer than any backtick run inside it."""
    line = one_line(text)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", line)), default=0) + 1)
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    if table:  # GFM splits cells on a pipe even inside code; the escape is removed there
        line = line.replace("|", "\\|")
    return f"{fence}{pad}{line}{pad}{fence}"
