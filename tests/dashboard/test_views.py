"""The pure half: view data and pages from runs, with no disk or process in the way."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from freemad.agents.agent_port import CallResult, CallStatus
from freemad.cli.output import print_result
from freemad.dashboard.reading.sources import Artifact, RunData
from freemad.dashboard.views import debate_views, run_views, viewdata
from freemad.dashboard.views.html_pages import render_index, render_run
from freemad.debate import run_debate
from freemad.debate.debate_record import DebateResult
from freemad.github.comments import render_debate
from freemad.redact import Redactor
from tests.conftest import ScriptedAgent, generation, scripted_config
from tests.dashboard.runs import Runs, transcript_of
from tests.evolve.test_run_report import RunBuilder, realistic_run


@pytest.fixture(scope="module")
def transcript(real_runs: Runs) -> dict[str, Any]:
    return transcript_of(real_runs)


def test_the_explainer_adds_up_to_each_answers_score(transcript: dict[str, Any]) -> None:
    view = debate_views.debate_view(transcript)
    scores = transcript["scores"]
    assert [r["answer_id"] for r in view["ranking"]] == sorted(scores, key=lambda a: -scores[a])
    winner = view["ranking"][0]
    assert winner["winner"] and winner["answer_id"] == transcript["final_answer_id"]
    for row in view["ranking"]:
        expected = transcript["scores"][row["answer_id"]]
        assert float(row["explainer"][-1]["total"]) == pytest.approx(expected)
        assert row["score"] == viewdata.number(expected)
    # One row of scores per round, one column per answer.
    assert len(view["score_table"]["rows"]) == len(transcript["transcript"])
    assert view["score_table"]["answers"] == [r["answer_id"] for r in view["ranking"]]


def test_each_agent_shows_every_round_and_the_diff_when_it_changed(
    transcript: dict[str, Any],
) -> None:
    view = debate_views.debate_view(transcript)
    rounds = len(transcript["transcript"])
    changed = 0
    for agent in view["agents"]:
        assert len(agent["turns"]) == rounds
        recorded = transcript["agents"][agent["name"]]
        assert agent["tokens_in"] == viewdata.number(recorded["tokens"]["input"])
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
    diff = viewdata.diff_lines(before, after)
    assert len(diff["lines"]) == viewdata.DIFF_LINES and diff["cut"] > 0


def test_a_failed_debate_and_a_transcript_missing_everything_still_render() -> None:
    html = render_run(RunData("debate", "r1", transcript={"run_id": "r1"}))
    assert "No winner" in html and "<svg" not in html  # no empty chart
    failed = render_run(
        RunData("debate", "r2", transcript={"status": "failed", "error": "every agent timed out"})
    )
    assert "The debate failed" in failed and "every agent timed out" in failed
    assert "It recorded no round." in failed


def every_agent_failed() -> dict[str, Any]:
    """The transcript of a real debate in which no agent could answer (none is logged in)."""
    crash = CallResult(CallStatus.NOT_LOGGED_IN, detail="exit status 1: Please run /login")
    ports = {name: ScriptedAgent(name).script(crash) for name in ("x", "y", "z")}
    result = run_debate("q", scripted_config(ports), rounds=1, agents=ports)
    assert result.status == "failed"
    return result.model_dump(mode="json")


def test_a_failed_debate_says_it_failed_and_why_and_claims_no_winner() -> None:
    transcript = every_agent_failed()
    view = debate_views.debate_view(transcript)
    assert view["failed"] and view["winner"] is None
    assert view["failures"] == [
        {"round": "0", "agent": agent, "error": "not_logged_in: exit status 1: Please run /login"}
        for agent in ("x", "y", "z")
    ]
    html = render_run(RunData("debate", "f1", transcript=transcript))
    assert "<h2>The debate failed</h2>" in html
    assert f"<p>{transcript['error']}</p>" in html  # "only 0 of 3 agents answered in round 0; ..."
    assert "round 0, x: not_logged_in: exit status 1: Please run /login" in html
    assert "It recorded 1 round (0)" in html and 'id="rounds"' in html
    # No "Why it won", no winner box, no chart of scores nobody earned, no error as a repr.
    assert "Why it won" not in html and 'class="winner"' not in html and "<svg" not in html
    assert "{'cause'" not in html and "{&#39;cause&#39;" not in html


def test_a_failed_debate_with_answers_shows_them_without_a_winner() -> None:
    crash = CallResult(CallStatus.NOT_LOGGED_IN, detail="exit status 1: Please run /login")
    # Round 0 short of its quorum (two wanted, one answered): failed, with x's answer scored.
    ports = {
        "x": ScriptedAgent("x").script(generation("```python\nprint(1)\n```")),
        "y": ScriptedAgent("y").script(crash),
    }
    config = scripted_config(ports, deadlines={"min_agents": 2})
    result = run_debate("q", config, rounds=1, agents=ports)
    assert result.status == "failed" and result.scores
    html = render_run(RunData("debate", "f2", transcript=result.model_dump(mode="json")))
    assert "<h2>Answers</h2>" in html and "Why it won" not in html
    assert "<h2>Scores per round</h2>" in html  # round 0 scored an answer: a chart to draw
    for answer in result.scores:
        assert f"<code>{answer}</code>" in html


def test_pages_name_answers_by_the_ids_the_cli_and_the_comments_print(
    transcript: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    result = DebateResult.model_validate(transcript)
    comment = render_debate(result, None)
    print_result(result, Redactor([]), as_json=False)
    cli = capsys.readouterr().out
    page = render_run(RunData("debate", "r", transcript=transcript))
    shown = set(re.findall(r"\b[0-9a-f]{16}\b", comment)) | set(
        re.findall(r"\b[0-9a-f]{16}\b", cli)
    )
    assert shown == set(transcript["scores"])  # both print the answer ids, in full
    for answer in shown:
        assert f"<code>{answer}</code>" in page
    chart = debate_views.debate_view(transcript)["chart"]
    assert all(answer in chart for answer in shown)
    # No other naming scheme that the CLI and the comment would not know.
    assert not re.search(r"\bA[1-9]\b", page)


def test_fenced_code_in_answers_is_highlighted_code(transcript: dict[str, Any]) -> None:
    html = render_run(RunData("debate", "r", transcript=transcript))
    # No raw fences, but in the diffs between an agent's answers (a diff is of the raw text).
    assert "```" not in re.sub(r'<pre class="diff".*?</pre>', "", html, flags=re.S)
    assert '<pre class="code"><code><span class="k">def</span>' in html
    assert '<span class="nf">fibonacci</span>' in html


def test_mistyped_fields_do_not_break_a_page(transcript: dict[str, Any]) -> None:
    broken = copy.deepcopy(transcript)
    broken["scores"] = ["not", "a", "map"]
    broken["transcript"][0]["agents"] = "nobody"
    broken["agents"] = None
    broken["metrics"] = {"wall_time_ms": float("nan"), "calls": "many"}
    html = render_run(RunData("debate", "r3", transcript=broken))
    assert "<h2>Winner</h2>" in html


def test_the_evolve_view_marks_interventions_and_escalations_in_order() -> None:
    view = run_views.evolve_view("e1", realistic_run(), "https://forge/c/{commit}")
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


PATCH = (
    "diff --git a/src/parse.py b/src/parse.py\nindex 1111111..2222222 100644\n"
    "--- a/src/parse.py\n+++ b/src/parse.py\n@@ -1,2 +1,2 @@\n def parse(text):\n"
    "-    return slow(text)\n+    return fast(text)\n"
)


def with_diffs(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The events, each judged candidate after the seed naming its diff artifact "d<iteration>"."""
    return [
        (kind, {**data, "diff_artifact": f"d{data['iteration']}"})
        if kind == "candidate_judged" and data["iteration"]
        else (kind, data)
        for kind, data in events
    ]


def test_each_version_shows_its_diff_against_its_parent_and_its_timings() -> None:
    events = with_diffs(realistic_run())
    assert run_views.version_diff_ids(events) == ["d1", "d5"]  # the admitted ones only
    view = run_views.evolve_view("e1", events, diffs={"d1": PATCH.encode(), "d5": None})
    v0, v1, v2 = view["versions"]
    assert (v0["parent"], v0["diff"]) == (None, None) and "The seed" in v0["diff_note"]
    assert v1["parent"] == "v0" and v1["changed_paths"] == ["src/parse.py"]
    assert [line["kind"] for line in v1["diff"]["lines"]] == [
        *["hunk"] * 5,  # diff --git, index, ---, +++, @@
        "same",
        "del",
        "add",
    ]
    assert (
        v2["diff"] is None and v2["diff_note"] == "its diff was recorded, but its file is not here"
    )
    # Judge time is the stages' (two of 1.5 s each here); the iteration's is its whole time.
    assert (v1["judge_seconds"], v1["seconds"]) == ("3", "12")
    rows = [r for r in view["timeline"] if r["kind"] == "candidate"]
    assert [r["judge_seconds"] for r in rows] == ["3", "3", "3", "1.5", "1.5", "3", "3", "3"]
    assert view["judge_seconds"] == "21"
    older = run_views.evolve_view("e1", realistic_run())  # a run from before diffs were recorded
    assert older["versions"][1]["diff_note"] == "this run recorded no diff for it"


def test_the_evolve_page_reads_only_the_versions_diffs() -> None:
    def never() -> bytes:
        raise AssertionError("a rejected candidate's diff was read")

    artifacts = [
        Artifact("iteration-1.diff", len(PATCH), PATCH.encode, "d1"),
        Artifact("iteration-2.diff", 9, never, "d2"),
    ]
    events = with_diffs(realistic_run())
    html = render_run(RunData("evolve", "e1", events=events, artifacts=artifacts))
    assert '<pre class="diff" aria-label="Diff of v1 against v0">' in html
    assert '<span class="add">+    return fast(text)</span>' in html
    assert "No diff shown: its diff was recorded, but its file is not here." in html  # v2
    assert '<th scope="col" class="num">Judge (s)</th>' in html


def test_the_evolve_chart_turns_logarithmic_when_values_span_decades() -> None:
    run = RunBuilder(comparator=[{"component": "runtime_ms", "direction": "minimize"}])
    for iteration, runtime in enumerate((45.025, 0.282, 0.139, 0.007)):
        run.judged(iteration, admitted=True, runtime=runtime)
    view = run_views.evolve_view("e3", run.events)
    assert view["log_scale"] and "runtime_ms (lower is better) (log scale)" in view["chart"]
    html = render_run(RunData("evolve", "e3", events=run.events))
    assert "The scale is logarithmic" in html
    narrow = RunBuilder(comparator=[{"component": "runtime_ms", "direction": "minimize"}])
    for iteration, runtime in enumerate((45.0, 30.0, 1.0)):
        narrow.judged(iteration, admitted=True, runtime=runtime)
    view = run_views.evolve_view("e4", narrow.events)
    assert not view["log_scale"] and "log scale" not in view["chart"]


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
    view = run_views.task_view(
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


def test_the_index_shows_each_runs_outcome_duration_and_agents(
    transcript: dict[str, Any],
) -> None:
    debate = run_views.debate_facts(transcript)
    assert debate == {
        "outcome": f"winner {transcript['final_answer_id']}",
        "seconds": transcript["metrics"]["wall_time_ms"] / 1000,
        "agents": transcript["settings"]["agents"],
    }
    failed = run_views.debate_facts(every_agent_failed())
    assert failed["outcome"].startswith("only 0 of 3 agents answered") and failed["agents"] == [
        "x",
        "y",
        "z",
    ]
    task = run_views.task_facts(task_events(), [10.0, 20.0, 30.0, 100.0], "waiting_for_human")
    assert task == {"outcome": "at stage research", "seconds": 90.0, "agents": ["p", "r"]}
    assert run_views.task_facts(task_events(), [], "completed")["outcome"] == "every stage done"
    evolve = run_views.evolve_facts(realistic_run(), [5.0, 3605.0])
    assert evolve == {
        "outcome": "incumbent v2; stopped: max_iterations",
        "seconds": 3600.0,
        "agents": ["claude"],
    }
    rows = [
        {
            "kind": "debate",
            "run_id": "r1",
            "status": "completed",
            "title": "t",
            "started": 1.0,
            "updated": 2.0,
            **debate,
        },
        {
            "kind": "evolve",
            "run_id": "e1",
            "status": "stopped",
            "title": "g",
            "started": 1.0,
            "updated": 2.0,
            **evolve,
        },
        # an entry without facts (its run could not be read) still lists
        {
            "kind": "task",
            "run_id": "t1",
            "status": "paused",
            "title": "",
            "started": 1.0,
            "updated": 1.0,
        },
    ]
    html = render_index(rows)
    assert '<th scope="col">Outcome</th><th scope="col" class="num">Duration</th>' in html
    assert f"<td>winner {transcript['final_answer_id']}</td>" in html
    assert f"<td>{', '.join(transcript['settings']['agents'])}</td>" in html
    assert (
        '<td>incumbent v2; stopped: max_iterations</td><td class="num nowrap">1 h 0 min</td>'
        in html
    )
    assert '<td>-</td><td class="num nowrap">-</td><td>-</td>' in html
    assert 'data-search="r1 winner ' in html  # the search box finds a run by winner or agent


def test_rendering_leaves_its_input_as_it_was(transcript: dict[str, Any]) -> None:
    # The pages are rendered again from the same stored data on every visit.
    before = copy.deepcopy(transcript)
    html = render_run(RunData("debate", "r", transcript=transcript))
    assert transcript == before
    assert f"{transcript['final_answer_id']}" in html
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
    rows = copy.deepcopy(entries)
    assert (
        '<tr data-kind="debate" data-status="completed" data-search="r t">'
        "<td>1970-01-01 00:00</td><td>debate</td>"
        '<td><span class="badge s-completed">completed</span></td>'
        '<td>-</td><td class="num nowrap">-</td><td>-</td>'
        '<td><a href="runs/r.html">t</a></td></tr>'
    ) in render_index(rows)
    assert rows == entries
