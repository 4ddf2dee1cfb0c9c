"""Tests for answer identity: canonical forms per mode and answer ids."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freemad.core.answer_identity import (
    IdentityMode,
    answer_id,
    canonicalize,
    fence_spans,
    split_lines,
)


def final(text: str) -> str:
    return canonicalize(text, IdentityMode.FINAL_ANSWER)


def same(a: str, b: str, mode: str) -> bool:
    return answer_id(canonicalize(a, mode)) == answer_id(canonicalize(b, mode))


def test_exact_keeps_text_unchanged() -> None:
    text = "  x = 1 \r\n\n\ty\t"
    assert canonicalize(text, "exact") == text
    assert not same("x", "x ", "exact")


def test_whitespace_normalisation() -> None:
    text = "def f():  \r\n\r\n    return 1\t\r   \n\tpass\n\n"
    assert canonicalize(text, "whitespace") == "def f():\n    return 1\n\tpass"
    assert same("a\nb", "a  \r\n\r\nb\n", "whitespace")
    # leading indentation is meaning in Python, so it must still tell answers apart
    assert not same("if x:\n    y()", "if x:\ny()", "whitespace")


def test_whitespace_only_and_empty_text() -> None:
    for mode in IdentityMode:
        if mode is not IdentityMode.EXACT:
            assert canonicalize(" \n\t\r\n  ", mode) == ""
            assert canonicalize("", mode) == ""


def test_code_takes_all_fenced_blocks() -> None:
    text = (
        "Here is my fix:\n```python\ndef f():\n    return 1   \n```\n"
        "and a test\n~~~\nassert f() == 1\n~~~\nThanks!"
    )
    assert canonicalize(text, "code") == "def f():\n    return 1\nassert f() == 1"


def test_code_ignores_prose_around_blocks() -> None:
    a = "Sure! Here you go:\n```py\nprint(1)\n```"
    b = "I rewrote it.\n\n```\nprint(1)\n```\nLet me know."
    assert same(a, b, "code")


def test_code_without_fences_uses_whole_text() -> None:
    assert canonicalize("x = 1  \n\n\ny = 2\n", "code") == "x = 1\ny = 2"


def test_code_fence_details() -> None:
    # an indented fence strips that indent from its content, as CommonMark does
    assert canonicalize("1. item\n   ```\n   a\n     b\n   ```", "code") == "a\n  b"
    # a longer fence can hold a shorter one
    assert canonicalize("````md\n```\ninner\n```\n````", "code") == "```\ninner\n```"
    # an unclosed fence runs to the end
    assert canonicalize("intro\n```python\nx = 1\n", "code") == "x = 1"
    # inline triple backticks are not a fence
    assert canonicalize("use ```x``` here", "code") == "use ```x``` here"
    # blank blocks fall back to the whole text so different prose stays different
    assert not same("fix A\n```\n```", "fix B\n```\n```", "code")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"so the result is $\boxed{42}$.", "42"),
        (r"\boxed{1,000}", "1000"),
        (r"\boxed{ 3.50 }", "3.5"),
        (r"\boxed{-0}", "0"),
        (r"\boxed{\frac{3}{4}}", "3/4"),
        (r"\boxed{\dfrac{3}{4}}", "3/4"),
        (r"\boxed{(B)}", "B"),
        (r"\boxed{\text{C}}", "C"),
        (r"\boxed{x + 1}", "x+1"),
        (r"first \boxed{1} then \boxed{2}", "2"),
        (r"\boxed{\{1, 2\}}", r"\{1,2\}"),
        (r"\boxed{\sqrt{2}}", r"\sqrt{2}"),
        (r"\boxed{2} and then \boxed{}", "2"),
        (r"\boxed{5} then \boxed{unclosed", "5"),
        (r"\fbox{7}", "7"),
    ],
)
def test_final_answer_boxed(text: str, expected: str) -> None:
    assert final(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Answer: B", "B"),
        ("The answer is (C).", "C"),
        ("the answer is (c)", "C"),
        ("**Final answer:** D", "D"),
        ("Final Answer: **A**", "A"),
        ("After checking, the correct option is E.", "E"),
        ("Answer: B\nWait, no. Answer: C", "C"),
        ("Option (A) has 3 errors and option (B) has 4.\n\n(B)", "B"),
        ("I compared 12 and 14.\n**(D)**", "D"),
        ("Answer: I think it is 5", "5"),
        ("To answer B's question, 7", "7"),
    ],
)
def test_final_answer_option_letter(text: str, expected: str) -> None:
    assert final(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is 42.", "42"),
        ("12 apples minus 5 is 7", "7"),
        ("Total: 1,234", "1234"),
        ("Total: 1,234,567.80 dollars", "1234567.8"),
        ("x = -5", "-5"),
        ("x = −5", "-5"),
        ("pages 3-5", "5"),
        ("it is 3/4 of the cake", "3/4"),
        ("0007", "7"),
        ("about .5", "0.5"),
        ("1.2.3", "1.2"),
        ("we need H2O", "we need H2O"),
        ("no numbers here", "no numbers here"),
    ],
)
def test_final_answer_last_number(text: str, expected: str) -> None:
    assert final(text) == expected


def test_final_answer_equivalences() -> None:
    assert same(r"\boxed{42}", "The answer is 42.", "final_answer")
    assert same("1,000", "1000", "final_answer")
    assert same("1000", "1000.0", "final_answer")
    assert same("3.50", "3.5", "final_answer")
    assert same(r"\boxed{\frac{3}{4}}", "so 3/4", "final_answer")
    assert same("Answer: (b)", "(B)", "final_answer")
    assert not same("3/4", "0.75", "final_answer")
    assert not same("Answer: B", "Answer: C", "final_answer")


def test_unknown_mode_rejected() -> None:
    with pytest.raises(ValueError, match="unknown identity mode 'fuzzy'"):
        canonicalize("x", "fuzzy")


def test_answer_id_is_sha256_prefix() -> None:
    assert answer_id("") == hashlib.sha256(b"").hexdigest()[:16]
    assert answer_id("é") == hashlib.sha256("é".encode()).hexdigest()[:16]
    assert len(answer_id("x")) == 16
    assert int(answer_id("x"), 16) >= 0


def test_invalid_surrogates_do_not_crash() -> None:
    text = "value \ud800 is 42 \udfff"
    for mode in IdentityMode:
        canonical = canonicalize(text, mode)
        assert len(answer_id(canonical)) == 16
    assert final(text) == "42"
    assert answer_id("\ud800") != answer_id("\ud801")


def test_megabyte_inputs_finish() -> None:
    huge = "x = 1  \n" * 150_000
    assert canonicalize(huge, "whitespace").count("\n") == 149_999
    assert canonicalize("```\n" + huge + "```", "code").startswith("x = 1\n")
    assert final(huge) == "1"
    assert final("{" * 1_000_000 + r"\boxed{" * 100_000 + "9}") == "9"
    assert final("```a\n" * 200_000).count("\n") == 199_999
    assert final("9" * 1_000_000) == "9" * 1_000_000
    assert final("Answer: " * 100_000 + "C") == "C"
    assert len(canonicalize("`" * 1_000_000, "code")) == 1_000_000


def test_fence_spans_require_close() -> None:
    lines = split_lines("```\na\n```\n```py\nb")
    assert fence_spans(lines, require_close=False) == [(0, 2, 0), (3, 5, 0)]
    assert fence_spans(lines, require_close=True) == [(0, 2, 0)]
    assert split_lines("a\r\nb\rc\nd\u2028e") == ["a", "b", "c", "d\u2028e"]


@given(st.text())
def test_whitespace_mode_is_idempotent(text: str) -> None:
    once = canonicalize(text, "whitespace")
    assert canonicalize(once, "whitespace") == once


@given(st.text(), st.sampled_from(list(IdentityMode)))
def test_every_mode_accepts_any_text(text: str, mode: IdentityMode) -> None:
    assert len(answer_id(canonicalize(text, mode))) == 16


@given(st.integers(-(10**12), 10**12))
def test_integer_spellings_agree(value: int) -> None:
    grouped = f"{value:,}"
    assert final(f"The answer is {grouped}.") == str(value)
    assert final(rf"\boxed{{{value}.000}}") == str(value)
