"""A debate as view data: a finished one from its transcript (`debate_view`), one in flight from
its journal (`live_debate_view`). Pure: no I/O, no clock; every value is still untrusted text,
which the templates escape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from freemad.dashboard.views.debate_chart import debate_chart_svg
from freemad.dashboard.views.viewdata import as_list, as_map, as_number, as_text, diff_lines, number
from freemad.debate.transcript_format import expand
from freemad.svg_chart import format_number


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
    transcript = expand(transcript)  # a format 2 transcript (each answer once) as the full one
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
        "finalized": _finalized(as_map(transcript.get("finalized"))),
        "early_stop_reason": as_text(transcript.get("early_stop_reason")) or None,
        "early_stop_note": as_text(transcript.get("early_stop_note")) or None,
        "settings": _settings(as_map(transcript.get("settings"))),
        # The rule that broke the tie: the one recorded (a confidence tie-break whose confidences
        # were all equal fell back to deterministic), else the configured one.
        "tie_break": as_text(transcript.get("tie_broken_by"))
        or as_text(as_map(transcript.get("settings")).get("tie_break"))
        or "deterministic",
        "flags": [as_text(as_map(f).get("message")) for f in as_list(transcript.get("flags"))],
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
    """A debate in flight (`freemad.debate.live_journal`'s view): each agent's state and elapsed time in
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
        "stopped_because": as_text(live.get("stopped_because")),
        "agents": [str(a) for a in as_list(live.get("agents"))],
        "rounds_planned": as_number(live.get("rounds_planned")),
        "elapsed": number(live.get("elapsed_sec")),  # the debate's, where the view gives it
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
                "agents": [_live_agent(as_map(a), "waiting") for a in as_list(r.get("agents"))],
            }
            for r in rounds
        ],
        "standing": [{"answer_id": a, "score": number(v)} for a, v in standing],
        "chart": debate_chart_svg(scored, order, None) if scored else "",
        "finalizer": _live_finalizer(live.get("finalizer")),
    }


def _live_finalizer(found: Any) -> dict[str, Any] | None:
    """The finalizer's call while the debate runs: who, in what state, for how long."""
    return _live_agent(found, "working") if isinstance(found, Mapping) else None


def _live_agent(found: Mapping[str, Any], state: str) -> dict[str, Any]:
    """One agent's call in a debate in flight; `state` until the journal says otherwise."""
    return {
        "agent": as_text(found.get("agent")),
        "state": as_text(found.get("state")) or state,
        "elapsed": number(found.get("elapsed_sec")),
        "cause": as_text(found.get("cause")),
        "action": as_text(found.get("action")),
        "answer_id": as_text(found.get("answer_id")),
    }


def _finalized(found: Mapping[str, Any]) -> dict[str, Any] | None:
    """The finalizer's answer (`debate.finalizer`), apart from the winner; None when the
    transcript has none (a debate without a finalizer, or one written before it existed)."""
    if not found:
        return None
    tokens = as_map(found.get("tokens"))
    return {
        "agent": as_text(found.get("agent")),
        "ok": found.get("status") == "ok",
        "text": as_text(found.get("text")),
        "reasoning": as_text(found.get("reasoning")),
        "critiques": number(found.get("critiques")),
        "error": error_text(found.get("error")) or "no answer",
        "duration_ms": number(found.get("duration_ms")),
        "tokens_in": number(tokens.get("input")),
        "tokens_out": number(tokens.get("output")),
        "exit_status": as_text(found.get("exit_status")) or "-",
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
    parts = []
    if "language" in found or "syntax_ok" in found:
        language = as_text(found.get("language")) or "code"
        ok = found.get("syntax_ok")
        parts.append(
            f"{language}: syntax {'ok' if ok else 'error' if ok is False else 'not checked'}"
        )
    security = as_map(found.get("security"))
    if security:
        kinds = sorted({as_text(as_map(f).get("kind")) for f in as_list(security.get("found"))})
        named = f": {', '.join(kinds)}" if kinds else ""
        passed = security.get("passed") is not False and not kinds
        parts.append("no secret found" if passed else f"possible secret{named}")
    return "; ".join(parts) or None


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
