"""Majorities and their tie-break, read from trajectories."""

from __future__ import annotations

from freemad.eval.methods import Trajectory, decisions, majority


def same(text: str | None) -> str | None:
    return text


def test_a_majority_counts_holders() -> None:
    held = ({"a": "X", "b": "X", "c": "Y"},)
    assert majority(held, 0, same) == "X"


def test_a_tie_goes_to_the_answer_of_the_first_agent_by_id_in_round_0() -> None:
    # Whatever order the agents were configured (or answered) in.
    held = ({"zed": "Z", "bob": "B", "amy": "A"},)
    assert majority(held, 0, same) == "A"
    held = ({"zed": "Z", "bob": "B", "amy": "A", "cat": "B", "dan": "Z"},)
    assert majority(held, 0, same) == "B"  # B and Z tie; bob sorts before dan and zed


def test_a_final_tie_goes_to_the_answer_held_first() -> None:
    # After round 2, N (amy, bob) and C (cat, dan) tie two to two: C was held from round 0, N
    # only from round 1, so C.
    held = (
        {"amy": "A", "bob": "B", "cat": "C", "dan": "D"},
        {"amy": "N", "bob": "B", "cat": "C", "dan": "D"},
        {"amy": "N", "bob": "N", "cat": "C", "dan": "C"},
    )
    assert majority(held, 2, same) == "C"
    # Between two answers first held in round 1, the one held by the first agent by id.
    held = (
        {"amy": "A", "bob": "B"},
        {"amy": "Q", "bob": "P"},
    )
    assert majority(held, 1, same) == "Q"


def test_an_answer_with_no_normal_form_does_not_vote() -> None:
    def digits(text: str | None) -> str | None:
        return text if text and text.isdigit() else None

    held = ({"a": "no idea", "b": "7", "c": "unsure"},)
    assert majority(held, 0, digits) == "7"
    assert majority(({"a": "none"},), 0, digits) is None
    assert majority((), 0, digits) is None


def test_decisions_read_every_method_from_one_trajectory() -> None:
    path = Trajectory(
        agents=("a", "b", "c"),
        held=({"a": "X", "b": "X", "c": "Y"}, {"a": "X", "b": "Y", "c": "Y"}),
        decision="X",
    )
    single, chosen = decisions(path, same)
    assert single == {"a": "X", "b": "X", "c": "Y"}
    assert chosen == {"majority_initial": "X", "majority_final": "Y", "freemad": "X"}
    # An agent that never answered has no single answer; a failed debate no decision.
    single, chosen = decisions(Trajectory(("a", "b"), ({"a": "X"},), None), same)
    assert single == {"a": "X", "b": None}
    assert chosen["freemad"] is None
