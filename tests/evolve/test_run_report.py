"""The evolve run report: markdown and score chart from hand-built events, escaped and deterministic."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from freemad.evolve.run_report import (
    escape_markdown,
    render_report,
    score_chart_svg,
    trajectory_rows,
)
from freemad.svg_chart import nice_ticks, tick_labels

SVG = "{http://www.w3.org/2000/svg}"
EVIL = "# heading <script>alert(1)</script></svg> | pipe ![x](http://e.vil/t.png)"

Event = tuple[str, dict[str, Any]]


def stage(
    name: str, ok: bool, reason: str = "", components: dict[str, float] | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "ok": ok,
        "components": components or {},
        "reason": reason,
        "exit_code": 0 if ok else 1,
        "timed_out": False,
        "seconds": 1.5,
    }


class RunBuilder:
    """Events of an evolve run as the runtime stores them (minus seq and time)."""

    def __init__(self, goal: str = "Make the parser faster", *, comparator: Any = None) -> None:
        self.events: list[Event] = []
        self.version = -1
        self.add(
            "run_created",
            goal=goal,
            goal_hash="g" * 64,
            judge_hash="j" * 64,
            seed_ref="main",
            seed_commit="0123456789abcdef0123456789abcdef01234567",
            branch="freemad/evolve/r1",
            variation="single_agent",
            gate=["tests_pass == 1"],
            comparator=comparator
            if comparator is not None
            else [
                {"component": "runtime_ms", "direction": "minimize", "epsilon": 1.0},
                {"component": "memory_mb", "direction": "minimize", "epsilon": 0.5},
            ],
        )

    def add(self, kind: str, **data: Any) -> RunBuilder:
        self.events.append((kind, data))
        return self

    def judged(
        self,
        iteration: int,
        *,
        admitted: bool,
        runtime: float | None,
        memory: float = 100.0,
        reason: str = "",
        summary: str = "a change",
        failed_stage: str = "tests",
    ) -> RunBuilder:
        agent = "seed" if iteration == 0 else "claude"
        self.add(
            "iteration_started",
            iteration=iteration,
            parent_version=max(self.version, 0),
            parent_commit="p" * 40,
            directives=[],
        )
        if iteration:
            self.add(
                "candidate_proposed", iteration=iteration, agent=agent, ok=True, summary=summary
            )
        if runtime is None:
            stages = [stage(failed_stage, False, reason or "exited with status 1")]
            measurement = {"ok": False, "components": {}, "failed_stage": failed_stage}
            measurement["reason"] = stages[0]["reason"]
            verdict_reason = f"stage {failed_stage} failed: {stages[0]['reason']}"
        else:
            values = {"tests_pass": 1.0, "runtime_ms": runtime, "memory_mb": memory}
            stages = [
                stage("tests", True, components={"tests_pass": 1.0}),
                stage("bench", True, components=values),
            ]
            measurement = {"ok": True, "components": values, "failed_stage": None, "reason": ""}
            verdict_reason = reason or f"runtime_ms {runtime!r} is not better"
        data: dict[str, Any] = {
            "iteration": iteration,
            "agent": agent,
            "tree": "t" * 40,
            "changed_paths": ["src/parse.py"],
            "stages": stages,
            "measurement": measurement,
            "signature": "" if runtime is not None else f"{failed_stage}: x",
            "verdict": {"admitted": admitted, "reason": verdict_reason},
            "protected": {},
            "seconds": 12.0,
        }
        if admitted:
            self.version += 1
            commit = f"{self.version:x}" * 40
            data.update(commit=commit, version=self.version)
            self.add("candidate_judged", **data)
            self.add(
                "version_admitted",
                iteration=iteration,
                version=self.version,
                commit=commit,
                components=measurement["components"],
            )
        else:
            self.add("candidate_judged", **data)
        return self


def realistic_run(text: str = "") -> list[Event]:
    """Baseline v0, two more versions, rejected and failed candidates, an abandoned iteration,
    an intervention, a question answered by a person, and a stop. `text` lands in every
    untrusted field."""
    run = RunBuilder(goal=f"Make the parser faster {text}".strip())
    run.judged(0, admitted=True, runtime=52.1, reason="baseline: every stage succeeded")
    run.judged(1, admitted=True, runtime=20.3, summary=f"cache tokens {text}", reason="better")
    run.judged(2, admitted=False, runtime=21.0, reason=f"runtime_ms worse {text}")
    run.judged(3, admitted=False, runtime=None, reason=f"exited with status 2 {text}")
    run.add("iteration_started", iteration=4, parent_version=1, parent_commit="p", directives=[])
    run.add("iteration_abandoned", iteration=4, reason=f"the worker crashed {text}")
    run.judged(4, admitted=False, runtime=None, failed_stage="bench")
    run.add(
        "intervention",
        after_iteration=4,
        detection="stall",
        directions=[f"try a lookup table {text}", "drop the regex"],
        error=None,
    )
    run.judged(5, admitted=True, runtime=12.75, memory=90.0, reason="runtime_ms better " * 20)
    run.judged(6, admitted=False, runtime=13.0)
    run.add("waiting_for_human", after_iteration=6, detection="loop", question=f"Go on? {text}")
    run.add("human_answer", text=f"yes, try SIMD {text}")
    run.judged(7, admitted=False, runtime=12.8)
    run.add("stopped", reason="max_iterations")
    return run.events


def svg_root(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # our own output, parsed to prove it well-formed


def points(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if (g.get("class") or "").split()[:1] == ["point"]]


def test_rendering_twice_gives_the_same_bytes() -> None:
    events = realistic_run()
    assert render_report("r1", events) == render_report("r1", list(events))


def test_every_judged_iteration_is_in_the_trajectory() -> None:
    rows = trajectory_rows(realistic_run())
    assert [r["iteration"] for r in rows] == list(range(8))
    assert [r["verdict"] for r in rows] == [
        "admitted v0",
        "admitted v1",
        "rejected",
        "failed: stage tests",
        "failed: stage bench",
        "admitted v2",
        "rejected",
        "rejected",
    ]
    assert [r["value"] for r in rows] == [52.1, 20.3, 21.0, None, None, 12.75, 13.0, 12.8]
    assert [r["version"] for r in rows] == [0, 1, None, None, None, 2, None, None]
    assert all("\n" not in r["reason"] and len(r["reason"]) <= 100 for r in rows)
    assert rows[5]["reason"].endswith("…")
    markdown, _ = render_report("r1", realistic_run())
    trajectory = markdown.split("## Trajectory")[1].split("## Interventions")[0]
    assert [line.split("|")[1].strip() for line in trajectory.splitlines()[4:12]] == [
        str(i) for i in range(8)
    ]


def test_the_report_shows_the_run() -> None:
    markdown, _ = render_report("r1", realistic_run(), svg_name="chart r1.svg")
    assert markdown.startswith("# Evolve run r1\n")
    assert "> Make the parser faster" in markdown
    assert "Status: **stopped** (stop reason: max\\_iterations)" not in markdown  # `_` kept
    assert "Status: **stopped** (stop reason: max_iterations)" in markdown
    assert "Seed: `0123456789ab` (main)" in markdown
    assert "| v0 | 0 | `000000000000` | 52.1 | 100 |" in markdown
    assert "| v1 | 1 | `111111111111` | 20.3 | 100 |" in markdown
    assert "| v2 | 5 | `222222222222` | 12.75 | 90 |" in markdown
    assert "![runtime\\_ms by iteration](chart%20r1.svg)" not in markdown
    assert "![runtime_ms by iteration](chart%20r1.svg)" in markdown
    assert "- After iteration 4 (stall)\n  1. try a lookup table\n  2. drop the regex\n" in markdown
    assert "- After iteration 6 (loop), asked: Go on?\n  - Answered: yes, try SIMD\n" in markdown
    assert "- Iteration 4: the worker crashed\n" in markdown
    assert "tests_pass == 1" in markdown
    assert "then memory\\_mb (lower is better, by more than 0.5)" not in markdown
    assert "then memory_mb (lower is better, by more than 0.5)" in markdown


def test_a_declined_question_and_a_failed_intervention_are_reported() -> None:
    run = RunBuilder()
    run.judged(0, admitted=True, runtime=5.0)
    run.add("intervention", after_iteration=0, detection="loop", directions=[], error="timeout")
    run.add("waiting_for_human", after_iteration=0, detection="loop", question="More?")
    run.add("human_declined")
    markdown, _ = render_report("r2", run.events)
    assert "the directions debate failed: timeout" in markdown
    assert "  - Declined; the run stopped.\n" in markdown
    assert "Status: **stopped** (stop reason: declined)" in markdown


def test_untrusted_text_is_neutralised_in_markdown() -> None:
    markdown, _ = render_report("r1", realistic_run(EVIL))
    assert "<script" not in markdown
    assert "</svg>" not in markdown
    assert "&lt;script&gt;" in markdown
    assert "![x]" not in markdown
    assert not any(line.startswith("#") and "heading" in line for line in markdown.splitlines())
    tables: list[list[int]] = [[]]
    for line in markdown.splitlines():  # every row of a table keeps the header's column count
        if line.startswith("|"):
            tables[-1].append(len(re.findall(r"(?<!\\)\|", line)))
        elif tables[-1]:
            tables.append([])
    assert [set(t) for t in tables if t] == [{6}, {7}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# title", "\\# title"),
        ("1. item", "1\\. item"),
        ("- item", "\\- item"),
        ("a | b", "a \\| b"),
        ("<b>x</b> & y", "&lt;b&gt;x&lt;/b&gt; &amp; y"),
        ("a\\|b", "a\\\\\\|b"),
        ("`code` [link](u) *em*", "\\`code\\` \\[link\\](u) \\*em\\*"),
        ("two\nlines\x00", "two lines"),
    ],
)
def test_escape_markdown(text: str, expected: str) -> None:
    assert escape_markdown(text) == expected


def test_untrusted_text_is_neutralised_in_the_svg() -> None:
    _, svg = render_report("r1", realistic_run(EVIL))
    root = svg_root(svg)
    assert not [e for e in root.iter() if e.tag.rpartition("}")[2].lower() == "script"]
    assert "<script" not in svg
    assert "heading" not in svg  # the goal never reaches the chart


def test_svg_is_accessible_and_self_contained() -> None:
    svg = score_chart_svg(realistic_run())
    root = svg_root(svg)
    assert root.get("role") == "img"
    ids = (root.get("aria-labelledby") or "").split()
    found = {e.get("id"): e for e in root.iter() if e.get("id")}
    assert [found[i].tag for i in ids] == [f"{SVG}title", f"{SVG}desc"]
    desc = found[ids[1]].text or ""
    assert desc.startswith(
        "runtime_ms by iteration (lower is better): v0 52.1 at 0, v1 20.3 at 1, v2 12.75 at 5;"
    )
    assert "href" not in svg and "url(" not in svg and "<style" not in svg


def test_svg_has_one_point_per_judged_iteration() -> None:
    events = realistic_run()
    root = svg_root(score_chart_svg(events))
    marks = points(root)
    assert [int(g.get("data-iteration") or -1) for g in marks] == list(range(8))
    kinds = [(g.get("class") or "").split()[1] for g in marks]
    assert (
        kinds
        == ["admitted", "admitted", "rejected", "failed", "failed", "admitted"] + ["rejected"] * 2
    )
    admitted = [g for g in marks if "admitted" in (g.get("class") or "")]
    assert [g.find(f"{SVG}text").text for g in admitted] == ["v0", "v1", "v2"]  # type: ignore[union-attr]
    assert all(
        g.find(f"{SVG}circle") is not None for g in marks if "failed" not in g.get("class", "")
    )
    assert all(g.find(f"{SVG}path") is not None for g in marks if "failed" in g.get("class", ""))
    assert len([p for p in root.iter(f"{SVG}path") if p.get("class") == "incumbent"]) == 1


def test_escalations_are_solid_red_lines_and_interventions_dashed() -> None:
    root = svg_root(score_chart_svg(realistic_run()))
    groups = [g for g in root.iter(f"{SVG}g") if "marker" in (g.get("class") or "")]
    lines = {g.get("class"): g.find(f"{SVG}line") for g in groups}
    human, supervisor = lines["marker escalation"], lines["marker intervention"]
    assert human is not None and supervisor is not None
    assert human.get("stroke") == "#D62728" and human.get("stroke-dasharray") is None
    assert supervisor.get("stroke-dasharray") and supervisor.get("stroke") != "#D62728"


def single_point(value: float) -> list[Event]:
    return RunBuilder().judged(0, admitted=True, runtime=value).events


@pytest.mark.parametrize(
    "events",
    [
        pytest.param(single_point(3.0), id="one point"),
        pytest.param(single_point(0.0), id="one point at zero"),
        pytest.param(
            RunBuilder()
            .judged(0, admitted=True, runtime=7.0)
            .judged(1, admitted=False, runtime=7.0)
            .judged(2, admitted=False, runtime=7.0)
            .events,
            id="flat",
        ),
        pytest.param(
            RunBuilder()
            .judged(0, admitted=True, runtime=-3.5)
            .judged(1, admitted=True, runtime=-40.25)
            .events,
            id="negative",
        ),
        pytest.param(
            RunBuilder()
            .judged(0, admitted=True, runtime=3.2e12)
            .judged(1, admitted=True, runtime=1.1e12)
            .events,
            id="huge",
        ),
        pytest.param(single_point(1.7e308) + single_point(-1.7e308)[1:], id="extreme"),
        pytest.param(
            RunBuilder().judged(0, admitted=False, runtime=None).events, id="baseline failed"
        ),
        pytest.param(
            RunBuilder(comparator=[]).judged(0, admitted=True, runtime=1).events, id="no comparator"
        ),
    ],
)
def test_edge_cases_draw_well_formed_svg(events: list[Event]) -> None:
    svg = score_chart_svg(events)
    root = svg_root(svg)
    assert len(points(root)) == len(trajectory_rows(events))
    assert "nan" not in svg and "inf" not in svg
    markdown, again = render_report("edge", events)
    assert again == svg and markdown == render_report("edge", events)[0]


def test_no_judged_iteration_says_so() -> None:
    for events in ([], RunBuilder().events):
        root = svg_root(score_chart_svg(events))
        texts = [t.text for t in root.iter(f"{SVG}text")]
        assert texts == ["no measurements yet"]
        assert points(root) == []
    markdown, _ = render_report("empty", [])
    assert "Nothing judged yet." in markdown and "No version admitted yet." in markdown


@pytest.mark.parametrize(
    ("low", "high", "labels"),
    [
        (12.75, 52.1, ["10", "20", "30", "40", "50", "60"]),
        (0.0, 1.0, ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]),
        (7.0, 7.0, ["6.0", "6.5", "7.0", "7.5", "8.0"]),
        (-40.25, -3.5, ["-50", "-40", "-30", "-20", "-10", "0"]),
        (1.1e12, 3.2e12, ["1e+12", "2e+12", "3e+12", "4e+12"]),
        (
            1e6 + 0.1,
            1e6 + 0.3,
            ["1.0000000e+06", "1.0000001e+06", "1.0000002e+06", "1.0000003e+06"],
        ),
    ],
)
def test_ticks_are_round(low: float, high: float, labels: list[str]) -> None:
    ticks, step = nice_ticks(low, high)
    assert ticks[0] <= low and ticks[-1] >= high
    assert tick_labels(ticks, step) == labels


def test_a_multi_line_goal_is_an_inert_block_quote() -> None:
    goal = "# Faster\n\n    indented code\n---\n- item <b>\n1. first | second"
    markdown, _ = render_report("r3", RunBuilder(goal=goal).events)
    block = markdown.split("## Goal\n\n")[1].split("\n\n## Summary")[0]
    assert block.splitlines() == [
        "> \\# Faster",
        ">",
        "> indented code\\",
        "> \\---\\",
        "> \\- item &lt;b&gt;\\",
        "> 1\\. first \\| second",
    ]


def test_the_admission_rule_names_a_regression_limit() -> None:
    comparator = [
        {"component": "accuracy", "direction": "maximize", "epsilon": 0.0, "max_regress": 0.02}
    ]
    markdown, svg = render_report("r4", RunBuilder(comparator=comparator).events)
    assert "accuracy (higher is better)" in markdown
    assert "accuracy may not regress more than 0.02 from its best ever" in markdown
    assert "no measurements yet" in svg
