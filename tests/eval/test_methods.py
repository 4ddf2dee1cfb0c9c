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
    # Free-MAD over the moves: X 40, Y 20 after round 0; in round 1 (factor 1/2) a keeps X (+10),
    # b leaves X (-12.5) for Y (+15), c keeps Y (+10): X 37.5, Y 45. The decision the transcript
    # records (here given as X) is freemad_debate.
    assert chosen == {
        "majority_initial": "X",
        "majority_final": "Y",
        "freemad": "Y",
        "freemad_debate": "X",
    }
    # An agent that never answered has no single answer; a failed debate no decision.
    single, chosen = decisions(Trajectory(("a", "b"), ({"a": "X"},), None), same)
    assert single == {"a": "X", "b": None}
    assert chosen["freemad"] is None


def test_freemad_counts_answers_the_checker_finds_equal_as_one() -> None:
    from freemad.eval.checkers import last_number
    from freemad.eval.methods import freemad_by_identity

    # Round 0: 41 (a), "42" (b), "It is 42.0" (c); all keep. By text, three answers of 20 + 10
    # each: a tie, to a's 41. By number, 42 has 60 against 41's 30.
    held = ({"a": "41", "b": "42", "c": "It is 42.0"},) * 2
    path = Trajectory(("a", "b", "c"), held, decision="41")
    assert freemad_by_identity(path, last_number) == "42"
    assert freemad_by_identity(path, same) == "41"
    # The debate's weights are used: with no keep weight and a huge initial one, still 42.
    weighted = Trajectory(("a", "b", "c"), held, "41", weights=(100.0, 0.0, 0.0, 0.0))
    assert freemad_by_identity(weighted, last_number) == "42"
    # An answer with no normal form can win, and is then no answer.
    lone = Trajectory(("a",), ({"a": "no idea"},), decision="no idea")
    assert freemad_by_identity(lone, last_number) is None
