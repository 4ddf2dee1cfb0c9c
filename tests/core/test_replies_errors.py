"""A malformed critique is refused with a reason the agent can act on: the exact texts."""

from __future__ import annotations

import pytest

from freemad.core.replies import Critique, Decision, ReplyFormatError, parse_critique


def refusal(reply: str) -> str:
    with pytest.raises(ReplyFormatError) as caught:
        parse_critique(reply)
    return str(caught.value)


def test_a_reply_that_does_not_start_with_a_decision() -> None:
    assert refusal("I think mine holds.\nDECISION: KEEP") == (
        "the first non-empty line must be 'DECISION: KEEP' or 'DECISION: REVISE'"
    )


@pytest.mark.parametrize("reply", ["DECISION:", "DECISION:\n\nREASONING: mine holds"])
def test_a_decision_without_a_value(reply: str) -> None:
    assert refusal(reply) == "the DECISION: line has no value; expected KEEP or REVISE"


def test_a_decision_on_the_next_line_counts() -> None:
    assert parse_critique("DECISION:\n\nkeep\nREASONING: fine") == Critique(
        Decision.KEEP, None, "fine"
    )


@pytest.mark.parametrize(
    ("reply", "shown"),
    [
        ("DECISION:\n123", "123"),
        ("DECISION: MAYBE", "MAYBE"),
        ("DECISION: " + "A" * 45, "A" * 40),
        ("DECISION:\n" + "1" * 45, "1" * 40),
    ],
)
def test_an_unknown_decision_is_echoed_in_forty_characters_at_most(reply: str, shown: str) -> None:
    assert refusal(reply) == (
        f"unknown decision {shown!r}; expected DECISION: KEEP or DECISION: REVISE"
    )


def test_revise_without_a_revised_solution() -> None:
    assert refusal("DECISION: REVISE\nREASONING: it is wrong") == (
        "DECISION: REVISE needs a non-empty REVISED_SOLUTION: section"
    )
