"""Cleaning untrusted text at its edges: each hidden-character range's first and last code point
and its neighbours, the text kept beside a removed comment, and the pieces a removal joins."""

from __future__ import annotations

import pytest

from freemad.core.untrusted import clean, is_removed

# (last visible before, first removed, last removed, first visible after) per range; None where a
# neighbour is itself removed for another reason (a format character).
RANGES = [
    (0x034E, 0x034F, 0x034F, 0x0350),
    (0x115E, 0x115F, 0x1160, 0x1161),
    (0x17B3, 0x17B4, 0x17B5, 0x17B6),
    (0x180A, 0x180B, 0x180F, 0x1810),
    (None, 0x2065, 0x2065, None),  # U+2064 and U+2066 are format characters
    (0x3163, 0x3164, 0x3164, 0x3165),
    (0xFF9F, 0xFFA0, 0xFFA0, 0xFFA1),
    (0xFFEF, 0xFFF0, 0xFFF8, None),  # U+FFF9 is a format character
    (0x1BC9F, 0x1BCA0, 0x1BCA3, 0x1BCA4),
    (0x1D172, 0x1D173, 0x1D17A, 0x1D17B),
    (0xDFFFF, 0xE0000, 0xE0FFF, 0xE1000),
]


@pytest.mark.parametrize(("before", "low", "high", "after"), RANGES)
def test_each_hidden_range_removes_its_ends_and_keeps_its_neighbours(
    before: int | None, low: int, high: int, after: int | None
) -> None:
    assert is_removed(chr(low)) is True
    assert is_removed(chr(high)) is True
    assert clean(f"a{chr(low)}b{chr(high)}c") == "abc"
    for kept in (before, after):
        if kept is not None:
            assert is_removed(chr(kept)) is False
            assert clean(f"a{chr(kept)}b") == f"a{chr(kept)}b"


def test_the_format_neighbours_are_removed_as_format_characters() -> None:
    assert clean("a\u2064b\u2066c\ufff9d") == "abcd"


def test_tab_and_newline_are_kept_though_they_are_controls() -> None:
    assert is_removed("\t") is False
    assert is_removed("\n") is False
    assert is_removed("\x0b") is True
    assert clean("a\tb\nc\x00d\x7fe\x9ff") == "a\tb\ncdef"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("before<!-- hidden -->after", "beforeafter"),
        ("<!-- hidden -->after", "after"),
        ("before<!-- hidden -->", "before"),
        ("a<!--x-->b<!--y-->c", "abc"),
        ("a<!-->b", "ab"),
        ("a<!--->b", "ab"),
        ("a<!-- never closed", "a"),
        ("a<!-- x --->b", "ab"),
        ("a<!-- x -- y -->b", "ab"),
        ("a->b", "a->b"),
        ("a<!-b", "a<!-b"),
        ("a<-->b", "a<-->b"),
    ],
)
def test_the_text_beside_a_removed_comment_is_kept(raw: str, expected: str) -> None:
    assert clean(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # The kept text ends in "<", "<!" or "<!-" and joins what follows the comment.
        ("x<<!-- a -->!-- b -->y", "xy"),
        ("x<!<!-- a -->-- b -->y", "xy"),
        ("x<!-<!-- a -->- b -->y", "xy"),
        ("x<<!-- a -->!-->y", "xy"),
        ("x<!-<!-- a -->->y", "xy"),
        # Only once: "<" + "<!-- -->" + "!-" stays visible text.
        ("x<<!-- a -->!-y", "x<!-y"),
        # A join across two removals: "<" + "!" + "-- -->" .
        ("x<<!--a-->!<!--b-->-- c -->y", "xy"),
        # An invisible character between the pieces is gone before comments are looked for.
        ("x<\u200b!-- a -->y", "xy"),
    ],
)
def test_text_that_becomes_an_opener_once_a_comment_is_gone_is_removed(
    raw: str, expected: str
) -> None:
    assert clean(raw) == expected


def test_many_comments_between_kept_text_are_removed_in_one_linear_pass() -> None:
    # Each removal looks back at most three characters; joining every kept piece instead would
    # take many minutes here (and trip the suite's timeout).
    assert clean("a<!---->" * 40_000) == "a" * 40_000


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("\ufe0fa", "a"),
        ("a\ufe0f\ufe0f\ufe0eb", "a\ufe0fb"),
        ("a\ufe00b\ufe0fc", "a\ufe00b\ufe0fc"),
    ],
)
def test_variation_selectors_keep_one_per_character(raw: str, expected: str) -> None:
    assert clean(raw) == expected


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("abc", 3, "abc"),
        ("abcd", 3, "abc"),
        ("", 0, ""),
    ],
)
def test_a_limit_at_or_above_the_length_keeps_all(text: str, limit: int, expected: str) -> None:
    assert clean(text, limit=limit) == expected


def test_a_limit_below_the_length_ends_with_the_marker() -> None:
    text = "x" * 100
    marker = "\n[FREE-MAD cut this text to 60 of its 100 characters]"
    out = clean(text, limit=60)
    assert out == "x" * (60 - len(marker)) + marker
    assert len(out) == 60
    assert clean(text, limit=0) == ""
    assert clean("a\r\nb\rc\u2028d", limit=None) == "a\nb\nc\nd"


def test_a_removal_joins_only_the_last_characters_of_longer_kept_text() -> None:
    assert clean("before<<!-- a -->!-- b -->after") == "beforeafter"
    assert clean("before<!<!-- a -->-- b -->after") == "beforeafter"
    assert clean("before<!-<!-- a -->- b -->after") == "beforeafter"


def test_a_limit_the_marker_would_fill_exactly_cuts_without_it() -> None:
    # "\n[FREE-MAD cut this text to 53 of its 100 characters]" is 53 characters long.
    assert clean("x" * 100, limit=53) == "x" * 53
    assert clean("x" * 100, limit=54) == "x\n[FREE-MAD cut this text to 54 of its 100 characters]"
