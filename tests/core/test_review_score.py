"""The Free-MAD score applied finding by finding: which findings of a review debate survive."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freemad.core.review_findings import Finding, finding_id
from freemad.core.review_score import CLEAN, score_review
from freemad.core.scoring import Weights

LOOP = Finding("app.py", 42, "major", "The loop never ends.")
LOOP_AGAIN = Finding("app.py", 42, "minor", "Infinite loop when n is 0.")
TYPO = Finding("readme.md", 3, "nit", "Typo.")
DEBUG = Finding("app.py", 7, "minor", "Debug print left in.")


def test_one_round_every_raised_finding_survives_at_w1():
    score = score_review([{"a": [LOOP], "b": [TYPO]}])
    assert [(s.finding.place, s.score, s.survived) for s in score.findings] == [
        ("app.py:42", 20.0, True),
        ("readme.md:3", 20.0, True),
    ]


def test_agents_flagging_one_line_hold_one_finding_shown_in_the_latest_words():
    score = score_review([{"a": [LOOP], "b": [LOOP_AGAIN]}])
    [only] = score.findings
    assert only.score == 40.0 and only.raised_by == ("a", "b")
    assert only.finding.body == LOOP.body  # the first holder's words in that round


def test_withdrawn_by_its_only_author_falls_kept_or_joined_stands():
    rounds = [
        {"a": [LOOP], "b": [DEBUG], "c": [TYPO]},
        # a keeps LOOP; b drops DEBUG and takes up LOOP; c keeps TYPO
        {"a": [LOOP], "b": [LOOP_AGAIN], "c": [TYPO]},
    ]
    score = score_review(rounds)
    by_place = {s.finding.place: s for s in score.findings}
    assert by_place["app.py:42"].score == pytest.approx(20 + 10 + 15)
    assert by_place["readme.md:3"].score == pytest.approx(30)
    assert by_place["app.py:7"].score == pytest.approx(20 - 12.5)
    assert [s.finding.place for s in score.surviving] == ["app.py:42", "readme.md:3"]
    assert by_place["app.py:42"].finding.severity == "major"  # round 1: a, its first holder
    assert by_place["app.py:42"].held_by == ("a", "b")
    stances = {s.agent: s for s in score.stances}
    assert (stances["b"].findings, stances["b"].surviving, stances["b"].changed) == (1, 1, True)
    assert stances["a"].changed is False


def test_an_early_finding_can_beat_the_last_rounds_majority():
    # Free-MAD's point: held in round 0 by two, dropped later, it still outscores what only
    # the last round agreed on.
    rounds = [{"a": [LOOP], "b": [LOOP]}, {"a": [LOOP], "b": [LOOP]}, {"a": [], "b": []}]
    score = score_review(rounds)
    loop = next(s for s in score.findings if s.finding.place == "app.py:42")
    assert loop.score == pytest.approx(40 + 20 - 2 * 25 / 3)
    assert loop.survived
    assert score.clean_score == pytest.approx(2 * 30 / 3)


def test_clean_reviews_are_a_stance_and_min_score_is_configurable():
    score = score_review([{"a": [], "b": [TYPO]}], min_score=25)
    assert score.clean_score == 20.0
    assert score.surviving == ()
    assert score.min_score == 25


def test_an_agent_joining_late_scores_its_first_review_as_round_zero():
    score = score_review([{"a": [LOOP]}, {"a": [LOOP], "b": [TYPO]}])
    typo = next(s for s in score.findings if s.finding.place == "readme.md:3")
    assert typo.score == 20.0


# --- properties -------------------------------------------------------------------------------

_FINDINGS = st.lists(st.sampled_from([LOOP, LOOP_AGAIN, TYPO, DEBUG]), max_size=3)
_ROUNDS = st.lists(
    st.fixed_dictionaries({"a": _FINDINGS, "b": _FINDINGS, "c": _FINDINGS}), min_size=1, max_size=4
)


@settings(max_examples=200, deadline=None)
@given(_ROUNDS)
def test_scores_follow_the_paper_rule_finding_by_finding(rounds):
    """Each finding's score is the Free-MAD sum of its own keeps, leaves and joins."""
    w = Weights()
    score = score_review(rounds, w)
    for scored in score.findings:
        expected, held = 0.0, {}
        for k, holdings in enumerate(rounds):
            f = 1 / (k + 1)
            for agent, findings in holdings.items():
                has = scored.id in {finding_id(x) for x in findings}
                had = held.get(agent)
                if had is None:
                    expected += w.initial * f * has
                elif had and has:
                    expected += w.keep * f
                elif had and not has:
                    expected -= w.change_penalty * f
                elif has:
                    expected += w.change_bonus * f
                held[agent] = has
        assert scored.score == pytest.approx(expected)
        assert scored.survived == (scored.score >= w.initial - 1e-9)
    assert {s.id for s in score.findings} == {
        finding_id(x) for r in rounds for fs in r.values() for x in fs
    }
    assert CLEAN not in {s.id for s in score.findings}


# --- what the score decides, exactly ------------------------------------------------------------


def test_normalized_divides_by_the_distinct_agents_that_touched_a_finding():
    # a raises, drops and takes up LOOP again; b keeps TYPO; c and d raise DEBUG together
    rounds = [
        {"a": [LOOP], "b": [TYPO], "c": [DEBUG], "d": [DEBUG]},
        {"a": [], "b": [TYPO], "c": [DEBUG], "d": [DEBUG]},
        {"a": [LOOP], "b": [TYPO], "c": [DEBUG], "d": [DEBUG]},
    ]
    raw = {s.finding.place: s.score for s in score_review(rounds).findings}
    normalized = {s.finding.place: s.score for s in score_review(rounds, normalize=True).findings}
    assert normalized == {
        "app.py:42": pytest.approx(raw["app.py:42"]),
        "readme.md:3": pytest.approx(raw["readme.md:3"]),
        "app.py:7": pytest.approx(raw["app.py:7"] / 2),
    }
    assert raw["app.py:42"] == pytest.approx(20 - 25 / 2 + 30 / 3)


def test_a_score_at_the_threshold_less_its_tolerance_survives_and_below_falls():
    [held] = score_review([{"a": [LOOP]}], min_score=20.0 + 1e-9).findings
    assert held.score == 20.0 and held.survived
    [short] = score_review([{"a": [LOOP]}], min_score=20.5).findings
    assert not short.survived


def test_findings_are_ordered_survivors_first_then_by_score_then_worst_first():
    rounds = [
        {"a": [TYPO, LOOP], "b": [DEBUG]},
        {"a": [TYPO, LOOP], "b": [LOOP]},
    ]
    score = score_review(rounds)
    assert [(s.finding.place, s.survived) for s in score.findings] == [
        ("app.py:42", True),
        ("readme.md:3", True),
        ("app.py:7", False),
    ]
    tied = score_review([{"a": [TYPO, DEBUG, LOOP]}])
    assert [s.finding.severity for s in tied.findings] == ["major", "minor", "nit"]
