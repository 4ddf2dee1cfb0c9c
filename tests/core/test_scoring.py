"""Tests for the Free-MAD decision rule, checked by hand and against a second implementation."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freemad.core.answer_identity import answer_id, canonicalize
from freemad.core.scoring import (
    Action,
    Move,
    ScoreBoard,
    Weights,
    score_moves,
    select_winner,
)


def trajectory(holders: list[dict[str, str]]) -> list[Move]:
    """Moves from a holders matrix: holders[k][agent] is the answer the agent holds in round k."""
    moves = []
    for k, row in enumerate(holders):
        for agent, answer in row.items():
            previous = None if k == 0 else holders[k - 1][agent]
            moves.append(Move(k, agent, answer, previous))
    return moves


def reference_scores(holders: list[dict[str, str]], w: tuple[Fraction, ...]) -> dict[str, Fraction]:
    """The rule restated per answer and round by counting keepers, leavers and joiners."""
    w1, w2, w3, w4 = w
    answers = {answer for row in holders for answer in row.values()}
    scores = {}
    for x in answers:
        total = w1 * sum(1 for answer in holders[0].values() if answer == x)
        for k in range(1, len(holders)):
            before, now = holders[k - 1], holders[k]
            keepers = sum(1 for a in now if before[a] == x and now[a] == x)
            leavers = sum(1 for a in now if before[a] == x and now[a] != x)
            joiners = sum(1 for a in now if before[a] != x and now[a] == x)
            total += Fraction(1, k + 1) * (w4 * keepers + w3 * joiners - w2 * leavers)
        scores[x] = total
    return scores


def random_holders(rng: random.Random) -> list[dict[str, str]]:
    agents = [f"agent-{i}" for i in range(rng.randint(1, 9))]
    answers = [f"answer-{i}" for i in range(rng.randint(1, 5))]
    stickiness = rng.random()
    holders = [{a: rng.choice(answers) for a in agents}]
    for _ in range(rng.randint(0, 7)):
        before = holders[-1]
        holders.append(
            {a: before[a] if rng.random() < stickiness else rng.choice(answers) for a in agents}
        )
    return holders


def assert_matches_reference(holders: list[dict[str, str]], weights: Weights) -> None:
    exact = tuple(Fraction(v) for v in weights.as_tuple())
    expected = reference_scores(holders, exact)
    board = score_moves(trajectory(holders), weights)
    assert set(board.raw) == set(expected)
    for answer, value in expected.items():
        assert math.isclose(board.raw[answer], float(value), rel_tol=1e-9, abs_tol=1e-9)


def test_paper_case_final_round_majority_loses() -> None:
    holders = [
        {"p": "a", "q": "a", "r": "a", "s": "b"},
        {"p": "a", "q": "a", "r": "a", "s": "b"},
        {"p": "b", "q": "b", "r": "a", "s": "b"},
    ]
    board = score_moves(trajectory(holders))
    # a: 3*20 + 3*20/2 - 2*25/3 + 20/3 = 60 + 30 - 10 = 80
    # b: 20 + 20/2 + 2*30/3 + 20/3 = 30 + 20 + 20/3 = 170/3
    assert math.isclose(board.raw["a"], 80.0)
    assert math.isclose(board.raw["b"], 170 / 3)
    assert sum(1 for answer in holders[-1].values() if answer == "b") == 3
    winner, tied = select_winner(board.raw, board.order)
    assert (winner, tied) == ("a", ["a"])


def test_round_zero_gives_initial_weight() -> None:
    board = score_moves([Move(0, "x", "a"), Move(0, "y", "a"), Move(0, "z", "b")])
    assert board.raw == {"a": 40.0, "b": 20.0}
    assert [d.action for d in board.explainers["a"]] == [Action.INITIAL, Action.INITIAL]


def test_switch_takes_from_old_and_gives_to_new() -> None:
    board = score_moves([Move(0, "x", "a"), Move(1, "x", "b", previous="a")])
    assert board.raw == {"a": 20.0 - 12.5, "b": 15.0}
    (initial, leave) = board.explainers["a"]
    assert (leave.action, leave.round, leave.factor, leave.amount) == (Action.LEAVE, 1, 0.5, -12.5)
    (join,) = board.explainers["b"]
    assert (join.action, join.agent, join.amount) == (Action.JOIN, "x", 15.0)
    assert initial.action is Action.INITIAL


def test_answer_abandoned_by_everyone_still_appears_even_negative() -> None:
    board = score_moves(
        [
            Move(1, "x", "b", previous="a"),
            Move(2, "x", "c", previous="b"),
        ]
    )
    assert board.raw["a"] == pytest.approx(-12.5)
    assert board.raw["b"] == pytest.approx(15.0 - 25 / 3)
    assert board.raw["c"] == pytest.approx(10.0)


def test_zero_score_answer_is_listed() -> None:
    weights = Weights(initial=20, change_penalty=20, change_bonus=20, keep=20)
    board = score_moves([Move(1, "x", "b", previous="a"), Move(1, "y", "a", previous="c")], weights)
    assert board.raw["a"] == 0.0


def test_revise_to_same_answer_id_is_a_keep() -> None:
    first = answer_id(canonicalize("def f():\n    return 1\n", "whitespace"))
    revised = answer_id(canonicalize("def f():   \r\n\r\n    return 1", "whitespace"))
    assert first == revised
    board = score_moves([Move(0, "x", first), Move(1, "x", revised, previous=first)])
    assert [d.action for d in board.explainers[first]] == [Action.INITIAL, Action.KEEP]
    assert board.raw == {first: 30.0}


def test_explainers_sum_to_raw_scores() -> None:
    rng = random.Random(7)
    for _ in range(50):
        board = score_moves(trajectory(random_holders(rng)))
        explainers = board.explainers
        assert set(explainers) == set(board.raw)
        for answer, deltas in explainers.items():
            assert abs(sum(d.amount for d in deltas) - board.raw[answer]) <= 1e-9


def test_explainers_are_copies_and_follow_application_order() -> None:
    board = score_moves([Move(0, "x", "a"), Move(0, "y", "a")])
    board.explainers["a"].clear()
    assert [d.agent for d in board.explainers["a"]] == ["x", "y"]
    board.apply(Move(1, "y", "a", previous="a"))
    assert [(d.agent, d.action) for d in board.explainers["a"]][-1] == ("y", Action.KEEP)


def test_contributors_and_normalized() -> None:
    board = score_moves(
        [
            Move(0, "x", "a"),
            Move(0, "y", "a"),
            Move(0, "z", "b"),
            Move(1, "x", "a", previous="a"),
            Move(1, "y", "b", previous="a"),
            Move(1, "z", "b", previous="b"),
        ]
    )
    assert board.contributors == {"a": frozenset({"x", "y"}), "b": frozenset({"y", "z"})}
    normalized = board.normalized()
    assert normalized["a"] == pytest.approx((40 + 10 - 12.5) / 2)
    assert normalized["b"] == pytest.approx((20 + 15 + 10) / 2)


def test_order_is_first_appearance_and_apply_all_returns_self() -> None:
    board = ScoreBoard()
    assert board.apply_all([Move(0, "x", "z"), Move(0, "y", "a")]) is board
    assert board.order == ("z", "a")


def test_scores_do_not_depend_on_move_order() -> None:
    rng = random.Random(11)
    for _ in range(30):
        moves = trajectory(random_holders(rng))
        shuffled = moves[:]
        rng.shuffle(shuffled)
        a, b = score_moves(moves).raw, score_moves(shuffled).raw
        assert a.keys() == b.keys()
        assert all(math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-9) for k in a)


def test_matches_independent_implementation_on_random_trajectories() -> None:
    rng = random.Random(2509_11035)
    for _ in range(400):
        weights = Weights.from_sequence([rng.choice([0, 1, 20, 25, 30, 2.5, 7.75]) for _ in "wxyz"])
        assert_matches_reference(random_holders(rng), weights)


def test_matches_independent_implementation_on_a_large_debate() -> None:
    rng = random.Random(3)
    agents = [f"a{i}" for i in range(100)]
    holders = [{a: f"ans{rng.randrange(6)}" for a in agents}]
    for _ in range(99):
        holders.append(
            {
                a: h if rng.random() < 0.7 else f"ans{rng.randrange(6)}"
                for a, h in holders[-1].items()
            }
        )
    assert len(trajectory(holders)) == 10_000
    assert_matches_reference(holders, Weights())


@settings(max_examples=200, deadline=None)
@given(
    holders=st.integers(1, 6).flatmap(
        lambda n: st.lists(
            st.lists(st.sampled_from("abcd"), min_size=n, max_size=n), min_size=1, max_size=6
        )
    ),
    raw_weights=st.lists(st.integers(-50, 50), min_size=4, max_size=4),
)
def test_matches_independent_implementation_property(
    holders: list[list[str]], raw_weights: list[int]
) -> None:
    matrix = [{f"agent{i}": answer for i, answer in enumerate(row)} for row in holders]
    assert_matches_reference(matrix, Weights.from_sequence(raw_weights))


def test_weights_from_sequence() -> None:
    assert Weights.from_sequence([20, 25, 30, 20]) == Weights()
    assert Weights.from_sequence((1, 2, 3, 4)).as_tuple() == (1.0, 2.0, 3.0, 4.0)
    for bad in ([20, 25, 30], [1, 2, 3, 4, 5], []):
        with pytest.raises(ValueError, match="exactly 4"):
            Weights.from_sequence(bad)
    with pytest.raises(ValueError, match="finite"):
        Weights.from_sequence([1, 2, math.nan, 4])


def test_move_validation() -> None:
    with pytest.raises(ValueError, match="previous"):
        Move(1, "x", "a")
    with pytest.raises(ValueError, match="round-0"):
        Move(0, "x", "a", previous="b")
    with pytest.raises(ValueError, match=">= 0"):
        Move(-1, "x", "a")


def test_select_winner_deterministic_tie_break() -> None:
    assert select_winner({"b": 10.0, "a": 10.0}, ["a", "b"]) == ("a", ["a", "b"])
    assert select_winner({"b": 10.0, "a": 10.0}, ["b", "a"]) == ("b", ["b", "a"])
    # ids absent from order go last, sorted
    assert select_winner({"z": 1.0, "y": 1.0, "q": 1.0}, ["q"]) == ("q", ["q", "y", "z"])
    assert select_winner({"z": 1.0, "y": 1.0}, []) == ("y", ["y", "z"])


def test_select_winner_tolerance_scales_with_magnitude() -> None:
    assert select_winner({"a": 10.0, "b": 10.0 + 1e-12}, ["a", "b"])[1] == ["a", "b"]
    assert select_winner({"a": 1e12, "b": 1e12 + 1.0}, ["a", "b"])[1] == ["a", "b"]
    assert select_winner({"a": 10.0, "b": 10.001}, ["a", "b"]) == ("b", ["b"])
    assert select_winner({"a": -5.0, "b": -7.0}, ["b", "a"]) == ("a", ["a"])
    # 0.1 + 0.2 != 0.3 in floats, and must still tie
    assert select_winner({"a": 0.1 + 0.2, "b": 0.3}, ["b", "a"])[0] == "b"


def test_select_winner_seeded_random_tie_break() -> None:
    scores = {f"ans{i}": 5.0 for i in range(6)} | {"low": 1.0}
    order = list(scores)
    for seed in range(20):
        first = select_winner(scores, order, tie_break="random", seed=seed)
        assert first == select_winner(scores, order, tie_break="random", seed=seed)
        assert first[0] == random.Random(seed).choice(sorted(first[1]))
        assert first[1] == [f"ans{i}" for i in range(6)]
    winners = {select_winner(scores, order, tie_break="random", seed=s)[0] for s in range(50)}
    assert len(winners) > 1
    assert select_winner({"a": 2.0, "b": 1.0}, ["b", "a"], tie_break="random", seed=1)[0] == "a"


def test_select_winner_errors() -> None:
    with pytest.raises(ValueError, match="no scores"):
        select_winner({}, [])
    with pytest.raises(ValueError, match="NaN"):
        select_winner({"a": math.nan}, ["a"])
    with pytest.raises(ValueError, match="tie_break"):
        select_winner({"a": 1.0}, ["a"], tie_break="coin")  # type: ignore[arg-type]


def test_board_winner_uses_raw_or_normalized() -> None:
    moves = [Move(0, "x", "a"), Move(0, "y", "a"), Move(0, "z", "b"), Move(0, "w", "c")]
    board = score_moves(moves, Weights(initial=10))
    assert board.winner() == ("a", ["a"])
    assert board.winner(normalize=True) == ("a", ["a", "b", "c"])
