"""The checkers beyond exact/numeric/choice-by-letter: math (sympy in a worker that is killed when
a comparison overruns), choice by option text, yes/no, normalised text; and a checker that crashes
making one item unscorable."""

from __future__ import annotations

import os
import time

import pytest

from freemad.eval.checkers import normal_form, option_by_text, yes_no
from freemad.eval.grading import Verdicts
from freemad.eval.items import Item
from freemad.eval.math_check import MathJudge, safe_for_sympy
from freemad.eval.math_text import last_boxed, math_normal, plain_expression

pytest.importorskip("sympy", reason="the math checker needs sympy (freemad[eval])")


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("so $\\boxed{\\dfrac{1}{2}}$.", "\\frac{1}{2}"),
        ("\\boxed{ \\left( 1, 2 \\right) }", "(1,2)"),
        ("first \\boxed{1} then \\boxed{\\frac{\\sqrt{3}}{2}}", "\\frac{\\sqrt{3}}{2}"),
        ("The answer is 30^\\circ.", "30"),
        ("\\boxed{5\\text{ cm}}", "5cm"),
        ("", None),
    ],
)
def test_math_normal_form(text: str, normal: str | None) -> None:
    assert math_normal(text) == normal


def test_last_boxed_balances_braces_and_refuses_an_unclosed_box() -> None:
    assert last_boxed("\\boxed{\\frac{a}{b}} x") == "\\frac{a}{b}"
    assert last_boxed("\\boxed{\\frac{a}{b} x") is None


@pytest.mark.parametrize(
    ("answer", "expected", "right"),
    [
        ("\\boxed{0.5}", "\\frac{1}{2}", True),
        ("\\boxed{\\frac{2}{4}}", "\\frac12", True),
        ("\\boxed{\\sqrt{8}}", "2\\sqrt{2}", True),
        ("\\boxed{x=3}", "3", True),
        ("\\boxed{(1, 2)}", "(1,2)", True),
        ("\\boxed{1,000}", "1000", True),
        ("\\boxed{\\frac{1}{3}}", "\\frac{1}{2}", False),
        ("\\boxed{\\unknowncommand{2}}", "2", False),
    ],
)
def test_math_equivalence_by_sympy(answer: str, expected: str, right: bool) -> None:
    item = Item("m", "q", "math", answer=expected)
    verdicts = Verdicts(item, None)
    assert verdicts.right(item.normal(answer)) is right


def test_a_hostile_expression_is_killed_at_the_time_limit_and_the_worker_recovers() -> None:
    judge = MathJudge(time_limit=2.0)
    try:
        assert judge.equal("2", "4/2") is True  # warm: the worker has imported sympy
        baseline_started = time.monotonic()
        assert judge.equal("3", "6/2") is True
        baseline = time.monotonic() - baseline_started
        assert judge._process is not None
        worker = judge._process.pid
        started = time.monotonic()
        # sympy builds 9**(9**9), a 370-million-digit integer, and would not come back for long.
        assert judge.equal("9**9**9", "3") is None
        killed_after = time.monotonic() - started
        assert judge._process is None
        with pytest.raises(ProcessLookupError):  # killed, not left running
            os.kill(worker, 0)
        assert killed_after > baseline  # it waited for the limit, then gave up
        assert judge.equal("1/2", "0.5") is True  # a new worker answers the next comparison
    finally:
        judge.close()


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('touch /tmp/pwned')",
        "(1).__class__",
        "x.real",
        "exec(1)",
        "lambda: 1",
        "open(1)",
    ],
)
def test_python_never_reaches_parse_expr(text: str) -> None:
    assert not safe_for_sympy(text)
    assert MathJudge().equal(text, "1") is None  # refused before any worker starts


def test_plain_expression_refuses_unknown_commands_and_long_text() -> None:
    assert plain_expression("\\frac{\\sqrt{3}}{2}") == "((sqrt(3))/(2))"
    assert plain_expression("\\int_0^1 x dx") is None
    assert plain_expression("1+" * 300 + "1") is None


def test_choice_by_option_text() -> None:
    options = ("Mars", "Jupiter", "Venus")
    assert normal_form("choice", "Jupiter.", options) == "B"
    assert normal_form("choice", "I reason a lot.\nThe largest is jupiter", options) == "B"
    assert normal_form("choice", "Mars or Venus", options) is None  # two options named
    assert normal_form("choice", "The answer is (C)", options) == "C"  # a letter still wins
    assert option_by_text("Jupiter", ()) is None


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Yes.", "yes"),
        ("No, because fire is hot.", "no"),
        ("Let me think.\nAnswer: TRUE", "yes"),
        ("Thinking...\nfalse", "no"),
        ("It depends on the sky.", None),
        ("No doubt about it: the answer is yes", "yes"),
    ],
)
def test_yes_no(text: str, answer: str | None) -> None:
    assert yes_no(text) == answer


def test_normalized_text_drops_case_punctuation_and_articles() -> None:
    assert normal_form("normalized", "The  Eiffel Tower!") == "eiffel tower"
    assert normal_form("normalized", "an apple, a pear") == "apple pear"
    assert normal_form("normalized", "...") is None
