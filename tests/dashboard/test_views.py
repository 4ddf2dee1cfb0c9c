"""The pure half: view data and pages from runs, with no disk or process in the way."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from freemad.dashboard import views
from freemad.dashboard.render import render_index, render_run
from freemad.dashboard.sources import Artifact, RunData
from tests.dashboard.runs import Runs, transcript_of
from tests.evolve.test_report import RunBuilder, realistic_run


@pytest.fixture(scope="module")
def transcript(real_runs: Runs) -> dict[str, Any]:
    return transcript_of(real_runs)


def test_the_explainer_adds_up_to_each_answers_score(transcript: dict[str, Any]) -> None:
    view = views.debate_view(transcript)
    assert [r["label"] for r in view["ranking"]] == [
        f"A{i}" for i in range(1, len(view["ranking"]) + 1)
    ]
    winner = view["ranking"][0]
    assert winner["winner"] and winner["answer_id"] == transcript["final_answer_id"]
    for row in view["ranking"]:
        expected = transcript["scores"][row["answer_id"]]
        assert float(row["explainer"][-1]["total"]) == pytest.approx(expected)
        assert row["score"] == views.number(expected)
    # One row of scores per round, one column per answer.
    assert len(view["score_table"]["rows"]) == len(transcript["transcript"])
    assert view["score_table"]["labels"] == [r["label"] for r in view["ranking"]]


def test_each_agent_shows_every_round_and_the_diff_when_it_changed(
    transcript: dict[str, Any],
) -> None:
    view = views.debate_view(transcript)
    rounds = len(transcript["transcript"])
    changed = 0
    for agent in view["agents"]:
        assert len(agent["turns"]) == rounds
        recorded = transcript["agents"][agent["name"]]
        assert agent["tokens_in"] == views.number(recorded["tokens"]["input"])
        for turn in agent["turns"]:
            assert turn["duration_ms"] != "-" and turn["exit_status"] == "0"
            if turn["diff"]:
                changed += 1
                kinds = {line["kind"] for line in turn["diff"]["lines"]}
                assert {"add", "del"} <= kinds
    # In the mock debate one agent gives up its answer for another's: a real diff.
    assert changed >= 1


def test_a_diff_is_cut_with_a_note() -> None:
    before = "\n".join(f"line {i}" for i in range(1000))
    after = "\n".join(f"line {i}!" for i in range(1000))
    diff = views.diff_lines(before, after)
    assert len(diff["lines"]) == views.DIFF_LINES and diff["cut"] > 0


def test_a_failed_debate_and_a_transcript_missing_everything_still_render() -> None:
    html = render_run(RunData("debate", "r1", transcript={"run_id": "r1"}))
    assert "No winner" in html and "no scores recorded" in html
    failed = render_run(
        RunData("debate", "r2", transcript={"status": "failed", "error": "every agent timed out"})
    )
    assert "every agent timed out" in failed


def test_mistyped_fields_do_not_break_a_page(transcript: dict[str, Any]) -> None:
    broken = copy.deepcopy(transcript)
    broken["scores"] = ["not", "a", "map"]
    broken["transcript"][0]["agents"] = "nobody"
    broken["agents"] = None
    broken["metrics"] = {"wall_time_ms": float("nan"), "calls": "many"}
    html = render_run(RunData("debate", "r3", transcript=broken))
    assert "<h2>Winner</h2>" in html


def test_the_evolve_view_marks_interventions_and_escalations_in_order() -> None:
    view = views.evolve_view("e1", realistic_run(), "https://forge/c/{commit}")
    kinds = [
        (row["kind"], row.get("iteration", row.get("after_iteration"))) for row in view["timeline"]
    ]
    assert kinds.index(("intervention", 4)) == kinds.index(("candidate", 4)) + 1
    assert kinds.index(("escalation", 6)) == kinds.index(("candidate", 6)) + 1
    assert [v["url"] for v in view["versions"]] == [
        f"https://forge/c/{v['sha']}" for v in view["versions"]
    ]
    assert all(len(v["sha"]) == 40 for v in view["versions"])
    html = render_run(RunData("evolve", "e1", events=realistic_run()))
    assert 'class="escalation"' in html and "yes, try SIMD" in html
    assert 'class="intervention"' in html and "try a lookup table" in html


def test_an_evolve_run_without_judged_candidates_renders() -> None:
    html = render_run(RunData("evolve", "e2", events=RunBuilder().events))
    assert "No version admitted yet." in html and "no measurements yet" in html


def task_events(question: str = "Which database?") -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "task_created",
            {
                "task_type": "plan",
                "goal": "Plan it",
                "workspace_root": "/w",
                "branch": None,
                "roles": {"planner": "p", "reviewer": "r"},
                "max_total_iterations": 10,
            },
        ),
        (
            "agent_replied",
            {
                "stage": "intake",
                "role": "planner",
                "agent": "p",
                "response": {"content": "ok", "findings": []},
            },
        ),
        ("stage_advanced", {"from": "intake", "to": "research"}),
        ("waiting_for_human", {"stage": "research", "question": question}),
    ]


def test_the_task_view_has_the_timeline_the_question_and_the_artifacts() -> None:
    artifacts = [("notes.md", 5, b"hello"), ("blob.bin", 4, b"\x00\x01\x02\x03"), ("gone", 3, None)]
    view = views.task_view(
        "t1", task_events(), [1.0, 2.0, 3.0, 4.0], "waiting_for_human", artifacts
    )
    assert view["question"] == "Which database?"
    assert [s["state"] for s in view["stages"]] == [
        "done",
        "current",
        "pending",
        "pending",
        "pending",
    ]
    assert [e["kind"] for e in view["timeline"]] == [
        "task_created",
        "agent_replied",
        "stage_advanced",
        "waiting_for_human",
    ]
    assert [a["content"] for a in view["artifacts"]] == ["hello", None, None]
    assert view["artifacts"][1]["note"] == "binary, 4 bytes"
    assert view["artifacts"][2]["note"] == "its file is missing"


def test_a_task_with_events_this_version_does_not_know_shows_its_log() -> None:
    events = [*task_events(), ("from_the_future", {"x": 1})]
    html = render_run(
        RunData(
            "task",
            "t2",
            events=events,
            times=[1.0] * 5,
            artifacts=[Artifact("a.md", 1, lambda: b"a")],
        )
    )
    assert "kinds this version of FREE-MAD does not know" in html and "from_the_future" in html


def test_rendering_is_deterministic(transcript: dict[str, Any]) -> None:
    data = RunData("debate", "r", transcript=transcript)
    assert render_run(data) == render_run(data)
    entries = [
        {
            "kind": "debate",
            "run_id": "r",
            "status": "completed",
            "title": "t",
            "started": 1.0,
            "updated": 2.0,
        }
    ]
    assert render_index(entries) == render_index(entries)
