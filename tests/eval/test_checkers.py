"""Each checker's normal form (what majorities count) and verdict."""

from __future__ import annotations

import pytest

from freemad.eval.checkers import choice_letter, code_of, last_number, matches, normal_form


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("42", "42"),
        ("The answer is 42.", "42"),
        ("It is 42.0", "42"),
        ("1,000 apples, so 1,234", "1234"),
        ("-2.50", "-2.5"),
        ("\u22123", "-3"),
        ("3/4 of it", "0.75"),
        ("about 1e-3", "0.001"),
        ("x2 and H2O", None),
        ("first 7 then 9", "9"),
        ("no number here", None),
        ("0.5", "0.5"),
        ("-0", "0"),
    ],
)
def test_numeric_takes_the_last_number(text: str, number: str | None) -> None:
    assert last_number(text) == number


def test_numeric_verdicts_are_within_the_tolerance() -> None:
    assert matches("numeric", "42", "42")
    assert matches("numeric", "0.3333333", "0.333333333333333")  # relative 1e-6
    assert not matches("numeric", "0.3333", "0.333333333333333")
    assert matches("numeric", "0.0000000001", "0")  # absolute 1e-9 near zero
    assert not matches("numeric", None, "42")
    # Two answers that say the same number are one answer for a majority.
    assert normal_form("numeric", "42") == normal_form("numeric", "The answer is 42")


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("B", "B"),
        ("(C)", "C"),
        ("[D].", "D"),
        ("The answer is (C).", "C"),
        ("Answer: b", None),  # a letter is a capital
        ("**Answer:** E", "E"),
        ("A good case. The correct option is D", "D"),
        ("I considered A and B.\nAnswer: C\nsince ...", "C"),
        ("so \\boxed{B}", "B"),
        ("B) 42, because", "B"),
        ("A. the first", "A"),
        ("Reasoning...\n\nE", "E"),
        ("All of them are fine", None),
        ("I think so", None),
    ],
)
def test_choice_finds_the_option_letter(text: str, letter: str | None) -> None:
    assert choice_letter(text) == letter


def test_exact_normalises_whitespace_only() -> None:
    assert normal_form("exact", "  Paris \n") == "Paris"
    assert normal_form("exact", "New   York\tCity") == "New York City"
    assert normal_form("exact", "paris") != normal_form("exact", "Paris")
    assert normal_form("exact", "   ") is None


def test_code_is_the_fenced_code_without_trailing_space() -> None:
    text = "Here:\n```python\n\ndef f():   \n    return 1\n\n```\nDone."
    assert code_of(text) == "def f():\n    return 1"
    assert code_of("def f():\r\n    return 1\r\n") == "def f():\n    return 1"


def test_an_unknown_checker_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown checker"):
        normal_form("fuzzy", "x")
