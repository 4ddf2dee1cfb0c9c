"""Where a reply's sections start and end: bold and heading markers, markers inside fences, which
REASONING: counts, and the exact refusals of a generation."""

from __future__ import annotations

import pytest

from freemad.core.replies import (
    Critique,
    Decision,
    Generation,
    ReplyFormatError,
    parse_critique,
    parse_generation,
)


@pytest.mark.parametrize(
    ("reply", "solution"),
    [
        ("**SOLUTION: 2*x*", "2*x*"),
        ("**SOLUTION: x **", "x"),
        ("**SOLUTION:** x", "x"),
        ("SOLUTION: x   ", "x"),
        ("**Solution**\nx", "x"),
        ("## Solution\nx", "x"),
    ],
)
def test_a_marker_in_bold_or_as_a_heading(reply: str, solution: str) -> None:
    assert parse_generation(reply + "\nREASONING: r") == Generation(solution, "r")


@pytest.mark.parametrize("line", ["Solution", "**Solution** first", "Solutions: x", "**Solution"])
def test_a_line_that_only_mentions_a_section_is_no_marker(line: str) -> None:
    assert parse_generation(f"{line}\nSOLUTION: y").solution == "y"


def test_an_enclosing_fence_is_unwrapped_only_when_its_closer_is_long_enough() -> None:
    assert parse_generation("````\nSOLUTION: x\n````").solution == "x"
    assert parse_generation("````\nSOLUTION: x\n```").solution == "x\n```"


def test_markers_inside_each_fenced_block_are_text() -> None:
    reply = "SOLUTION:\n```\na\n```\n```\nREASONING: inside\n```\nREASONING: real"
    assert parse_generation(reply) == Generation("```\na\n```\n```\nREASONING: inside\n```", "real")


def test_the_reasoning_is_the_one_after_the_solution() -> None:
    assert parse_generation("REASONING: early\nSOLUTION: x\nREASONING: late") == Generation(
        "x", "late"
    )
    assert parse_generation("REASONING: early\nSOLUTION:\nx = 1\nREASONING: late") == (
        Generation("x = 1", "late")
    )
    # Without one after the solution, the first one anywhere.
    assert parse_generation("REASONING: early\nSOLUTION: x") == Generation("x", "early")


def test_a_second_reasoning_marker_stays_inside_the_reasoning() -> None:
    assert parse_generation("SOLUTION: x\nREASONING: a\nREASONING: b") == Generation(
        "x", "a\nREASONING: b"
    )


def test_a_critiques_reasoning_is_the_one_after_its_revised_solution() -> None:
    reply = "DECISION: REVISE\nREASONING: early\nREVISED_SOLUTION: y\nREASONING: late"
    assert parse_critique(reply) == Critique(Decision.REVISE, "y", "late")


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("XSOLUTION: 5", "reply has no 'SOLUTION:' marker line"),
        ("\ufeffSOLUTION:\n\nREASONING: x", "the SOLUTION: section is empty"),
    ],
)
def test_a_generation_is_refused_with_a_reason(reply: str, message: str) -> None:
    with pytest.raises(ReplyFormatError) as caught:
        parse_generation(reply)
    assert str(caught.value) == message


def test_a_byte_order_mark_before_the_reply_is_ignored() -> None:
    assert parse_generation("\ufeffSOLUTION: 5") == Generation("5", "")


def test_a_mixed_bold_opening_closes_in_mirror_order() -> None:
    assert parse_generation("*_SOLUTION: x_*").solution == "x"


def test_bold_after_a_closed_bold_marker_is_part_of_the_section() -> None:
    assert parse_generation("**SOLUTION**: **bold** answer").solution == "**bold** answer"
