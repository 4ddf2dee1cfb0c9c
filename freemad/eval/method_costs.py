"""What each method cost, read from the transcripts: calls, tokens, agent-seconds (the sum of the
calls' durations) and dollars, in all and per correct answer. Pure: rows in, numbers out.

Each method is charged the calls its answer needed: a single agent its own round-0 call; the
initial majority every round-0 call; the final majority, Free-MAD and the finalizer's answer the
whole debate; self-consistency the sampler's round-0 call and its extra samples; the judge the
whole debate and its own call. Dollars per call are the agent's dollars (from `pricing`) shared
among its calls by tokens, so a round's share is exact when an agent's input and output prices
are equal, and close otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from freemad.debate.debate_record import DebateResult

FIELDS = ("calls", "tokens", "agent_ms", "usd")


def usage(result: DebateResult) -> dict[str, Any]:
    """A debate's use, kept in its row: per agent in round 0, and the whole debate."""
    round0: dict[str, dict[str, Any]] = {}
    if result.transcript:
        for agent_id, turn in result.transcript[0].agents.items():
            tokens = turn.tokens.input + turn.tokens.output
            totals = result.agents.get(agent_id)
            usd = None
            if totals is not None and totals.cost_usd is not None:
                all_tokens = totals.tokens.input + totals.tokens.output
                usd = totals.cost_usd * tokens / all_tokens if all_tokens else 0.0
            round0[agent_id] = {
                "calls": turn.attempts,
                "tokens": tokens,
                "agent_ms": turn.duration_ms,
                "usd": usd,
            }
    turns = [t for r in result.transcript for t in r.agents.values()]
    metrics = result.metrics
    debate = {
        "calls": metrics.get("calls", sum(t.attempts for t in turns)),
        "tokens": metrics.get("tokens_total", 0),
        "agent_ms": sum(t.duration_ms for t in turns),
        "usd": metrics.get("cost_usd_total"),
    }
    return {"round0": round0, "debate": debate}


def _add(total: dict[str, Any], part: Mapping[str, Any] | None) -> None:
    if not part:
        return
    for key in ("calls", "tokens", "agent_ms"):
        total[key] += part.get(key) or 0
    if part.get("usd") is not None:
        total["usd"] = (total["usd"] or 0.0) + part["usd"]


def _spent(row: Mapping[str, Any], method: str, sampler: str | None) -> list[Mapping[str, Any]]:
    """The parts of one row's use that `method` is charged."""
    use = row.get("usage") or {}
    round0 = use.get("round0", {})
    extra = row.get("extra_cost", {})
    if method.startswith("single:"):
        return [round0.get(method.removeprefix("single:"), {})]
    if method == "majority_initial":
        return list(round0.values())
    if method == "self_consistency":
        return [round0.get(sampler or "", {}), extra.get("self_consistency", {})]
    if method == "judge":
        return [use.get("debate", {}), extra.get("judge", {})]
    return [use.get("debate", {})]


def method_cost(
    rows: Sequence[Mapping[str, Any]], method: str, correct: int, sampler: str | None = None
) -> dict[str, Any]:
    """`method`'s cost over `rows`, in all and per correct answer (None when none is correct)."""
    total: dict[str, Any] = {"calls": 0, "tokens": 0, "agent_ms": 0, "usd": None}
    for row in rows:
        for part in _spent(row, method, sampler):
            _add(total, part)
    total["seconds"] = round(total.pop("agent_ms") / 1000, 3)
    if total["usd"] is not None:
        total["usd"] = round(total["usd"], 6)
    per = {
        key: (round(total[key] / correct, 6) if correct and total[key] is not None else None)
        for key in ("calls", "tokens", "seconds", "usd")
    }
    return {**total, "per_correct": per}
