"""Answers as the pages show them: prose as text, fenced code blocks as highlighted code. Pure.

An agent's answer is markdown; its fenced blocks (```` ```python ... ``` ````) are found with the
rules answer identity uses (`freemad.core.answer_identity`: CommonMark's fences, an unclosed one running to
the end), so the page shows as code exactly what the `code` identity mode compares. Highlighting
is Pygments', done here on the server: the page loads nothing, and its colours are classes styled
by the site's own stylesheet (no inline style, which the pages' Content-Security-Policy forbids).

Everything stays text until the very end: a part's text is escaped (by Pygments, or by
`markupsafe.escape` when there is no lexer), never trusted; the language tag only picks a lexer
and is shown, escaped, by the template.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from freemad.core.answer_identity import fence_body, fence_info, fence_spans, split_lines

HIGHLIGHT_CHARS = 100_000  # a longer block is shown as plain (escaped) text: highlighting is linear
# but not cheap, and a page must render quickly whatever an agent wrote
_LANGUAGE = re.compile(r"[A-Za-z0-9_+#.-]{1,40}")
_FORMATTER = HtmlFormatter(nowrap=True)  # spans with classes only, every text escaped


@dataclass(frozen=True, slots=True)
class Part:
    """A run of prose (`language` None) or one fenced block (`language` its tag, or "")."""

    text: str
    language: str | None


def parts(text: object) -> list[Part]:
    """`text` split into prose and fenced code blocks, in order; blank prose is dropped."""
    lines = split_lines("" if text is None else str(text))
    found: list[Part] = []
    at = 0
    for start, end, indent in fence_spans(lines, require_close=False):
        found += _prose(lines[at:start])
        info = fence_info(lines[start]).split()
        found.append(
            Part("\n".join(fence_body(lines, start, end, indent)), info[0] if info else "")
        )
        at = end + 1
    return found + _prose(lines[at:])


def _prose(lines: list[str]) -> list[Part]:
    text = "\n".join(lines).strip("\n")
    return [Part(text, None)] if text.strip() else []


@functools.lru_cache(maxsize=64)
def _lexer(language: str) -> Lexer | None:
    if not _LANGUAGE.fullmatch(language):
        return None
    try:
        return get_lexer_by_name(language.lower(), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def highlighted(code: str, language: str | None) -> Markup:
    """`code` as HTML: Pygments' token spans where its language is known, else escaped text."""
    lexer = _lexer(language or "")
    if lexer is None or len(code) > HIGHLIGHT_CHARS:
        return escape(code)
    html = highlight(code, lexer, _FORMATTER)
    if not code.endswith("\n"):
        html = html.removesuffix("\n")  # some lexers end every text with a newline of their own
    # Pygments escapes every token's text (& < > " '); its markup is only <span class="...">.
    return Markup(html)  # noqa: S704
