"""Runs as view data: plain dicts and lists the page templates show. Pure: no I/O, no clock.
Task and evolve runs and the index's facts here; debates in `debate_views`, the readers and
diffs they all use in `viewdata`.

Every value here is still untrusted text; the templates escape it (autoescape), so nothing in
this module builds HTML. A transcript or an event log may come from anywhere (an old version, a
hand-edited file): every field is read defensively, a missing or mistyped one shows as absent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from freemad.core import task_machine as task_core
from freemad.dashboard.run_records import RunData
from freemad.dashboard.views.debate_views import agent_names, error_text
from freemad.dashboard.views.viewdata import (
    as_list,
    as_map,
    as_number,
    as_text,
    number,
    patch_lines,
)
from freemad.evolve.run_report import report_data, score_chart_svg
from freemad.svg_chart import uses_log_scale

ARTIFACT_CHARS = 200_000
EVENT_CHARS = 4_000


# --- tasks ------------------------------------------------------------------------------------


def task_view(
    run_id: str,
    events: Sequence[tuple[str, Mapping[str, Any]]],
    times: Sequence[float],
    status: str,
    artifacts: Sequence[tuple[str, int, bytes | None]],
) -> dict[str, Any]:
    state = _folded_task(run_id, events)
    folded: Mapping[str, Any] = state or {}  # what the fold knows, or nothing
    when = [*times[: len(events)], *[0.0] * (len(events) - len(times))]  # 0: time unknown
    created = as_map(next((d for k, d in events if k == "task_created"), {}))
    task_type = as_text(folded.get("task_type") or created.get("task_type")) or "plan"
    current = as_text(folded.get("current_stage"))
    timeline = [
        entry
        for (kind, data), at in zip(events, when, strict=True)
        if (entry := _timeline_entry(kind, as_map(data), at)) is not None
    ]
    waiting = as_text(folded.get("status")) == "waiting_for_human"
    return {
        "run_id": run_id,
        "goal": as_text(folded.get("goal") or created.get("goal")),
        "task_type": task_type,
        "status": as_text(folded.get("status")) or status or "unknown",
        "current_stage": current,
        "question": folded.get("question") if waiting else None,
        "iterations": number(folded.get("iterations")),
        "iteration_cap": number(folded.get("max_total_iterations")),
        "roles": sorted(as_map(folded.get("roles")).items()),
        "branch": as_text(folded.get("branch")) or None,
        # ` --config PATH` when the task's config is not found without it (freemad.config.discover)
        "config_arg": as_text(created.get("config_arg")),
        "work_items": [as_map(w) for w in as_list(folded.get("work_items"))],
        "stages": _stages(task_type, current, done=status == "completed"),
        "timeline": timeline,
        "events": [
            {"seq": i, "time": at, "kind": kind, "data": _compact(data)}
            for i, ((kind, data), at) in enumerate(zip(events, when, strict=True))
        ],
        "artifacts": [_artifact(name, size, content) for name, size, content in artifacts],
        "unreadable": state is None and bool(events),
    }


def _folded_task(
    run_id: str, events: Sequence[tuple[str, Mapping[str, Any]]]
) -> dict[str, Any] | None:
    """The task as its events fold, or None when one is of a kind this version does not know."""
    try:
        return task_core.fold(run_id, events).view()
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _stages(task_type: str, current: str, *, done: bool) -> list[dict[str, str]]:
    """The task type's stages, each done, current or pending."""
    stages = list(task_core.WORKFLOWS.get(task_type, ()))

    def state_of(stage: str) -> str:
        if done or (current in stages and stages.index(stage) < stages.index(current)):
            return "done"
        return "current" if stage == current else "pending"

    return [{"name": stage, "state": state_of(stage)} for stage in stages]


def _timeline_entry(kind: str, data: Mapping[str, Any], when: float) -> dict[str, Any] | None:
    base = {"kind": kind, "time": when, "decision": None, "text": None, "findings": []}
    if kind == "agent_replied":
        response = as_map(data.get("response"))
        return {
            **base,
            "title": f"{as_text(data.get('stage'))}: {as_text(data.get('role'))} "
            f"({as_text(data.get('agent'))})",
            "decision": as_text(response.get("review_decision")) or None,
            "text": as_text(response.get("content")),
            "findings": [as_text(f) for f in as_list(response.get("findings"))],
        }
    if kind == "stage_advanced":
        return {**base, "title": f"{as_text(data.get('from'))} → {as_text(data.get('to'))}"}
    if kind == "stage_sent_back":
        return {
            **base,
            "title": f"sent back to {as_text(data.get('to'))}",
            "findings": [as_text(f) for f in as_list(data.get("feedback"))],
        }
    if kind == "waiting_for_human":
        return {**base, "title": "waiting for a person", "text": as_text(data.get("question"))}
    if kind == "agent_failed":
        return {
            **base,
            "title": f"{as_text(data.get('stage'))}: a call failed",
            "text": as_text(data.get("error") or data.get("reason")) or None,
        }
    if kind in _NOTED:
        text = data.get("text") or data.get("reason") or data.get("stage") or data.get("item_id")
        return {**base, "title": _NOTED[kind], "text": as_text(text) or None}
    return None


_NOTED = {
    "task_created": "task created",
    "arbitration": "reviewers disagree: the arbiter decides",
    "human_answer": "a person answered",
    "human_rejection": "a person rejected the stage",
    "human_approval": "a person approved the stage",
    "item_done": "work item done",
    "verification": "verification",
    "publish_approved": "publishing approved",
    "resumed": "resumed",
    "paused": "paused",
    "cancelled": "cancelled",
    "completed": "completed",
}


def _compact(data: Mapping[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= EVENT_CHARS else text[: EVENT_CHARS - 1] + "…"


def _artifact(name: str, size: int, content: bytes | None) -> dict[str, Any]:
    body: str | None
    note: str | None
    if content is None:
        body, note = None, "its file is missing"
    elif b"\x00" in content[:8192]:
        body, note = None, f"binary, {size} bytes"
    else:
        text = content.decode("utf-8", errors="replace")
        cut = len(text) > ARTIFACT_CHARS
        body = text[:ARTIFACT_CHARS]
        note = f"first {ARTIFACT_CHARS:,} characters of {len(text):,}" if cut else None
    return {"name": name, "size": size, "content": body, "note": note}


# --- evolve runs ------------------------------------------------------------------------------


def evolve_view(
    run_id: str,
    events: Sequence[tuple[str, Mapping[str, Any]]],
    commit_url: str | None = None,
    diffs: Mapping[str, bytes | None] | None = None,
) -> dict[str, Any]:
    """`commit_url` has `{commit}` where the full hash goes (a forge's commit page). `diffs` are
    the artifacts `version_diff_ids` names, by id: each admitted version's diff against its
    parent, as the run recorded it (None: its file is missing)."""
    data = report_data(run_id, events)
    judged = [as_map(d) for kind, d in events if kind == "candidate_judged"]
    for row, found in zip(data["rows"], judged, strict=True):
        row.update(_timing(found))
    admitted = {
        version: found
        for found in judged
        if as_map(found.get("verdict")).get("admitted")
        and isinstance(version := found.get("version"), int)
    }
    for version in data["versions"]:
        sha = version["sha"]
        version["url"] = commit_url.replace("{commit}", sha) if commit_url else None
        version.update(_version_change(version["version"], admitted.get(version["version"]), diffs))
    marks: dict[int, list[dict[str, Any]]] = {}
    for item in data["interventions"]:
        marks.setdefault(item["after_iteration"], []).append({"kind": "intervention", **item})
    for item in data["escalations"]:
        marks.setdefault(item["after_iteration"], []).append({"kind": "escalation", **item})
    timeline: list[dict[str, Any]] = []
    for row in data["rows"]:
        timeline.append({"kind": "candidate", **row})
        timeline += marks.pop(row["iteration"], [])
    timeline += [m for key in sorted(marks) for m in marks[key]]
    created = as_map(next((d for k, d in events if k == "run_created"), {}))
    judge_total = sum(_judge_seconds(found) or 0.0 for found in judged)
    return {
        **data,
        "timeline": timeline,
        "judge_seconds": number(judge_total) if judged else "-",
        "chart": score_chart_svg(events, scale="auto"),
        # as the chart decides it: its values are the rows' and every generation candidate's
        "log_scale": uses_log_scale(
            [r["value"] for r in [*data["rows"], *data["generations"]] if r["value"] is not None]
        ),
        "config_arg": as_text(created.get("config_arg")),
    }


def version_diff_ids(events: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The artifacts holding the admitted versions' diffs (what `evolve_view` shows of them)."""
    return [
        as_text(data.get("diff_artifact"))
        for kind, data in events
        if kind == "candidate_judged"
        and as_map(data.get("verdict")).get("admitted")
        and data.get("diff_artifact")
    ]


def _judge_seconds(judged: Mapping[str, Any]) -> float | None:
    """How long the judge's stages ran on a candidate, in seconds (None: none ran)."""
    times = [as_number(as_map(stage).get("seconds")) for stage in as_list(judged.get("stages"))]
    known = [t for t in times if t is not None]
    return sum(known) if known else None


def _timing(judged: Mapping[str, Any]) -> dict[str, str]:
    """A candidate's judge time (its stages) and its iteration's time (proposal and judging)."""
    return {
        "judge_seconds": number(_judge_seconds(judged)),
        "seconds": number(judged.get("seconds")),
    }


def _version_change(
    version: int, judged: Mapping[str, Any] | None, diffs: Mapping[str, bytes | None] | None
) -> dict[str, Any]:
    """What a version changed against its parent (the version before it), and its timings."""
    found = judged or {}
    artifact = as_text(found.get("diff_artifact"))
    content = (diffs or {}).get(artifact) if artifact else None
    if version == 0:
        note = "The seed as it was: the baseline every later version is measured against"
    elif not artifact:
        note = "this run recorded no diff for it"
    elif content is None:
        note = "its diff was recorded, but its file is not here"
    else:
        note = None
    return {
        "parent": None if version == 0 else f"v{version - 1}",
        "changed_paths": [as_text(path) for path in as_list(found.get("changed_paths"))],
        "diff": None if content is None else patch_lines(content.decode("utf-8", "replace")),
        "diff_note": note,
        **_timing(found),
    }


# --- the index --------------------------------------------------------------------------------


def facts_of(data: RunData) -> dict[str, Any]:
    """What the index shows of a run beside its listing: outcome, seconds it ran, agents."""
    if data.kind == "debate":
        return {} if data.transcript is None else debate_facts(data.transcript)
    if data.kind == "task":
        return task_facts(data.events, data.times, data.status)
    return evolve_facts(data.events, data.times)


def debate_facts(transcript: Mapping[str, Any]) -> dict[str, Any]:
    """What the index shows of a debate beside its status: its outcome (the winning answer's
    id, or why there is none), how long it ran and its agents."""
    winner = as_text(transcript.get("final_answer_id"))
    error = error_text(transcript.get("error"))
    wall = as_number(as_map(transcript.get("metrics")).get("wall_time_ms"))
    rounds = [as_map(r) for r in as_list(transcript.get("transcript"))]
    return {
        "outcome": f"winner {winner}" if winner else error or "no winner",
        "seconds": None if wall is None else wall / 1000,
        "agents": agent_names(transcript, rounds),
    }


def task_facts(
    events: Sequence[tuple[str, Mapping[str, Any]]], times: Sequence[float], status: str
) -> dict[str, Any]:
    """A task's outcome (its stage, or done), time from its first event to its last, agents."""
    folded = _folded_task("", events) or {}
    created = as_map(next((d for k, d in events if k == "task_created"), {}))
    agents = [str(a) for a in as_map(folded.get("roles") or created.get("roles")).values()]
    stage = as_text(folded.get("current_stage"))
    outcome = f"at stage {stage}" if stage else "-"
    return {
        "outcome": "every stage done" if status == "completed" else outcome,
        "seconds": _span(times),
        "agents": list(dict.fromkeys(agents)),
    }


def evolve_facts(
    events: Sequence[tuple[str, Mapping[str, Any]]], times: Sequence[float]
) -> dict[str, Any]:
    """An evolve run's outcome (its incumbent and why it stopped), time, and worker agents."""
    incumbent, reason = None, ""
    agents: list[str] = []
    for kind, data in events:
        found = as_map(data)
        if kind == "version_admitted" and isinstance(found.get("version"), int):
            incumbent = found["version"]
        elif kind == "stopped":
            reason = as_text(found.get("reason"))
        elif kind == "candidate_proposed" and found.get("agent"):
            agents.append(as_text(found["agent"]))
    outcome = "no version yet" if incumbent is None else f"incumbent v{incumbent}"
    return {
        "outcome": f"{outcome}; stopped: {reason}" if reason else outcome,
        "seconds": _span(times),
        "agents": list(dict.fromkeys(agents)),
    }


def _span(times: Sequence[float]) -> float | None:
    known = [t for t in (as_number(t) for t in times) if t is not None and t > 0]
    return max(known) - min(known) if len(known) > 1 else None
