"""Runs as view data: plain dicts and lists the page templates show. Pure: no I/O, no clock.

Every value here is still untrusted text; the templates escape it (autoescape), so nothing in
this module builds HTML. A transcript or an event log may come from anywhere (an old version, a
hand-edited file): every field is read defensively, a missing or mistyped one shows as absent.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from freemad.core import tasks as task_core
from freemad.dashboard.charts import debate_chart_svg
from freemad.dashboard.records import RunData
from freemad.evolve.chart import format_number, uses_log_scale
from freemad.evolve.report import report_data, score_chart_svg

DIFF_LINES = 400  # a longer diff is cut, with a note
ARTIFACT_CHARS = 200_000
EVENT_CHARS = 4_000


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(float(value)) else None


def as_text(value: Any) -> str:
    return "" if value is None else str(value)


def number(value: Any) -> str:
    found = as_number(value)
    return "-" if found is None else format_number(found)


# --- debates ----------------------------------------------------------------------------------


def answer_order(transcript: Mapping[str, Any]) -> list[str]:
    """Every answer id the transcript names, the best final score first (then by id). Pages show
    answers by these ids, as the CLI's output and the GitHub comment do."""
    scores = as_map(transcript.get("scores"))
    ids = {str(a) for a in scores} | {str(a) for a in as_map(transcript.get("answers"))}
    for round_ in as_list(transcript.get("transcript")):
        for turn in as_map(as_map(round_).get("agents")).values():
            if as_map(turn).get("answer_id"):
                ids.add(str(turn["answer_id"]))
    return sorted(ids, key=lambda a: (-(as_number(scores.get(a)) or 0.0), a))


_FAILED = frozenset({"failed", "error"})  # statuses of a debate that ended without a result


def error_text(value: Any) -> str:
    """An error as a person reads it: a call's failure ({cause, detail}) as "cause: detail",
    another mapping as "key: value; ...", text as it is."""
    if isinstance(value, Mapping):
        if "cause" in value or "detail" in value:
            cause, detail = as_text(value.get("cause")), as_text(value.get("detail"))
            return ": ".join(part for part in (cause, detail) if part)
        return "; ".join(f"{key}: {error_text(item)}" for key, item in value.items())
    return as_text(value)


def debate_view(transcript: Mapping[str, Any]) -> dict[str, Any]:
    order = answer_order(transcript)
    rounds = [as_map(r) for r in as_list(transcript.get("transcript"))]
    winner = as_text(transcript.get("final_answer_id")) or None
    scores = as_map(transcript.get("scores"))
    answers = as_map(transcript.get("answers"))
    status = as_text(transcript.get("status")) or "unknown"
    error = error_text(transcript.get("error")) or None
    ranking = [
        {
            "answer_id": answer,
            "score": number(scores.get(answer)),
            "raw": number(as_map(transcript.get("raw_scores")).get(answer)),
            "winner": answer == winner,
            "origin": [
                str(a) for a in as_list(as_map(transcript.get("origin_agents")).get(answer))
            ],
            "holders": _final_holders(transcript, answer),
            "text": as_text(as_map(answers.get(answer)).get("canonical")),
            "explainer": _explainer(
                as_list(as_map(transcript.get("score_explainers")).get(answer))
            ),
            "validation": _validation(as_map(as_map(transcript.get("validation")).get(answer))),
        }
        for answer in order
    ]
    metrics = as_map(transcript.get("metrics"))
    agents = _agents(transcript, rounds)
    return {
        "run_id": as_text(transcript.get("run_id")),
        "requirement": as_text(transcript.get("requirement")),
        "status": status,
        "error": error,
        # A failed run says so and why, and claims no winner (docs/dashboards.md)
        "failed": status in _FAILED or (winner is None and error is not None),
        "failures": [
            {"round": turn["round"], "agent": agent["name"], "error": turn["error"]}
            for agent in agents
            for turn in agent["turns"]
            if turn["error"]
        ],
        "started_at": as_text(transcript.get("started_at")),
        "finished_at": as_text(transcript.get("finished_at")),
        "winner": winner,
        "winner_id": winner,  # the same id, by the name /api/runs/<id> readers know
        "final_solution": as_text(transcript.get("final_solution")),
        "winning_agents": [str(a) for a in as_list(transcript.get("winning_agents"))],
        "tied": [str(a) for a in as_list(transcript.get("tied_answers"))],
        "early_stop_reason": as_text(transcript.get("early_stop_reason")) or None,
        "early_stop_note": as_text(transcript.get("early_stop_note")) or None,
        "settings": _settings(as_map(transcript.get("settings"))),
        "tie_break": as_text(as_map(transcript.get("settings")).get("tie_break"))
        or "deterministic",
        "ranking": ranking,
        "rounds": [_round_row(r) for r in rounds],
        "score_table": _score_table(rounds, order),
        "agents": agents,
        "metrics": {
            "wall_time_ms": number(metrics.get("wall_time_ms")),
            "calls": number(metrics.get("calls")),
            "failures": number(metrics.get("failures")),
            "tokens_total": number(metrics.get("tokens_total")),
            "tokens_estimated": bool(metrics.get("tokens_estimated")),
            "cost_usd_total": number(metrics.get("cost_usd_total")),
        },
        "chart": debate_chart_svg(rounds, order, winner),
    }


def live_debate_view(live: Mapping[str, Any]) -> dict[str, Any]:
    """A debate in flight (`freemad.debate.live`'s view): each agent's state and elapsed time in
    each round so far, and the running score after each scored round."""
    rounds = [as_map(r) for r in as_list(live.get("rounds"))]
    scored = [r for r in rounds if isinstance(r.get("scores"), Mapping)]
    latest = as_map(scored[-1].get("scores")) if scored else {}
    standing = sorted(
        ((str(a), as_number(v) or 0.0) for a, v in latest.items()),
        key=lambda item: (-item[1], item[0]),
    )
    order = [answer for answer, _ in standing]
    status = as_text(live.get("status")) or "running"
    return {
        "live": True,
        "run_id": as_text(live.get("run_id")),
        "requirement": as_text(live.get("requirement")),
        "status": status,
        "abandoned": status == "abandoned",
        "agents": [str(a) for a in as_list(live.get("agents"))],
        "rounds_planned": as_number(live.get("rounds_planned")),
        "rounds": [
            {
                "round": number(r.get("round")),
                "type": as_text(r.get("type")),
                "scored": isinstance(r.get("scores"), Mapping),
                "deadline": "hard"
                if r.get("deadline_hit_hard")
                else "soft"
                if r.get("deadline_hit_soft")
                else "",
                "agents": [
                    {
                        "agent": as_text(a.get("agent")),
                        "state": as_text(a.get("state")) or "waiting",
                        "elapsed": number(a.get("elapsed_sec")),
                        "cause": as_text(a.get("cause")),
                        "action": as_text(a.get("action")),
                        "answer_id": as_text(a.get("answer_id")),
                    }
                    for a in (as_map(x) for x in as_list(r.get("agents")))
                ],
            }
            for r in rounds
        ],
        "standing": [{"answer_id": a, "score": number(v)} for a, v in standing],
        "chart": debate_chart_svg(scored, order, None) if scored else "",
    }


def _final_holders(transcript: Mapping[str, Any], answer: str) -> list[str]:
    history = as_list(transcript.get("holders_history"))
    last = as_map(history[-1]) if history else {}
    return sorted(str(agent) for agent, held in last.items() if held == answer)


def _explainer(deltas: list[Any]) -> list[dict[str, Any]]:
    rows, total = [], 0.0
    for delta in map(as_map, deltas):
        amount = as_number(delta.get("amount")) or 0.0
        total += amount
        rows.append(
            {
                "round": as_text(delta.get("round")),
                "agent": as_text(delta.get("agent")),
                "action": as_text(delta.get("action")),
                "factor": number(delta.get("factor")),
                "amount": ("+" if amount > 0 else "") + format_number(amount),
                "total": format_number(total),
            }
        )
    return rows


def _validation(found: Mapping[str, Any]) -> str | None:
    if not found:
        return None
    language = as_text(found.get("language")) or "code"
    ok = found.get("syntax_ok")
    return f"{language}: syntax {'ok' if ok else 'error' if ok is False else 'not checked'}"


def _settings(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    topology = as_map(settings.get("topology"))
    pairs = [
        ("rounds", settings.get("rounds")),
        ("agents", ", ".join(map(str, as_list(settings.get("agents"))))),
        ("topology", topology.get("type")),
        ("prompting", settings.get("prompt_mode")),
        ("weights", ", ".join(number(w) for w in as_list(settings.get("weights")))),
        ("tie break", settings.get("tie_break")),
    ]
    return [(name, as_text(value)) for name, value in pairs if value not in (None, "")]


def _round_row(round_: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "round": as_text(round_.get("round")),
        "type": as_text(round_.get("type")),
        "duration_ms": number(round_.get("duration_ms")),
        "deadline": "hard"
        if round_.get("deadline_hit_hard")
        else "soft"
        if round_.get("deadline_hit_soft")
        else None,
    }


def _score_table(rounds: list[Mapping[str, Any]], order: Sequence[str]) -> dict[str, Any]:
    """Scores per round, one column per answer; `scored` is whether any round recorded one."""
    return {
        "answers": list(order),
        "scored": any(as_map(r.get("scores")) for r in rounds),
        "rows": [
            {
                "round": as_text(r.get("round")),
                "cells": [number(as_map(r.get("scores")).get(a)) for a in order],
            }
            for r in rounds
        ],
    }


def agent_names(transcript: Mapping[str, Any], rounds: list[Mapping[str, Any]]) -> list[str]:
    """The debate's agents: as its settings list them, then any other that took a turn."""
    names: list[str] = [str(a) for a in as_list(as_map(transcript.get("settings")).get("agents"))]
    for round_ in rounds:
        names += [str(a) for a in as_map(round_.get("agents")) if str(a) not in names]
    return names


def _agents(transcript: Mapping[str, Any], rounds: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    totals = as_map(transcript.get("agents"))
    names = agent_names(transcript, rounds)
    names += [str(a) for a in totals if str(a) not in names]
    out = []
    for name in names:
        total = as_map(totals.get(name))
        tokens = as_map(total.get("tokens"))
        turns, previous = [], None
        for round_ in rounds:
            turn = as_map(as_map(round_.get("agents")).get(name))
            if not turn:
                continue
            solution = as_text(as_map(turn.get("response")).get("solution"))
            turns.append(_turn(turn, solution, previous))
            if turn.get("status") == "ok":
                previous = solution
        out.append(
            {
                "name": name,
                "calls": number(total.get("calls")),
                "failures": number(total.get("failures")),
                "duration_ms": number(total.get("duration_ms")),
                "tokens_in": number(tokens.get("input")),
                "tokens_out": number(tokens.get("output")),
                "estimated": bool(tokens.get("estimated")),
                "cost_usd": number(total.get("cost_usd")),
                "turns": turns,
            }
        )
    return out


def _turn(turn: Mapping[str, Any], solution: str, previous: str | None) -> dict[str, Any]:
    tokens = as_map(turn.get("tokens"))
    answer = as_text(turn.get("answer_id"))
    return {
        "round": as_text(turn.get("round")),
        "status": as_text(turn.get("status")) or "unknown",
        "action": as_text(turn.get("action")) or "-",
        "answer": answer or "-",
        "duration_ms": number(turn.get("duration_ms")),
        "tokens_in": number(tokens.get("input")),
        "tokens_out": number(tokens.get("output")),
        "estimated": bool(tokens.get("estimated")),
        "cost_usd": number(turn.get("cost_usd")),
        "exit_status": as_text(turn.get("exit_status")) or "-",
        "error": error_text(turn.get("error")) or None,
        "solution": solution,
        "reasoning": as_text(as_map(turn.get("response")).get("reasoning")),
        "diff": None
        if previous is None or previous == solution
        else diff_lines(previous, solution),
        "unchanged": previous is not None and previous == solution,
    }


_DIFF_KINDS = {"+": "add", "-": "del", "@": "hunk"}


def diff_lines(before: str, after: str) -> dict[str, Any]:
    """A unified diff as classed lines ("add", "del", "hunk", "same"), cut at DIFF_LINES."""
    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2))
    body = diff[2:]  # past the "---" and "+++" lines that name the two texts
    return _cut([{"kind": _DIFF_KINDS.get(line[:1], "same"), "text": line} for line in body])


def patch_lines(patch: str) -> dict[str, Any]:
    """A git diff as classed lines: as `diff_lines`, and each file's header lines ("diff --git",
    "index", "---", "+++", ...) as "hunk"."""
    lines, header = [], False
    for line in patch.splitlines():
        header = line.startswith("diff ") or (header and not line.startswith("@@"))
        kind = "hunk" if header else _DIFF_KINDS.get(line[:1], "same")
        lines.append({"kind": kind, "text": line})
    return _cut(lines)


def _cut(lines: list[dict[str, str]]) -> dict[str, Any]:
    return {"lines": lines[:DIFF_LINES], "cut": max(len(lines) - DIFF_LINES, 0)}


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
        "question": folded.get("error") if waiting else None,
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
        # as the chart decides it: its values are the rows' (the first comparator component)
        "log_scale": uses_log_scale([r["value"] for r in data["rows"] if r["value"] is not None]),
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
