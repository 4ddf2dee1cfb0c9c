"""`freemad eval simulate`: synthetic debates decided by the real Free-MAD rule and the baselines."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click

from freemad.errors import UsageError

if TYPE_CHECKING:  # imported where used: `freemad --help` need not load the simulation
    from freemad.core.scoring import Weights
    from freemad.eval.simulate import Outcome, Scenario

_EPILOG = """\b
Examples:
  freemad eval simulate --agents 5 --p-correct 0.6 --conformity 0.7 --malicious 1 --items 500
  freemad eval simulate --items 2000 --sweep conformity=0,0.5,1 --svg conformity.svg
"""


def _weights(text: str) -> Weights:
    from freemad.core.scoring import Weights

    try:
        values = [float(part) for part in text.split(",")]
        weights = Weights.from_sequence(values)
    except ValueError as exc:
        raise UsageError(f"--weights: {exc}", hint="e.g. --weights 20,25,30,20") from None
    if any(w < 0 for w in values) or not all(math.isfinite(w) for w in values):
        raise UsageError(f"--weights must be four non-negative numbers, got {text}")
    return weights


def _sweep(text: str) -> tuple[str, list[float]]:
    from freemad.eval.simulate import SWEEPABLE

    name, _, listed = text.partition("=")
    if name not in SWEEPABLE or not listed:
        raise UsageError(
            f"--sweep takes PARAMETER=V1,V2,... with PARAMETER one of {', '.join(SWEEPABLE)}, "
            f"got {text!r}",
            hint="e.g. --sweep conformity=0,0.5,1",
        )
    try:
        return name, [float(part) for part in listed.split(",")]
    except ValueError:
        raise UsageError(f"--sweep values must be numbers, got {listed!r}") from None


@click.command("simulate", epilog=_EPILOG)
@click.option("--agents", type=click.IntRange(1, 1000), default=5, show_default=True)
@click.option(
    "--p-correct",
    type=click.FloatRange(0, 1),
    default=0.6,
    show_default=True,
    help="Chance an honest agent is right in round 0.",
)
@click.option(
    "--conformity",
    type=click.FloatRange(0, 1),
    default=0.7,
    show_default=True,
    help="Chance an honest agent takes the others' majority in a critique round (else keeps).",
)
@click.option(
    "--independent",
    type=click.Choice(["keep", "rederive"]),
    default="keep",
    show_default=True,
    help="What an honest agent that does not conform does: keeps its answer, or answers afresh "
    "(right with --p-correct).",
)
@click.option(
    "--malicious",
    type=click.IntRange(0),
    default=1,
    show_default=True,
    help="Agents that hold one wrong answer throughout.",
)
@click.option("--items", type=click.IntRange(1, 1_000_000), default=500, show_default=True)
@click.option(
    "--rounds", type=click.IntRange(0, 50), default=1, show_default=True, help="Critique rounds."
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--options",
    type=click.IntRange(2, 26),
    default=4,
    show_default=True,
    help="Answer options per item (one right).",
)
@click.option(
    "--weights",
    default="20,25,30,20",
    show_default=True,
    help="Free-MAD weights: initial, change_penalty, change_bonus, keep.",
)
@click.option(
    "--sweep",
    "sweep_spec",
    metavar="PARAM=V1,V2,...",
    help="One run per value of conformity, p-correct, malicious, agents or rounds.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option(
    "--svg",
    "svg_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Also draw accuracy per method (against the swept parameter) as an SVG chart.",
)
def simulate(
    *,
    agents: int,
    p_correct: float,
    conformity: float,
    independent: Literal["keep", "rederive"],
    malicious: int,
    items: int,
    rounds: int,
    seed: int,
    options: int,
    weights: str,
    sweep_spec: str | None,
    as_json: bool,
    svg_path: str | None,
) -> None:
    """Simulate debates of synthetic agents (no processes) and compare decision rules.

    Every item's trajectory is decided by the real Free-MAD scoring (`freemad`), by the
    final-round and round-0 majorities (ties drawn at random from the seed) and by one honest
    agent's round-0 answer (`single`). Accuracy comes with a 95% Wilson interval. The same
    seed gives the same numbers.
    """
    from freemad.eval.simulate import Scenario, sweep, sweep_chart_svg

    chosen = _weights(weights)
    try:
        scenario = Scenario(
            agents, p_correct, conformity, malicious, rounds, options, chosen, independent
        )
        parameter, values = _sweep(sweep_spec) if sweep_spec else ("", [])
        if parameter:
            points = sweep(scenario, parameter, values, items, seed)
        else:
            points = sweep(scenario, "conformity", [conformity], items, seed)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if svg_path:
        varied = parameter or "conformity"
        chart = sweep_chart_svg(varied, points, caption(scenario, items, seed, varied=parameter))
        try:
            Path(svg_path).write_text(chart, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write --svg {svg_path}: {exc.strerror or exc}") from None
    if as_json:
        click.echo(json.dumps(_as_json(parameter, points), indent=2))
    elif parameter:
        click.echo(caption(scenario, items, seed, varied=parameter))
        click.echo(_sweep_table(parameter, points))
    else:
        click.echo(caption(scenario, items, seed))
        click.echo(_table(points[0][1]))


def caption(scenario: Scenario, items: int, seed: int, varied: str = "") -> str:
    """The settings in one line, leaving out the swept one."""
    parts = {
        "agents": f"{scenario.agents} agents",
        "malicious": f"{scenario.malicious} malicious",
        "p-correct": f"p-correct {scenario.p_correct:g}",
        "conformity": f"conformity {scenario.conformity:g}",
        "rounds": f"{scenario.rounds} critique round{'s' * (scenario.rounds != 1)}",
    }
    shown = [text for name, text in parts.items() if name != varied]
    weights = ",".join(f"{w:g}" for w in scenario.weights.as_tuple())
    shown.append(f"non-conformers {scenario.independent}")
    shown += [f"{scenario.options} options", f"{items} items", f"seed {seed}", f"W {weights}"]
    return ", ".join(shown)


def _table(outcome: Outcome) -> str:
    rows = [f"{'method':<18}{'correct':>8}{'total':>8}{'accuracy':>10}  95% interval"]
    for name, acc in outcome.methods.items():
        low, high = acc.interval
        rows.append(
            f"{name:<18}{acc.correct:>8}{acc.total:>8}{acc.accuracy:>10.3f}  "
            f"{low:.3f} to {high:.3f}"
        )
    rows.append(
        f"freemad right where majority_final was wrong: {outcome.freemad_only}; "
        f"the other way round: {outcome.majority_final_only}"
    )
    return "\n".join(rows)


def _sweep_table(parameter: str, points: Sequence[tuple[float, Outcome]]) -> str:
    from freemad.eval.simulate import METHODS

    rows = [f"{parameter:>12}" + "".join(f"{m:>18}" for m in METHODS)]
    for value, outcome in points:
        cells = "".join(f"{outcome.methods[m].accuracy:>18.3f}" for m in METHODS)
        rows.append(f"{value:>12g}{cells}")
    return "\n".join(rows)


def _as_json(parameter: str, points: Sequence[tuple[float, Outcome]]) -> dict[str, object]:
    if not parameter:
        return points[0][1].as_dict()
    return {
        "sweep": parameter,
        "points": [{"value": value, **outcome.as_dict()} for value, outcome in points],
    }
