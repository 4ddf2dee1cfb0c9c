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
from freemad.evolve.chart import format_number
from freemad.evolve.report import report_data, score_chart_svg

DIFF_LINES = 400  # a longer diff is cut, with a note
ARTIFACT_CHARS = 200_000
EVENT_CHARS = 4_000


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(float(value)) else None


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def number(value: Any) -> str:
    found = _num(value)
    return "-" if found is None else format_number(found)


# --- debates ----------------------------------------------------------------------------------


def answer_labels(transcript: Mapping[str, Any]) -> dict[str, str]:
    """Short names for answer ids, A1 first by final score (then id): what the page and chart say."""
    scores = _map(transcript.get("scores"))
    ids = set(scores) | set(_map(transcript.get("answers")))
    for round_ in _list(transcript.get("transcript")):
        for turn in _map(_map(round_).get("agents")).values():
            if _map(turn).get("answer_id"):
                ids.add(str(turn["answer_id"]))
    ordered = sorted(ids, key=lambda a: (-(_num(scores.get(a)) or 0.0), a))
    return {answer: f"A{i}" for i, answer in enumerate(ordered, start=1)}


def debate_view(transcript: Mapping[str, Any]) -> dict[str, Any]:
    labels = answer_labels(transcript)
    rounds = [_map(r) for r in _list(transcript.get("transcript"))]
    winner = _text(transcript.get("final_answer_id")) or None
    scores = _map(transcript.get("scores"))
    answers = _map(transcript.get("answers"))
    ranking = [
        {
            "answer_id": answer,
            "label": labels.get(answer, "?"),
            "score": number(scores.get(answer)),
            "raw": number(_map(transcript.get("raw_scores")).get(answer)),
            "winner": answer == winner,
            "origin": [str(a) for a in _list(_map(transcript.get("origin_agents")).get(answer))],
            "holders": _final_holders(transcript, answer),
            "text": _text(_map(answers.get(answer)).get("canonical")),
            "explainer": _explainer(_list(_map(transcript.get("score_explainers")).get(answer))),
            "validation": _validation(_map(_map(transcript.get("validation")).get(answer))),
        }
        for answer in sorted(labels, key=lambda a: labels[a][1:].zfill(6))
    ]
    metrics = _map(transcript.get("metrics"))
    return {
        "run_id": _text(transcript.get("run_id")),
        "requirement": _text(transcript.get("requirement")),
        "status": _text(transcript.get("status")) or "unknown",
        "error": _text(transcript.get("error")) or None,
        "started_at": _text(transcript.get("started_at")),
        "finished_at": _text(transcript.get("finished_at")),
        "winner": None if winner is None else labels.get(winner, winner),
        "winner_id": winner,
        "final_solution": _text(transcript.get("final_solution")),
        "winning_agents": [str(a) for a in _list(transcript.get("winning_agents"))],
        "tied": [labels.get(str(a), str(a)) for a in _list(transcript.get("tied_answers"))],
        "early_stop_reason": _text(transcript.get("early_stop_reason")) or None,
        "early_stop_note": _text(transcript.get("early_stop_note")) or None,
        "settings": _settings(_map(transcript.get("settings"))),
        "tie_break": _text(_map(transcript.get("settings")).get("tie_break")) or "deterministic",
        "ranking": ranking,
        "rounds": [_round_row(r) for r in rounds],
        "score_table": _score_table(rounds, labels),
        "agents": _agents(transcript, rounds, labels),
        "metrics": {
            "wall_time_ms": number(metrics.get("wall_time_ms")),
            "calls": number(metrics.get("calls")),
            "failures": number(metrics.get("failures")),
            "tokens_total": number(metrics.get("tokens_total")),
            "tokens_estimated": bool(metrics.get("tokens_estimated")),
            "cost_usd_total": number(metrics.get("cost_usd_total")),
        },
        "chart": debate_chart_svg(rounds, labels, winner),
    }


def _final_holders(transcript: Mapping[str, Any], answer: str) -> list[str]:
    history = _list(transcript.get("holders_history"))
    last = _map(history[-1]) if history else {}
    return sorted(str(agent) for agent, held in last.items() if held == answer)


def _explainer(deltas: list[Any]) -> list[dict[str, Any]]:
    rows, total = [], 0.0
    for delta in map(_map, deltas):
        amount = _num(delta.get("amount")) or 0.0
        total += amount
        rows.append(
            {
                "round": _text(delta.get("round")),
                "agent": _text(delta.get("agent")),
                "action": _text(delta.get("action")),
                "factor": number(delta.get("factor")),
                "amount": ("+" if amount > 0 else "") + format_number(amount),
                "total": format_number(total),
            }
        )
    return rows


def _validation(found: Mapping[str, Any]) -> str | None:
    if not found:
        return None
    language = _text(found.get("language")) or "code"
    ok = found.get("syntax_ok")
    return f"{language}: syntax {'ok' if ok else 'error' if ok is False else 'not checked'}"


def _settings(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    topology = _map(settings.get("topology"))
    pairs = [
        ("rounds", settings.get("rounds")),
        ("agents", ", ".join(map(str, _list(settings.get("agents"))))),
        ("topology", topology.get("type")),
        ("prompting", settings.get("prompt_mode")),
        ("weights", ", ".join(number(w) for w in _list(settings.get("weights")))),
        ("tie break", settings.get("tie_break")),
    ]
    return [(name, _text(value)) for name, value in pairs if value not in (None, "")]


def _round_row(round_: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "round": _text(round_.get("round")),
        "type": _text(round_.get("type")),
        "duration_ms": number(round_.get("duration_ms")),
        "deadline": "hard"
        if round_.get("deadline_hit_hard")
        else "soft"
        if round_.get("deadline_hit_soft")
        else None,
    }


def _score_table(rounds: list[Mapping[str, Any]], labels: Mapping[str, str]) -> dict[str, Any]:
    columns = sorted(labels, key=lambda a: labels[a][1:].zfill(6))
    return {
        "labels": [labels[a] for a in columns],
        "rows": [
            {
                "round": _text(r.get("round")),
                "cells": [number(_map(r.get("scores")).get(a)) for a in columns],
            }
            for r in rounds
        ],
    }


def _agents(
    transcript: Mapping[str, Any], rounds: list[Mapping[str, Any]], labels: Mapping[str, str]
) -> list[dict[str, Any]]:
    totals = _map(transcript.get("agents"))
    names: list[str] = [str(a) for a in _list(_map(transcript.get("settings")).get("agents"))]
    for round_ in rounds:
        names += [str(a) for a in _map(round_.get("agents")) if str(a) not in names]
    names += [str(a) for a in totals if str(a) not in names]
    out = []
    for name in names:
        total = _map(totals.get(name))
        tokens = _map(total.get("tokens"))
        turns, previous = [], None
        for round_ in rounds:
            turn = _map(_map(round_.get("agents")).get(name))
            if not turn:
                continue
            solution = _text(_map(turn.get("response")).get("solution"))
            turns.append(_turn(turn, labels, solution, previous))
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


def _turn(
    turn: Mapping[str, Any], labels: Mapping[str, str], solution: str, previous: str | None
) -> dict[str, Any]:
    tokens = _map(turn.get("tokens"))
    answer = _text(turn.get("answer_id"))
    return {
        "round": _text(turn.get("round")),
        "status": _text(turn.get("status")) or "unknown",
        "action": _text(turn.get("action")) or "-",
        "answer": labels.get(answer, answer) if answer else "-",
        "duration_ms": number(turn.get("duration_ms")),
        "tokens_in": number(tokens.get("input")),
        "tokens_out": number(tokens.get("output")),
        "estimated": bool(tokens.get("estimated")),
        "cost_usd": number(turn.get("cost_usd")),
        "exit_status": _text(turn.get("exit_status")) or "-",
        "error": _text(turn.get("error")) or None,
        "solution": solution,
        "reasoning": _text(_map(turn.get("response")).get("reasoning")),
        "diff": None
        if previous is None or previous == solution
        else diff_lines(previous, solution),
        "unchanged": previous is not None and previous == solution,
    }


def diff_lines(before: str, after: str) -> dict[str, Any]:
    """A unified diff as classed lines ("add", "del", "hunk", "same"), cut at DIFF_LINES."""
    lines = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")
        lines.append({"kind": kind, "text": line})
    return {"lines": lines[:DIFF_LINES], "cut": max(len(lines) - DIFF_LINES, 0)}


# --- tasks ------------------------------------------------------------------------------------


def task_view(
    run_id: str,
    events: Sequence[tuple[str, Mapping[str, Any]]],
    times: Sequence[float],
    status: str,
    artifacts: Sequence[tuple[str, int, bytes | None]],
) -> dict[str, Any]:
    try:
        state: dict[str, Any] | None = task_core.fold(run_id, events).view()
    except (KeyError, TypeError, ValueError, AttributeError):
        state = None  # an event this version does not know: show the log as it is
    folded: Mapping[str, Any] = state or {}  # what the fold knows, or nothing
    when = [*times[: len(events)], *[0.0] * (len(events) - len(times))]  # 0: time unknown
    created = _map(next((d for k, d in events if k == "task_created"), {}))
    task_type = _text(folded.get("task_type") or created.get("task_type")) or "plan"
    current = _text(folded.get("current_stage"))
    timeline = [
        entry
        for (kind, data), at in zip(events, when, strict=True)
        if (entry := _timeline_entry(kind, _map(data), at)) is not None
    ]
    waiting = _text(folded.get("status")) == "waiting_for_human"
    return {
        "run_id": run_id,
        "goal": _text(folded.get("goal") or created.get("goal")),
        "task_type": task_type,
        "status": _text(folded.get("status")) or status or "unknown",
        "current_stage": current,
        "question": folded.get("error") if waiting else None,
        "iterations": number(folded.get("iterations")),
        "iteration_cap": number(folded.get("max_total_iterations")),
        "roles": sorted(_map(folded.get("roles")).items()),
        "branch": _text(folded.get("branch")) or None,
        # ` --config PATH` when the task's config is not found without it (freemad.config.discover)
        "config_arg": _text(created.get("config_arg")),
        "work_items": [_map(w) for w in _list(folded.get("work_items"))],
        "stages": _stages(task_type, current, done=status == "completed"),
        "timeline": timeline,
        "events": [
            {"seq": i, "time": at, "kind": kind, "data": _compact(data)}
            for i, ((kind, data), at) in enumerate(zip(events, when, strict=True))
        ],
        "artifacts": [_artifact(name, size, content) for name, size, content in artifacts],
        "unreadable": state is None and bool(events),
    }


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
        response = _map(data.get("response"))
        return {
            **base,
            "title": f"{_text(data.get('stage'))}: {_text(data.get('role'))} "
            f"({_text(data.get('agent'))})",
            "decision": _text(response.get("review_decision")) or None,
            "text": _text(response.get("content")),
            "findings": [_text(f) for f in _list(response.get("findings"))],
        }
    if kind == "stage_advanced":
        return {**base, "title": f"{_text(data.get('from'))} → {_text(data.get('to'))}"}
    if kind == "stage_sent_back":
        return {
            **base,
            "title": f"sent back to {_text(data.get('to'))}",
            "findings": [_text(f) for f in _list(data.get("feedback"))],
        }
    if kind == "waiting_for_human":
        return {**base, "title": "waiting for a person", "text": _text(data.get("question"))}
    if kind == "agent_failed":
        return {
            **base,
            "title": f"{_text(data.get('stage'))}: a call failed",
            "text": _text(data.get("error") or data.get("reason")) or None,
        }
    if kind in _NOTED:
        text = data.get("text") or data.get("reason") or data.get("stage") or data.get("item_id")
        return {**base, "title": _NOTED[kind], "text": _text(text) or None}
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
) -> dict[str, Any]:
    """`commit_url` has `{commit}` where the full hash goes (a forge's commit page)."""
    data = report_data(run_id, events)
    for version in data["versions"]:
        sha = version["sha"]
        version["url"] = commit_url.replace("{commit}", sha) if commit_url else None
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
    created = _map(next((d for k, d in events if k == "run_created"), {}))
    return {
        **data,
        "timeline": timeline,
        "chart": score_chart_svg(events),
        "config_arg": _text(created.get("config_arg")),
    }
