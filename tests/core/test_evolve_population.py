"""The generation's admission rule on its own: the best admitted candidate, ties to the lower index,
never a rejected one, whatever order the candidates finished in; a winner must win again."""

from __future__ import annotations

import itertools

from freemad.core.evolve import Verdict
from freemad.core.evolve.population import Member, beats, confirm, outcome, signature, winner
from tests.evolve.judging import SPEED, judge_config

# runtime_ms, minimized, epsilon 1.0


def member(k: int, runtime: float, admitted: bool = True, ok: bool = True) -> Member:
    return Member(k, admitted, ok, {"tests_pass": 1.0, "runtime_ms": runtime})


def test_the_fastest_admitted_candidate_wins_in_any_order() -> None:
    members = [member(0, 40), member(1, 30), member(2, 10, admitted=False), member(3, 35)]
    for order in itertools.permutations(members):
        assert winner(order, SPEED.comparator) == 1


def test_a_tie_within_epsilon_goes_to_the_lower_index() -> None:
    assert winner([member(2, 30), member(1, 30.5), member(3, 29.6)], SPEED.comparator) == 1
    assert winner([member(2, 30), member(1, 31.5)], SPEED.comparator) == 2


def test_no_admitted_candidate_no_winner() -> None:
    rejected = [member(0, 10, admitted=False), member(1, 5, admitted=False, ok=False)]
    assert winner(rejected, SPEED.comparator) is None
    assert winner([], SPEED.comparator) is None


def test_the_comparator_is_lexicographic_across_candidates() -> None:
    order = judge_config(
        [
            {"component": "accuracy", "direction": "maximize", "epsilon": 0.01},
            {"component": "runtime_ms", "direction": "minimize"},
        ]
    ).comparator
    a = Member(0, True, True, {"accuracy": 0.9, "runtime_ms": 10})
    b = Member(1, True, True, {"accuracy": 0.95, "runtime_ms": 50})
    c = Member(2, True, True, {"accuracy": 0.955, "runtime_ms": 40})
    assert winner([a, b, c], order) == 2  # b and c tie on accuracy; c is faster


def test_confirmation_needs_every_rerun_to_win() -> None:
    assert confirm([Verdict(True, "x"), Verdict(True, "y")]).admitted
    lost = confirm([Verdict(True, "x"), Verdict(False, "runtime_ms 99.0 is worse")])
    assert not lost.admitted and lost.reason.startswith("confirmation run 2 did not win")


def test_outcomes_and_signatures() -> None:
    assert outcome(member(1, 30), 1, True) == "admitted"
    assert outcome(member(1, 30), 1, False) == "unconfirmed"
    assert outcome(member(0, 35), 1, True) == "beaten"
    assert outcome(member(0, 35, admitted=False), 1, True) == "rejected"
    assert outcome(member(0, 35, admitted=False, ok=False), None, False) == "failed"
    assert signature(["tests: x", "tests: x"]) == "tests: x"
    assert signature(["tests: x", ""]) == ""


def test_one_admitted_candidate_wins_alone_and_a_rejected_one_never_does() -> None:
    assert winner([member(4, 90)], SPEED.comparator) == 4
    # The rejected candidate 0 is fastest and comes first: it must not become the best so far.
    assert winner([member(0, 1, admitted=False), member(1, 90)], SPEED.comparator) == 1
    assert winner([member(0, 90), member(1, 1, admitted=False)], SPEED.comparator) == 0


def test_a_later_candidate_must_be_better_beyond_epsilon_not_worse() -> None:
    assert winner([member(0, 30), member(1, 50)], SPEED.comparator) == 0
    assert winner([member(0, 30), member(1, 28.9)], SPEED.comparator) == 1
    assert winner([member(0, 30), member(1, 29)], SPEED.comparator) == 0  # exactly epsilon


def test_beats_is_better_beyond_epsilon_at_the_first_deciding_rung() -> None:
    comparator = SPEED.comparator
    assert beats({"runtime_ms": 10.0}, {"runtime_ms": 20.0}, comparator)
    assert not beats({"runtime_ms": 20.0}, {"runtime_ms": 10.0}, comparator)
    assert not beats({"runtime_ms": 10.0}, {"runtime_ms": 10.5}, comparator)
    # No gate: a candidate without tests_pass still ranks on the comparator alone.
    assert beats({"runtime_ms": 1.0}, {"runtime_ms": 5.0, "tests_pass": 1.0}, comparator)


def test_confirmation_reasons_name_the_run_that_lost_and_the_count() -> None:
    assert confirm([Verdict(True, "x"), Verdict(True, "y")]) == Verdict(
        True, "confirmed by 2 more run(s)"
    )
    assert confirm([]) == Verdict(True, "confirmed by 0 more run(s)")
    assert confirm([Verdict(False, "slow"), Verdict(False, "slower")]) == Verdict(
        False, "confirmation run 1 did not win: slow"
    )
    assert confirm([Verdict(True, "x"), Verdict(False, "slow"), Verdict(True, "z")]) == Verdict(
        False, "confirmation run 2 did not win: slow"
    )


def test_every_outcome_of_a_member() -> None:
    beaten = member(0, 35)
    assert outcome(beaten, None, False) == "beaten"  # admitted, but no winner was confirmed
    assert outcome(member(2, 35, admitted=False, ok=True), 1, False) == "rejected"
    assert outcome(member(2, 35, admitted=False, ok=False), 1, True) == "failed"
    assert outcome(member(1, 35, admitted=False, ok=True), 1, True) == "admitted"
    assert outcome(member(0, 35), 0, False) == "unconfirmed"


def test_a_signature_only_when_every_candidate_failed_the_same_way() -> None:
    assert signature([]) == ""
    assert signature(["tests: x"]) == "tests: x"
    assert signature(["tests: x", "tests: y"]) == ""
    assert signature(["", ""]) == ""
    assert signature(["a", "a", "a"]) == "a"


def test_ranking_candidates_ignores_max_regress() -> None:
    """max_regress is the judge's check against the best ever, made on each candidate already;
    ranking two candidates compares them alone."""
    order = judge_config(
        [{"component": "runtime_ms", "direction": "minimize", "epsilon": 1.0, "max_regress": 0.5}]
    ).comparator
    assert beats({"runtime_ms": 10.0}, {"runtime_ms": 20.0}, order)
    assert winner([member(0, 40), member(1, 30)], order) == 1
