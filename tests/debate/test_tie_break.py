"""`scoring.tie_break: confidence`: among answers tied for the top score the one of the highest
validator confidence wins, only when the option is on; scores never change, the transcript says
how the tie was broken, and everything that reads the decision back reads the same winner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from freemad.dashboard.reading.sources import RunData
from freemad.dashboard.views.html_pages import render_run
from freemad.debate import run_debate
from freemad.debate.debate_record import DebateResult
from freemad.debate.transcript import transcript_data, write_transcript
from freemad.eval.methods import decisions, trajectory
from freemad.eval.rescore import read_transcripts
from freemad.github.comments import render_debate
from freemad.redact import Redactor
from tests.conftest import ScriptedAgent, generation, keep, scripted_config

BROKEN = "```python\ndef area(r:\n    return 3.14 * r * r\n```"  # proposed first, does not parse
GOOD = "```python\ndef area(r):\n    return 3.14 * r * r\n```"


def debate(first: str, second: str, **sections: Any) -> DebateResult:
    """Two agents, each keeping its own answer: a tie for the top score, `first` proposed first."""
    ports = {
        "a": ScriptedAgent("a").script(generation(first), keep()),
        "b": ScriptedAgent("b").script(generation(second), keep()),
    }
    return run_debate(
        "area of a circle", scripted_config(ports, **sections), rounds=1, agents=ports
    )


def ident(result: DebateResult, text: str) -> str:
    return next(a for a, record in result.answers.items() if record.variants[0].text == text)


@pytest.fixture(scope="module")
def by_confidence() -> DebateResult:
    return debate(BROKEN, GOOD, scoring={"tie_break": "confidence"})


def test_confidence_breaks_the_tie_only_when_asked(by_confidence: DebateResult) -> None:
    default = debate(BROKEN, GOOD)
    broken, good = ident(default, BROKEN), ident(default, GOOD)
    assert default.tied_answers == [broken, good] == by_confidence.tied_answers
    # The paper's rule: first proposed, though it does not parse.
    assert default.final_answer_id == broken and default.tie_broken_by == "deterministic"
    assert default.answer_confidence == {broken: 0.5, good: 1.0}
    # With the option: the answer whose checks passed.
    assert by_confidence.final_answer_id == good
    assert by_confidence.final_solution == GOOD
    assert by_confidence.winning_agents == ["b"]
    assert by_confidence.tie_broken_by == "confidence"
    assert by_confidence.validator_confidence == 1.0
    # Scores are the same either way: only the choice among the tied changed.
    assert by_confidence.scores == default.scores
    assert by_confidence.raw_scores == default.raw_scores


def test_a_secret_lowers_confidence_enough_to_lose_a_tie() -> None:
    leaky = "Use the key AKIA" + "IOSFODNN7EXAMPLE"
    result = debate(leaky, "Use an IAM role.", scoring={"tie_break": "confidence"})
    assert result.final_solution == "Use an IAM role."
    assert result.tie_broken_by == "confidence" and result.flags == []


def test_with_validation_off_every_confidence_ties_and_the_first_proposed_wins() -> None:
    off = {"enable_syntax_check": False, "enable_sandbox": False, "secret_scan": False}
    result = debate(BROKEN, GOOD, scoring={"tie_break": "confidence"}, validation=off)
    assert result.final_solution == BROKEN
    assert result.tie_broken_by == "deterministic"
    assert result.answer_confidence == {} and result.validator_confidence is None


def test_equal_confidences_fall_back_to_the_first_proposed() -> None:
    result = debate(GOOD, GOOD.replace("3.14", "3.14159"), scoring={"tie_break": "confidence"})
    assert result.final_solution == GOOD
    assert result.tie_broken_by == "deterministic"
    assert set(result.answer_confidence.values()) == {1.0}


def test_no_tie_records_no_tie_break() -> None:
    ports = {
        "a": ScriptedAgent("a").script(generation(BROKEN), keep()),
        "b": ScriptedAgent("b").script(generation(BROKEN), keep()),
        "c": ScriptedAgent("c").script(generation(GOOD), keep()),
    }
    config = scripted_config(ports, scoring={"tie_break": "confidence"})
    result = run_debate("area", config, rounds=1, agents=ports)
    assert result.final_solution == BROKEN  # the higher score wins whatever the confidence
    assert result.tied_answers == [] and result.tie_broken_by is None


def test_the_cli_comment_and_page_say_how_the_tie_was_broken(
    by_confidence: DebateResult, tmp_path: Path
) -> None:
    comment = render_debate(by_confidence, None)
    assert "(tied for the top score; broken by confidence)" in comment
    data = transcript_data(by_confidence, Redactor([]))
    page = render_run(RunData("debate", by_confidence.run_id, transcript=data))
    assert 'the tie was broken by the rule "confidence"' in page.replace("&#34;", '"')
    assert "broken by" not in render_debate(
        debate(GOOD, GOOD, scoring={"tie_break": "confidence"}), None
    )


def test_what_reads_the_decision_back_reads_the_confidence_winner(
    by_confidence: DebateResult, tmp_path: Path
) -> None:
    output = scripted_config(["a"]).output.model_copy(
        update={"transcript_dir": str(tmp_path), "format": "json"}
    )
    path = write_transcript(by_confidence, output, Redactor([]))
    saved = json.loads(Path(path).read_text())
    assert saved["tie_broken_by"] == "confidence"
    assert saved["settings"]["tie_break"] == "confidence"
    [(_, read)] = read_transcripts(tmp_path)
    assert read.final_answer_id == by_confidence.final_answer_id
    _, methods = decisions(trajectory(read), lambda text: text)
    assert methods["freemad"] == GOOD
