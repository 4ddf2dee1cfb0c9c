"""Answer identity at its edges: signed fractions in \\boxed{}, tilde fences, info strings."""

from __future__ import annotations

import pytest

from freemad.core.answer_identity import (
    canonicalize,
    fence_closer,
    fence_info,
    fence_opener,
    fence_spans,
)


def final(text: str) -> str:
    return canonicalize(text, "final_answer")


def code(text: str) -> str:
    return canonicalize(text, "code")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"\boxed{-\frac{3}{4}}", "-3/4"),
        (r"\boxed{−\dfrac{3}{4}}", "-3/4"),
        (r"\boxed{-\tfrac{06}{08}}", "-6/8"),
        (r"\boxed{-\frac{0}{4}}", "0/4"),
        (r"\boxed{\frac{0}{4}}", "0/4"),
        (r"\boxed{-3/4}", "-3/4"),
        (r"\boxed{+3/4}", "3/4"),
        (r"\boxed{-007.50}", "-7.5"),
        (r"\boxed{$-12$}", "-12"),
        (r"\boxed{\textbf{-2}}", "-2"),
        (r"\fbox{-1,234}", "-1234"),
        (r"\boxed{-.5}", "-0.5"),
    ],
)
def test_a_signed_boxed_number_keeps_its_sign(text: str, expected: str) -> None:
    assert final(text) == expected


def test_a_negative_and_a_positive_boxed_fraction_are_different_answers() -> None:
    assert final(r"\boxed{-\frac{3}{4}}") != final(r"\boxed{\frac{3}{4}}")
    assert final(r"\boxed{-\frac{3}{4}}") == final("so the answer is -3/4")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("intro\n~~~\nx = 1\n~~~\noutro", "x = 1"),
        ("~~~~\nx = 1\n~~~\ny = 2\n~~~~", "x = 1\n~~~\ny = 2"),
        ("~~~\nx = 1\n```\ny = 2\n~~~", "x = 1\n```\ny = 2"),
        ("~~~\nx = 1\n~~~   \ny = 2", "x = 1"),
        ("```\nx = 1\n~~~\n```", "x = 1\n~~~"),
        ("   ~~~\n   x = 1\n  ~~~", "x = 1"),
    ],
)
def test_a_tilde_fence_closes_only_on_tildes_at_least_as_long(text: str, expected: str) -> None:
    assert code(text) == expected


def test_fence_closer_and_opener_on_tildes() -> None:
    assert fence_closer("~~~") == ("~", 3)
    assert fence_closer("   ~~~~ \t") == ("~", 4)
    assert fence_closer("    ~~~") is None
    assert fence_closer("~~") is None
    assert fence_closer("~~~ python") is None
    assert fence_opener("~~~ python") == ("~", 3, 0)
    assert fence_opener("  ~~~~") == ("~", 4, 2)


def test_a_backtick_in_a_backtick_fences_info_string_makes_it_inline_code() -> None:
    assert fence_opener("```py`thon") is None
    assert fence_opener("``` a ` b") is None
    assert fence_opener("```python") == ("`", 3, 0)
    # A tilde fence's info string may hold backticks.
    assert fence_opener("~~~ py`thon") == ("~", 3, 0)
    assert fence_info("~~~  py`thon  ") == "py`thon"
    assert fence_info("```python ") == "python"
    assert fence_info("not a fence") == ""
    assert code("```a`b\nx = 1\n```\ny = 2\n```") == "y = 2"


def test_require_close_drops_an_unclosed_fence() -> None:
    lines = ["~~~", "x", "```"]
    assert fence_spans(lines, require_close=True) == []
    assert fence_spans(lines, require_close=False) == [(0, 3, 0)]
    assert fence_spans(["~~~", "x", "~~~~"], require_close=True) == [(0, 2, 0)]
    assert fence_spans(["~~~~", "x", "~~~"], require_close=True) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The first \boxed or \fbox starts the scan: an unclosed later one does not hide it.
        (r"\boxed{7} then \boxed{8", "7"),
        (r"\fbox{7} then \fbox{8", "7"),
        (r"\fbox{x+1}", "x+1"),
        # A closing brace with nothing open is ignored.
        (r"\boxed{1}} and 2", "1"),
        # A blank box is no answer: the last number is.
        (r"so \boxed{ } 5", "5"),
        # Leading zeros go from both sides of a fraction, trailing ones stay.
        (r"\boxed{03/04}", "3/4"),
        (r"\boxed{030/040}", "30/40"),
        (r"\boxed{00/5}", "0/5"),
        (r"\boxed{5/040}", "5/40"),
        (r"\boxed{5/00}", "5/0"),
        # A zero fraction has no sign.
        (r"\boxed{-0/5}", "0/5"),
        (r"\boxed{X}", "X"),
        # A lone letter on the last line, blank lines after it aside.
        ("The options are listed.\n(B)\n\n", "B"),
    ],
)
def test_final_answer_edges(text: str, expected: str) -> None:
    assert final(text) == expected


def test_a_fence_body_loses_at_most_its_own_leading_spaces() -> None:
    assert code("   ~~~\n x = 1\n   ~~~") == "x = 1"
    assert code("   ~~~\n     x = 1\n   ~~~") == "  x = 1"


def test_an_unknown_identity_mode_lists_the_modes() -> None:
    with pytest.raises(ValueError) as caught:
        canonicalize("x", "nope")
    assert str(caught.value) == (
        "unknown identity mode 'nope'; expected one of: exact, whitespace, code, final_answer"
    )
