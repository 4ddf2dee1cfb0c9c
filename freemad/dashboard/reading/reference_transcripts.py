"""Transcripts written by the reference implementation, read as ours so the site and the live
dashboard show them. Pure: a parsed JSON object in, one in our transcript's shape out.

Its transcripts carry no run id, requirement or times, and record per turn only the response
(solution, reasoning, decision, answer id, timings, tokens). What it has is shown; the rest is
left out, never made up: the run id is the file's name, the start time the one in that name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from freemad.dashboard.views.viewdata import as_list, as_map, as_number, as_text

# `transcript-20261201-133830.json`: the reference's file names carry the time it was written.
_STAMP = re.compile(r"(\d{8})-(\d{6})")
_FAILED_CALL = "CLI execution failed"


def is_reference_transcript(data: Mapping[str, Any]) -> bool:
    """No run id of ours, and the reference's own fields: a winner's id and a list of rounds."""
    return (
        "run_id" not in data
        and "final_answer_id" in data
        and isinstance(data.get("transcript"), list)
        and all(isinstance(r, Mapping) and "agents" in r for r in data["transcript"])
    )


def started_at(stem: str) -> str | None:
    """The ISO time in a reference transcript's file name, taken as UTC; None without one."""
    match = _STAMP.search(stem)
    if match is None:
        return None
    try:
        when = datetime.strptime("".join(match.groups()), "%Y%m%d%H%M%S")
    except ValueError:
        return None
    return when.replace(tzinfo=timezone.utc).isoformat().replace("+00:00", "Z")


def from_reference(data: Mapping[str, Any], run_id: str, started: str | None) -> dict[str, Any]:
    """A reference transcript in our transcript's shape (see freemad/debate/debate_record.py)."""
    rounds = [_round(r) for r in as_list(data.get("transcript")) if isinstance(r, Mapping)]
    answers: dict[str, dict[str, Any]] = {}
    holders: list[dict[str, str]] = []
    held: dict[str, str] = {}
    for record in rounds:
        for agent, turn in record["agents"].items():
            answer = turn.get("answer_id")
            if answer:
                answers.setdefault(answer, {"canonical": turn["response"]["solution"]})
                held[agent] = answer
        holders.append(dict(held))
    winner = as_text(data.get("final_answer_id")) or None
    turns = [t for r in rounds for t in r["agents"].values()]
    tokens = sum(t["tokens"]["input"] + t["tokens"]["output"] for t in turns)
    metrics = dict(as_map(data.get("metrics")))
    metrics.update(
        calls=len(turns),
        failures=sum(t["status"] != "ok" for t in turns),
        tokens_total=tokens,
        tokens_estimated=True,  # the reference counts tokens by the text's length
    )
    return {
        "run_id": run_id,
        "status": "completed" if winner else "failed",
        "error": None if winner else "the transcript names no winner",
        "requirement": "",
        "started_at": started or "",
        "finished_at": "",
        "settings": {"agents": list(rounds[0]["agents"]) if rounds else []},
        "final_answer_id": winner,
        "final_solution": as_text(data.get("final_solution")),
        "scores": _numbers(data.get("scores")),
        "raw_scores": _numbers(data.get("raw_scores")),
        "score_explainers": {
            str(answer): _explainer(str(answer), as_list(rows))
            for answer, rows in as_map(data.get("score_explainers")).items()
        },
        "winning_agents": [str(a) for a in as_list(data.get("winning_agents"))],
        "origin_agents": _origins(rounds),
        "holders_history": holders,
        "answers": answers,
        "validation": {
            str(answer): _validation(as_map(found))
            for answer, found in as_map(data.get("validation")).items()
        },
        "metrics": metrics,
        "agents": _totals(rounds),
        "early_stop_reason": data.get("early_stop_reason"),
        "transcript": rounds,
        "source_format": "reference implementation",
    }


def _round(record: Mapping[str, Any]) -> dict[str, Any]:
    number = record.get("round")
    agents = {
        str(agent): _turn(as_map(entry), number)
        for agent, entry in as_map(record.get("agents")).items()
    }
    return {
        "round": number,
        "type": as_text(record.get("type")),
        "agents": agents,
        "deadline_hit_soft": bool(record.get("deadline_hit_soft")),
        "deadline_hit_hard": bool(record.get("deadline_hit_hard")),
        "scores": _numbers(record.get("scores")),
    }


def _turn(entry: Mapping[str, Any], number: Any) -> dict[str, Any]:
    response = as_map(entry.get("response"))
    metadata = as_map(response.get("metadata"))
    timings = as_map(metadata.get("timings"))
    tokens = as_map(metadata.get("tokens"))
    solution = as_text(response.get("solution"))
    decision = as_text(response.get("decision")).lower() or None
    # The reference records a failed call as an answer whose text says so, and scores it as
    # one: shown as it was scored, marked failed.
    failed = solution.startswith(_FAILED_CALL)
    action = "revise" if response.get("changed") else "keep"
    if number == 0:
        action = "initial"
    elapsed = as_number(timings.get("elapsed_ms"))
    return {
        "round": number,
        "status": "failed" if failed else "ok",
        "action": action,
        "answer_id": as_text(response.get("answer_id")) or None,
        "response": {
            "solution": solution,
            "reasoning": as_text(response.get("reasoning")),
            "decision": decision if decision in ("keep", "revise") else None,
        },
        "error": solution.splitlines()[0] if failed else None,
        "peers_assigned": [str(p) for p in as_list(entry.get("peers_assigned"))],
        "peers_seen": [str(p) for p in as_list(entry.get("peers_seen"))],
        "duration_ms": int(elapsed) if elapsed is not None else None,
        "tokens": {
            "input": int(as_number(tokens.get("prompt")) or 0),
            "output": int(as_number(tokens.get("output")) or 0),
            "estimated": True,
        },
    }


def _totals(rounds: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    totals: dict[str, dict[str, Any]] = {}
    for record in rounds:
        for agent, turn in record["agents"].items():
            total = totals.setdefault(
                agent,
                {
                    "calls": 0,
                    "failures": 0,
                    "duration_ms": 0,
                    "tokens": {"input": 0, "output": 0, "estimated": True},
                },
            )
            total["calls"] += 1
            total["failures"] += turn["status"] != "ok"
            total["duration_ms"] += turn["duration_ms"] or 0
            total["tokens"]["input"] += turn["tokens"]["input"]
            total["tokens"]["output"] += turn["tokens"]["output"]
    return totals


def _origins(rounds: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each answer's first holders: the agents that gave it in the first round it appeared."""
    origins: dict[str, list[str]] = {}
    for record in rounds:
        found: dict[str, list[str]] = {}
        for agent, turn in record["agents"].items():
            answer = turn.get("answer_id")
            if answer and answer not in origins:
                found.setdefault(answer, []).append(agent)
        for answer, agents in found.items():
            origins[answer] = sorted(agents)
    return origins


def _explainer(answer: str, rows: list[Any]) -> list[dict[str, Any]]:
    """The reference's per-answer score log ({round, agent_id, action, deltas}) as ours."""
    out = []
    for row in map(as_map, rows):
        amount = as_number(as_map(row.get("deltas")).get(answer))
        out.append(
            {
                "round": row.get("round"),
                "agent": as_text(row.get("agent_id")),
                "action": as_text(row.get("action")),
                "factor": None,
                "amount": amount or 0.0,
            }
        )
    return out


def _validation(found: Mapping[str, Any]) -> dict[str, Any]:
    syntax = as_map(found.get("syntax"))
    passed = syntax.get("passed")
    return {"language": "code", "syntax_ok": passed if isinstance(passed, bool) else None}


def _numbers(value: Any) -> dict[str, float]:
    return {
        str(key): number
        for key, raw in as_map(value).items()
        if (number := as_number(raw)) is not None
    }


__all__ = ["from_reference", "is_reference_transcript", "started_at"]
