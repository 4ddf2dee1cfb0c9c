"""A review debate: agents' reviews read as findings, a garbled one a per-agent error, the
score deciding which findings survive, and where each one goes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from freemad.core.review_findings import REVIEW_MARKER
from freemad.debate.review_debate import ReviewRefused, review_request, run_review
from freemad.debate.review_markdown import render_markdown
from freemad.wiring import ADAPTERS
from tests.conftest import (
    ScriptedAgent,
    generation,
    keep,
    make_config,
    recording_agent,
    revise,
    scripted_config,
)

DIFF = (Path(__file__).parent / "fixtures" / "review.diff").read_text()
TODO = "### app/service.py:5 [minor]\nA TODO is left in.\n"
EXCEPT = "### app/service.py:9 [major]\nBare except.\n```suggestion\n    except Exception:\n```\n"
OUTSIDE = "### app/service.py:40 [nit]\nThe module has no docstring.\n"


def test_the_request_carries_the_instructions_and_the_whole_small_diff():
    request = review_request(DIFF, scripted_config(["a"]), context="Fix loading\n\nPlease look.")
    assert request.requirement.startswith(REVIEW_MARKER)
    assert "Fix loading" in request.requirement
    assert "+    except:\n" in request.requirement
    assert request.fitted.left_out == ()


@pytest.mark.parametrize(
    ("diff", "says"),
    [
        ("", "empty"),
        ("just words\n", "not a unified diff"),
        (
            "diff --git a/x.png b/x.png\nindex 1..2 100644\nBinary files a/x.png and b/x.png differ\n",
            "only binary files",
        ),
    ],
)
def test_a_diff_with_nothing_to_review_is_refused_before_any_agent(diff, says):
    with pytest.raises(ReviewRefused, match=says):
        review_request(diff, scripted_config(["a"]))


def test_a_file_past_max_file_chars_is_summarised_and_the_review_says_so():
    big = "".join(f"+x{i} = {i}\n" for i in range(300))
    diff = (
        DIFF + f"diff --git a/big.py b/big.py\n--- a/big.py\n+++ b/big.py\n@@ -0,0 +1,300 @@\n{big}"
    )
    config = scripted_config(["a"], review={"max_file_chars": 2000})
    request = review_request(diff, config)
    assert [o.path for o in request.fitted.left_out] == ["big.py"]
    assert "x299" not in request.requirement and "big.py (added, +300 -0" in request.requirement
    agent = ScriptedAgent("a").script(generation("No findings."))
    result = run_review(request, config, rounds=0, agents={"a": agent})
    assert "big.py (added, +300 -0 lines in 1 hunk)" in render_markdown(result, config)


def test_the_score_decides_and_findings_are_placed_inline_or_in_the_body():
    config = scripted_config(["a", "b", "c"])
    a = ScriptedAgent("a").script(generation(TODO + EXCEPT), keep())
    b = ScriptedAgent("b").script(generation(OUTSIDE), revise(TODO + OUTSIDE))
    c = ScriptedAgent("c").script(generation("Looks fine. No findings."), revise(TODO))
    result = run_review(
        review_request(DIFF, config), config, rounds=1, agents={"a": a, "b": b, "c": c}
    )
    scores = {s.finding.place: s.score for s in result.score.findings}
    assert scores == {
        "app/service.py:5": pytest.approx(20 + 10 + 15 + 15),
        "app/service.py:9": pytest.approx(30),
        "app/service.py:40": pytest.approx(30),
    }
    inline, outside = result.placed()
    assert [s.finding.line for s in inline] == [5, 9]
    assert [s.finding.line for s in outside] == [40]
    assert result.score.clean_score == pytest.approx(20 - 12.5)
    assert result.event(config) == "COMMENT"
    text = render_markdown(result, config)
    assert "Findings not on a line of the diff" in text and "no docstring" in text
    assert "```suggestion\n    except Exception:\n```" in text


def test_a_garbled_review_is_that_agents_error_asked_once_more_never_a_crash():
    config = scripted_config(["a", "b"])
    a = ScriptedAgent("a").script(generation(TODO), keep())
    garbled = generation(
        "Looks risky, I would not merge it."
    )  # neither findings nor "No findings."
    b = ScriptedAgent("b").script(garbled, garbled)
    result = run_review(review_request(DIFF, config), config, rounds=1, agents={"a": a, "b": b})
    assert len(b.calls) == 2 and "could not be parsed" in b.calls[1].prompt.lower()
    assert "no finding" in result.errors["b"]
    assert [s.finding.place for s in result.surviving] == ["app/service.py:5"]
    assert [s.agent for s in result.score.stances] == ["a"]
    assert "failed: unparseable" in render_markdown(result, config)


def test_the_diff_reaches_agents_on_stdin_never_argv(tmp_path):
    log = tmp_path / "calls.jsonl"
    agent = recording_agent(tmp_path, log)
    config = make_config([{"id": "r", "cli_command": str(agent)}])
    hostile = DIFF.replace("# TODO: close the file", "# $(touch /tmp/pwned) `id` ; rm -rf ~")
    request = review_request(hostile, config)
    run_review(request, config, rounds=0, adapters=ADAPTERS)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls and all("$(touch /tmp/pwned)" in call["stdin"] for call in calls)
    assert not any("pwned" in word for call in calls for word in call["argv"])
    assert not Path("/tmp/pwned").exists()


def test_the_bundled_mock_agents_review_with_the_default_config(in_tmp):
    from freemad.config.discover import load

    config = load(None).config  # no file anywhere above tmp: the built-in mock agents
    config = config.model_copy(
        update={"output": config.output.model_copy(update={"save_transcript": False})}
    )
    result = run_review(review_request(DIFF, config), config, rounds=1, adapters=ADAPTERS)
    assert result.debate.status == "completed"
    survived = {s.finding.place: s.finding.severity for s in result.surviving}
    assert survived == {"app/service.py:5": "minor", "app/service.py:9": "major"}
    dropped = [s.finding.place for s in result.score.findings if not s.survived]
    assert dropped == ["app/service.py:6"]  # withdrawn by its only author in round 1


def test_request_changes_and_approve_only_when_configured():
    config = scripted_config(["a"], review={"request_changes_at": "major"})
    a = ScriptedAgent("a").script(generation(EXCEPT))
    result = run_review(review_request(DIFF, config), config, rounds=0, agents={"a": a})
    assert result.event(config) == "REQUEST_CHANGES"
    assert result.event(scripted_config(["a"])) == "COMMENT"
    clean = scripted_config(["a"], review={"approve_when_clean": True})
    a = ScriptedAgent("a").script(generation("No findings."))
    result = run_review(review_request(DIFF, clean), clean, rounds=0, agents={"a": a})
    assert result.event(clean) == "APPROVE"
    assert result.event(scripted_config(["a"])) == "COMMENT"


def test_a_huge_diff_keeps_the_review_within_githubs_size_limits():
    many = "".join(
        f"diff --git a/f{i}.py b/f{i}.py\n--- a/f{i}.py\n+++ b/f{i}.py\n@@ -0,0 +1 @@\n+x{i} = 1\n"
        for i in range(3000)
    )
    config = scripted_config(["a"], review={"max_diff_chars": 2000})
    request = review_request(many, config)
    assert len(request.fitted.left_out) > 2900
    long_body = "### f1.py:1 [minor]\n" + "word " * 20_000 + "\n"
    a = ScriptedAgent("a").script(generation(long_body))
    result = run_review(request, config, rounds=0, agents={"a": a})
    text = render_markdown(result, config)
    assert len(text) < 65_536
    assert "- and " in text and "more file(s)" in text and "more characters" in text
