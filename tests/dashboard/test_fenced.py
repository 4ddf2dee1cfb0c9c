"""Answers split into prose and fenced code, and the code highlighted on the server, escaped."""

from __future__ import annotations

import pytest

from freemad.core.answer_identity import IdentityMode, canonicalize
from freemad.dashboard.views.fenced_code import HIGHLIGHT_CHARS, Part, highlighted, parts


def test_prose_and_fenced_blocks_come_apart_in_order() -> None:
    text = "Use this:\n\n```python\ndef f():\n    return 1\n```\n\nor, in a shell,\n~~~ sh extra\nls\n~~~\n"
    assert parts(text) == [
        Part("Use this:", None),
        Part("def f():\n    return 1", "python"),
        Part("or, in a shell,", None),
        Part("ls", "sh"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no fence at all", [Part("no fence at all", None)]),
        ("", []),
        ("```\nbare\n```", [Part("bare", "")]),
        # CommonMark: an unclosed fence runs to the end; an indented fence loses its indent
        ("```js\nlet a = 1;", [Part("let a = 1;", "js")]),
        ("  ```py\n  x = 1\n    y\n  ```", [Part("x = 1\n  y", "py")]),
        # a longer fence is closed only by one at least as long
        ("````md\n```\ninner\n```\n````", [Part("```\ninner\n```", "md")]),
        # backticks in the info string: inline code, not a fence
        ("```a`b```", [Part("```a`b```", None)]),
    ],
)
def test_fences_follow_commonmark(text: str, expected: list[Part]) -> None:
    assert parts(text) == expected


def test_the_code_shown_is_what_the_code_identity_compares() -> None:
    text = "Here:\n```python\ndef f():   \n    return 1\n```\nDone."
    code = "\n".join(p.text for p in parts(text) if p.language is not None)
    assert canonicalize(code, IdentityMode.WHITESPACE) == canonicalize(text, IdentityMode.CODE)


def test_known_languages_are_highlighted_and_every_text_escaped() -> None:
    html = highlighted('if x < 1:\n    print("</code><script>alert(1)</script>")', "python")
    assert '<span class="k">if</span>' in html and '<span class="nb">print</span>' in html
    assert "<script>" not in html and "&lt;/code&gt;&lt;script&gt;" in html
    assert not html.endswith("\n")  # the block ends where the code does


@pytest.mark.parametrize(
    "language", ["", "no-such-language", "</code><script>alert(1)</script>", "python" * 20]
)
def test_an_unknown_or_hostile_language_shows_the_code_as_escaped_text(language: str) -> None:
    code = "a <b> & </pre>"
    assert highlighted(code, language) == "a &lt;b&gt; &amp; &lt;/pre&gt;"


def test_a_huge_block_is_shown_plain() -> None:
    code = "x = 1\n" * (HIGHLIGHT_CHARS // 6 + 1)
    assert highlighted(code, "python") == code  # nothing to escape in it, and no spans
