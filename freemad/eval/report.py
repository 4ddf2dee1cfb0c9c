"""The report: each method's accuracy with a 95% Wilson score interval, `single` per agent and as
their mean, the items' rows, cost and time; and the terminal table. Pure: rows in, a mapping out.

A row is one item: each method's answer (a normal form) and whether it was right, and what the
debate cost. `single` pools every agent's round-0 answers: its accuracy is the mean of the agents'
(they answered the same items), its interval treats the answers as independent, which agents on
the same question are not quite.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from freemad.eval.methods import EXTRA_METHODS, FINALIZED, METHODS

Z_95 = 1.959963984540054
INTERVAL = "95% Wilson score interval"


def wilson(correct: int, total: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of `correct` out of `total`; (0, 1) when there is nothing."""
    if total == 0:
        return (0.0, 1.0)
    p = correct / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    margin = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return (round(max(0.0, centre - margin), 6), round(min(1.0, centre + margin), 6))


def score(correct: int, total: int) -> dict[str, Any]:
    low, high = wilson(correct, total)
    return {
        "accuracy": correct / total if total else 0.0,
        "correct": correct,
        "total": total,
        "interval": [low, high],
    }


ANSWER_IDENTITY = (
    "the item's checker's normal form: single agents, majorities, self-consistency and the judge "
    "are graded and counted on it; freemad is the debate's own decision (scoring.answer_identity "
    "told its answers apart), graded on the same normal form"
)


def build_report(rows: Sequence[Mapping[str, Any]], header: Mapping[str, Any]) -> dict[str, Any]:
    """The report of `rows` (in dataset order), under `header` (dataset, config, rounds, ...).
    An unscorable row (its checker crashed) is listed with its reason and counts in no method."""
    unscorable = [
        {"id": row["id"], "reason": row["unscorable"]} for row in rows if row.get("unscorable")
    ]
    every_row, rows = rows, [row for row in rows if not row.get("unscorable")]
    agents = sorted({agent for row in rows for agent in row["single"]})
    per_agent = {
        agent: score(
            sum(bool(row["single"].get(agent, {}).get("correct")) for row in rows), len(rows)
        )
        for agent in agents
    }
    pooled = score(sum(s["correct"] for s in per_agent.values()), len(rows) * len(agents))
    if agents:
        pooled["accuracy"] = sum(s["accuracy"] for s in per_agent.values()) / len(agents)
    methods: dict[str, Any] = {"single": {**pooled, "agents": per_agent}}
    for method in voting_methods(rows):
        methods[method] = score(
            sum(bool(row["methods"].get(method, {}).get("correct")) for row in rows), len(rows)
        )
    for method, entry in methods.items():
        entry["calls"] = CALLS[method]
    costs = [row["cost_usd"] for row in every_row if row.get("cost_usd") is not None]
    return {
        **header,
        "interval": INTERVAL,
        "answer_identity": ANSWER_IDENTITY,
        "items": len(rows),
        "unscorable": unscorable,
        "failed_items": sum(row.get("status") != "completed" for row in rows),
        "methods": methods,
        "cost": {
            "usd": round(sum(costs), 6) if costs else None,
            "tokens": sum(row.get("tokens") or 0 for row in every_row),
            "calls": sum(row.get("calls") or 0 for row in every_row),
            "debate_time_ms": sum(row.get("wall_time_ms") or 0 for row in every_row),
        },
        "rows": list(every_row),
    }


def voting_methods(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The methods that choose one answer per item: every debate's, the finalizer's when a row
    graded it (the config has `debate.finalizer`), and the baselines that were asked for."""
    graded = [m for m in (FINALIZED, *EXTRA_METHODS) if any(m in row["methods"] for row in rows)]
    return [*METHODS[1:], *graded]


CALLS = {
    "single": "none extra: each agent's round-0 answer in the debate",
    "majority_initial": "none extra: the debate's round 0",
    "majority_final": "none extra: the debate's last round",
    "freemad": "none extra: the debate's decision",
    FINALIZED: "one call per item: the finalizer's, after the debate",
    "self_consistency": "N - 1 calls per item: the sampler's first sample is its debate answer",
    "judge": "one call per item, none where the final answers agree",
}


def table(report: Mapping[str, Any]) -> str:
    """The methods as a plain-text table, then the cost line."""
    lines = [f"{'method':<28} {'accuracy':>8} {'correct':>9}  95% interval"]
    methods = report["methods"]
    names: list[tuple[str, Mapping[str, Any]]] = [
        ("single (mean)", methods["single"]),
        *((f"  single: {agent}", s) for agent, s in methods["single"]["agents"].items()),
        *(
            (name, methods[name])
            for name in (*METHODS[1:], FINALIZED, *EXTRA_METHODS)
            if name in methods
        ),
    ]
    for name, s in names:
        low, high = s["interval"]
        lines.append(
            f"{name:<28} {s['accuracy']:>8.1%} {s['correct']:>4}/{s['total']:<4}  "
            f"[{low:.1%}, {high:.1%}]"
        )
    cost = report["cost"]
    usd = f"${cost['usd']:.4f}" if cost["usd"] is not None else "cost not recorded"
    for entry in report.get("unscorable", []):
        lines.append(f"unscorable: {entry['id']}: {entry['reason']}")
    lines.append(
        f"{report['items']} item(s), {report['failed_items']} failed debate(s); {cost['calls']} "
        f"call(s), {cost['tokens']} token(s), {usd}, {cost['debate_time_ms'] / 1000:.1f}s of debate"
    )
    return "\n".join(lines)
