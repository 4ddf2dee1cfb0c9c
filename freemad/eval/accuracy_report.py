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

from freemad.eval.method_costs import method_cost
from freemad.eval.methods import EXTRA_METHODS, FINALIZED, FREEMAD_DEBATE, METHODS
from freemad.eval.stats import comparisons

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
    "the item's checker's normal form, for every method: what single agents are graded on, what "
    "majorities and self-consistency count, what the judge picks among, and what the Free-MAD "
    "rule (freemad) scores as one answer; only freemad_debate, the debate's own decision, told "
    "its answers apart by scoring.answer_identity"
)


TEST = "McNemar's exact test, two-sided, paired by item (and repeat), Free-MAD against each"


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
    _costs_and_repeats(methods, rows, header.get("sampler"))
    costs = [row["cost_usd"] for row in every_row if row.get("cost_usd") is not None]
    return {
        **header,
        "interval": INTERVAL,
        "answer_identity": ANSWER_IDENTITY,
        "test": TEST,
        "items": len({row["id"] for row in rows}),
        "graded": len(rows),
        "unscorable": unscorable,
        "failed_items": sum(row.get("status") != "completed" for row in rows),
        "methods": methods,
        "comparisons": comparisons(rows) if rows else {},
        "cost": {
            "usd": round(sum(costs), 6) if costs else None,
            "tokens": sum(row.get("tokens") or 0 for row in every_row),
            "calls": sum(row.get("calls") or 0 for row in every_row),
            "debate_time_ms": sum(row.get("wall_time_ms") or 0 for row in every_row),
        },
        "rows": list(every_row),
    }


def _costs_and_repeats(
    methods: dict[str, Any], rows: Sequence[Mapping[str, Any]], sampler: str | None
) -> None:
    """Each method's cost (in all and per correct answer) and, with repeats, its accuracy in
    each repeat."""
    repeats = sorted({int(row.get("repeat") or 0) for row in rows})
    for name, entry in [*methods["single"]["agents"].items(), *methods.items()]:
        key = name if name in methods else f"single:{name}"
        if key == "single":
            agents = list(methods["single"]["agents"])
            parts = [method_cost(rows, f"single:{a}", 1) for a in agents]
            entry["cost"] = _mean_cost(parts, entry["correct"] / max(len(agents), 1))
        else:
            entry["cost"] = method_cost(rows, key, entry["correct"], sampler)
        if len(repeats) > 1 and key != "single":
            entry["per_repeat"] = [
                _accuracy([row for row in rows if int(row.get("repeat") or 0) == r], key)
                for r in repeats
            ]


def _accuracy(rows: Sequence[Mapping[str, Any]], method: str) -> float:
    if method.startswith("single:"):
        agent = method.removeprefix("single:")
        right = sum(bool(row["single"].get(agent, {}).get("correct")) for row in rows)
    else:
        right = sum(bool(row["methods"].get(method, {}).get("correct")) for row in rows)
    return right / len(rows) if rows else 0.0


def _mean_cost(parts: Sequence[Mapping[str, Any]], correct: float) -> dict[str, Any]:
    """`single`'s cost: one agent's, on average over the agents."""
    if not parts:
        return {"calls": 0, "tokens": 0, "seconds": 0.0, "usd": None, "per_correct": {}}
    mean: dict[str, Any] = {}
    for key in ("calls", "tokens", "seconds", "usd"):
        values = [p[key] for p in parts if p[key] is not None]
        mean[key] = round(sum(values) / len(parts), 6) if values else None
    mean["per_correct"] = {
        key: (round(mean[key] / correct, 6) if correct and mean[key] is not None else None)
        for key in ("calls", "tokens", "seconds", "usd")
    }
    return mean


def voting_methods(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The methods that choose one answer per item: every debate's, the finalizer's when a row
    graded it (the config has `debate.finalizer`), and the baselines that were asked for."""
    optional = (FREEMAD_DEBATE, FINALIZED, *EXTRA_METHODS)
    graded = [m for m in optional if any(m in row["methods"] for row in rows)]
    return [*METHODS[1:], *graded]


CALLS = {
    "single": "none extra: each agent's round-0 answer in the debate",
    "majority_initial": "none extra: the debate's round 0",
    "majority_final": "none extra: the debate's last round",
    "freemad": "none extra: the Free-MAD rule over the debate's moves",
    FREEMAD_DEBATE: "none extra: the debate's own decision",
    FINALIZED: "one call per item: the finalizer's, after the debate",
    "self_consistency": "N - 1 calls per item: the sampler's first sample is its debate answer",
    "judge": "one call per item, none where the final answers agree",
}


def table(report: Mapping[str, Any]) -> str:
    """The methods as a plain-text table, then the cost line."""
    lines = [
        f"{'method':<28} {'accuracy':>8} {'correct':>9}  {'95% interval':<16} "
        f"{'tokens/correct':>14} {'s/correct':>9}"
    ]
    methods = report["methods"]
    names: list[tuple[str, Mapping[str, Any]]] = [
        ("single (mean)", methods["single"]),
        *((f"  single: {agent}", s) for agent, s in methods["single"]["agents"].items()),
        *(
            (name, methods[name])
            for name in (*METHODS[1:], FREEMAD_DEBATE, FINALIZED, *EXTRA_METHODS)
            if name in methods
        ),
    ]
    for name, s in names:
        low, high = s["interval"]
        per = s.get("cost", {}).get("per_correct", {})
        tokens = "-" if per.get("tokens") is None else f"{per['tokens']:.0f}"
        seconds = "-" if per.get("seconds") is None else f"{per['seconds']:.1f}"
        lines.append(
            f"{name:<28} {s['accuracy']:>8.1%} {s['correct']:>4}/{s['total']:<4}  "
            f"{f'[{low:.1%}, {high:.1%}]':<16} {tokens:>14} {seconds:>9}"
        )
    lines += [entry["sentence"] for entry in report.get("comparisons", {}).values()]
    cost = report["cost"]
    usd = f"${cost['usd']:.4f}" if cost["usd"] is not None else "cost not recorded"
    for entry in report.get("unscorable", []):
        lines.append(f"unscorable: {entry['id']}: {entry['reason']}")
    lines.append(
        f"{report['items']} item(s), {report['failed_items']} failed debate(s); {cost['calls']} "
        f"call(s), {cost['tokens']} token(s), {usd}, {cost['debate_time_ms'] / 1000:.1f}s of debate"
    )
    return "\n".join(lines)
