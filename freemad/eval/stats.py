"""The statistics of a report: the paired exact McNemar test of Free-MAD against each baseline,
and the plain-words line a reader takes away. Pure: verdicts in, numbers and sentences out.

A pair is one item (in one repeat) graded by both methods. Only the discordant pairs count:
`b`, Free-MAD right and the baseline wrong; `c`, the reverse. Under the null hypothesis (the two
are equally accurate) each discordant pair goes either way with probability 1/2, so the two-sided
exact p-value is `min(1, 2 * P[X <= min(b, c)])` with `X ~ Binomial(b + c, 1/2)`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

NAMES = {
    "majority_initial": "initial majority",
    "majority_final": "final majority",
    "freemad_finalized": "the finalizer",
    "freemad_debate": "the debate's own decision",
    "self_consistency": "self-consistency",
    "judge": "the judge",
}


def mcnemar_exact(b: int, c: int) -> float:
    """The two-sided exact McNemar p-value of `b` against `c` discordant pairs; 1 when none."""
    n = b + c
    if n == 0:
        return 1.0
    tail: int = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, float(Fraction(2 * tail, 1 << n)))  # exact, even past a float's range


def compare(freemad: Sequence[bool], baseline: Sequence[bool]) -> dict[str, Any]:
    """Free-MAD against a baseline over the same pairs: the difference in accuracy (points), the
    discordant counts and the exact McNemar p-value."""
    if len(freemad) != len(baseline):
        raise ValueError("the two methods were graded on different items")
    b = sum(f and not g for f, g in zip(freemad, baseline, strict=True))
    c = sum(g and not f for f, g in zip(freemad, baseline, strict=True))
    total = len(freemad)
    points = 100 * (b - c) / total if total else 0.0
    return {"pairs": total, "b": b, "c": c, "points": round(points, 4), "p": mcnemar_exact(b, c)}


def sentence(baseline: str, result: Mapping[str, Any]) -> str:
    """'Free-MAD beats final majority by 6.2 points, p = 0.03 (McNemar exact, 12 vs 4 of 200
    pairs)'."""
    name = NAMES.get(baseline, baseline.replace("single:", "single agent "))
    points = result["points"]
    if points > 0:
        verb = f"beats {name} by {points:.1f} points"
    elif points < 0:
        verb = f"trails {name} by {-points:.1f} points"
    else:
        verb = f"ties {name}"
    return (
        f"Free-MAD {verb}, p = {format_p(result['p'])} (McNemar exact, {result['b']} vs "
        f"{result['c']} discordant of {result['pairs']} pairs)"
    )


def format_p(p: float) -> str:
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}" if p < 0.01 else f"{p:.2f}"


def comparisons(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Free-MAD against every other method the rows grade, each single agent alone included
    (`single:<id>`), with its sentence."""
    freemad = [bool(row["methods"].get("freemad", {}).get("correct")) for row in rows]
    baselines: dict[str, list[bool]] = {}
    agents = sorted({agent for row in rows for agent in row["single"]})
    for agent in agents:
        baselines[f"single:{agent}"] = [
            bool(row["single"].get(agent, {}).get("correct")) for row in rows
        ]
    methods = [
        m for m in dict.fromkeys(m for row in rows for m in row["methods"]) if m != "freemad"
    ]
    for method in methods:
        baselines[method] = [bool(row["methods"].get(method, {}).get("correct")) for row in rows]
    found = {}
    for name, verdicts in baselines.items():
        result = compare(freemad, verdicts)
        found[name] = {**result, "sentence": sentence(name, result)}
    return found
