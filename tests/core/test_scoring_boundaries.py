"""The scoring rule's edges that a wrong operator or a dropped line would move: who counts as an
answer's contributor when they leave it, and exactly where a tie stops."""

from __future__ import annotations

import random

import pytest

from freemad.core.scoring import Action, Delta, Move, ScoreBoard, score_moves, select_winner


def test_an_agent_that_leaves_an_answer_counts_among_its_contributors() -> None:
    # b leaves X without having held it in a scored move: b still touched X.
    board = score_moves([Move(0, "a", "X"), Move(0, "c", "Y"), Move(1, "b", "Y", "X")])
    assert board.contributors == {"X": frozenset({"a", "b"}), "Y": frozenset({"b", "c"})}
    # X: 20 - 25/2 = 7.5 over two contributors; Y: 20 + 30/2 = 35 over two.
    assert board.raw == {"X": 7.5, "Y": 35.0}
    assert board.normalized() == {"X": 3.75, "Y": 17.5}


def test_leaving_an_answer_no_move_gave_makes_its_leaver_its_only_contributor() -> None:
    board = score_moves([Move(0, "a", "X"), Move(1, "b", "Y", "Z")])
    assert board.contributors == {
        "X": frozenset({"a"}),
        "Z": frozenset({"b"}),
        "Y": frozenset({"b"}),
    }
    assert board.raw == {"X": 20.0, "Z": -12.5, "Y": 15.0}
    assert board.normalized() == {"X": 20.0, "Z": -12.5, "Y": 15.0}
    assert board.winner(normalize=True) == ("X", ["X"])


def test_a_leave_and_a_join_by_several_agents_normalize_by_distinct_agents() -> None:
    moves = [
        Move(0, "a", "X"),
        Move(0, "b", "X"),
        Move(0, "c", "Y"),
        Move(1, "a", "Y", "X"),
        Move(1, "b", "X", "X"),
        Move(1, "c", "Y", "Y"),
    ]
    board = score_moves(moves)
    # X: 20 + 20 - 12.5 + 10 = 37.5 by {a, b}; Y: 20 + 15 + 10 = 45 by {a, c}.
    assert board.raw == {"X": 37.5, "Y": 45.0}
    assert board.normalized() == {"X": 18.75, "Y": 22.5}


def test_a_score_exactly_one_tolerance_below_the_best_ties() -> None:
    assert select_winner({"A": 0.0, "B": -1e-9}, ["A", "B"]) == ("A", ["A", "B"])
    assert select_winner({"B": -1e-9, "A": 0.0}, ["B", "A"]) == ("B", ["B", "A"])


def test_a_score_two_tolerances_below_the_best_does_not_tie() -> None:
    assert select_winner({"A": 0.0, "B": -2e-9}, ["A", "B"]) == ("A", ["A"])
    assert select_winner({"B": -2e-9, "A": 0.0}, ["B", "A"]) == ("A", ["A"])


def test_the_tolerance_scales_with_the_best_scores_magnitude_above_one() -> None:
    # 1e-9 of 1000 is 1e-6: half of it ties, twice it does not.
    assert select_winner({"A": 1000.0, "B": 1000.0 - 5e-7}, ["A", "B"])[1] == ["A", "B"]
    assert select_winner({"A": 1000.0, "B": 1000.0 - 2e-6}, ["A", "B"])[1] == ["A"]
    # The magnitude, not the sign: a best of -1000 scales the same way.
    assert select_winner({"A": -1000.0, "B": -1000.0 - 5e-7}, ["A", "B"])[1] == ["A", "B"]
    assert select_winner({"A": -1000.0, "B": -1000.0 - 2e-6}, ["A", "B"])[1] == ["A"]


def test_below_one_the_tolerance_does_not_shrink() -> None:
    assert select_winner({"A": 0.5, "B": 0.5 - 9e-10}, ["A", "B"])[1] == ["A", "B"]
    assert select_winner({"A": 0.5, "B": 0.5 - 2e-9}, ["A", "B"])[1] == ["A"]


def test_an_infinite_best_ties_only_with_itself() -> None:
    scores = {"A": float("inf"), "B": 1e308, "C": float("inf")}
    assert select_winner(scores, ["A", "B", "C"]) == ("A", ["A", "C"])


def test_the_explainer_names_each_moves_round_agent_action_factor_and_amount() -> None:
    board = score_moves([Move(0, "a", "X"), Move(0, "b", "Y"), Move(1, "a", "Y", "X")])
    board.apply(Move(1, "b", "Y", "Y"))
    assert board.explainers == {
        "X": [
            Delta(0, "a", Action.INITIAL, 1.0, 20.0),
            Delta(1, "a", Action.LEAVE, 0.5, -12.5),
        ],
        "Y": [
            Delta(0, "b", Action.INITIAL, 1.0, 20.0),
            Delta(1, "a", Action.JOIN, 0.5, 15.0),
            Delta(1, "b", Action.KEEP, 0.5, 10.0),
        ],
    }
    assert ScoreBoard().explainers == {}


def test_a_random_tie_break_draws_from_the_sorted_tie_with_the_seed() -> None:
    board = score_moves([Move(0, "b", "B"), Move(0, "a", "A")])
    assert board.winner() == ("B", ["B", "A"])
    # random.Random(1).choice(["A", "B"]) is "A"; (0) is "B".
    assert board.winner(tie_break="random", seed=1) == ("A", ["B", "A"])
    assert board.winner(tie_break="random", seed=0) == ("B", ["B", "A"])


def test_malformed_input_is_refused_with_a_reason() -> None:
    with pytest.raises(ValueError, match=r"^cannot select a winner from no scores$"):
        select_winner({}, [])
    with pytest.raises(ValueError, match=r"^a round-0 move has no previous answer$"):
        Move(0, "a", "X", "Y")
    with pytest.raises(ValueError, match=r"^a round-1 move needs the agent's previous answer$"):
        Move(1, "a", "X")


def test_a_random_tie_break_is_the_seeds_choice_among_many() -> None:
    # 200 tied answers: a tie-break that ignored the seed would pick this one 1 time in 200.
    ids = [f"a{i:03}" for i in range(200)]
    board = score_moves([Move(0, agent, agent) for agent in ids])
    expected = random.Random(7).choice(sorted(ids))
    assert board.winner(tie_break="random", seed=7) == (expected, ids)
