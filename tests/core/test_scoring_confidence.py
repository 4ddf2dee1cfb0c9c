"""The confidence tie-break: among answers tied for the top score, the highest validator
confidence wins, then the first proposed; scores and the tie itself never change."""

from __future__ import annotations

import pytest

from freemad.core.scoring import Move, score_moves, select_winner

ORDER = ["A", "B", "C"]


def test_the_tied_answer_of_the_highest_confidence_wins_though_proposed_later() -> None:
    scores = {"A": 30.0, "B": 30.0, "C": 10.0}
    confidence = {"A": 0.5, "B": 1.0, "C": 1.0}
    assert select_winner(scores, ORDER, tie_break="confidence", confidence=confidence) == (
        "B",
        ["A", "B"],
    )
    # The same scores with the paper's rule: the first proposed.
    assert select_winner(scores, ORDER, confidence=confidence) == ("A", ["A", "B"])


def test_an_answer_not_tied_for_the_top_never_wins_on_confidence() -> None:
    scores = {"A": 30.0, "B": 29.0}
    assert select_winner(scores, ["A", "B"], tie_break="confidence", confidence={"B": 1.0}) == (
        "A",
        ["A"],
    )


def test_equal_confidences_fall_back_to_the_first_proposed() -> None:
    scores = {"A": 5.0, "B": 5.0, "C": 5.0}
    confidence = {"A": 0.5, "B": 1.0, "C": 1.0}
    assert select_winner(scores, ORDER, tie_break="confidence", confidence=confidence)[0] == "B"
    assert (
        select_winner(scores, ["C", "B", "A"], tie_break="confidence", confidence=confidence)[0]
        == "C"
    )


def test_without_confidences_the_first_proposed_wins() -> None:
    scores = {"A": 5.0, "B": 5.0}
    assert select_winner(scores, ["B", "A"], tie_break="confidence") == ("B", ["B", "A"])
    assert select_winner(scores, ["B", "A"], tie_break="confidence", confidence={}) == (
        "B",
        ["B", "A"],
    )


def test_an_answer_without_a_confidence_counts_zero() -> None:
    scores = {"A": 5.0, "B": 5.0}
    # None (no check applied) is below any confidence a check gave...
    assert (
        select_winner(
            scores, ["A", "B"], tie_break="confidence", confidence={"A": None, "B": 0.25}
        )[0]
        == "B"
    )
    assert (
        select_winner(scores, ["A", "B"], tie_break="confidence", confidence={"B": 0.25})[0] == "B"
    )
    # ...and level with a confidence of 0, where the first proposed wins.
    assert (
        select_winner(scores, ["B", "A"], tie_break="confidence", confidence={"A": None, "B": 0.0})[
            0
        ]
        == "B"
    )
    assert (
        select_winner(scores, ["A", "B"], tie_break="confidence", confidence={"A": None, "B": 0.0})[
            0
        ]
        == "A"
    )


def test_the_board_passes_confidences_through_and_keeps_its_scores() -> None:
    board = score_moves([Move(0, "x", "A"), Move(0, "y", "B")])
    before = board.raw
    assert board.winner(tie_break="confidence", confidence={"B": 1.0}) == ("B", ["A", "B"])
    assert board.winner(normalize=True, tie_break="confidence", confidence={"B": 1.0}) == (
        "B",
        ["A", "B"],
    )
    assert board.winner(confidence={"B": 1.0}) == ("A", ["A", "B"])
    assert board.raw == before


def test_an_unknown_tie_break_names_the_three_rules() -> None:
    with pytest.raises(ValueError, match="'deterministic', 'random' or 'confidence', got 'best'"):
        select_winner({"A": 1.0}, ["A"], tie_break="best")  # type: ignore[arg-type]
