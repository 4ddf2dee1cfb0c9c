"""Simulated debates: synthetic agents decided by the real Free-MAD rule and by the baselines.

No processes and no I/O. Each item is one multiple-choice question whose right answer is ``A``.
Round 0: an honest agent is right with probability ``p_correct``, else it names one of the wrong
options uniformly at random. Each critique round, an honest agent conforms with probability
``conformity``: it takes the answer most of the *other* agents held in the previous round (it
keeps its own if that is tied for most; other ties are drawn at random); otherwise it keeps its
answer (``independent="keep"``) or answers afresh, right with ``p_correct`` again
(``independent="rederive"``). Malicious agents all hold one wrong option, drawn per item, throughout. Which agents are
malicious is shuffled per item, so agent order (the Free-MAD tie-break) favours no role.

Each trajectory is decided four ways: ``freemad`` (the moves built as ``freemad.debate.outcome``
builds them, scored by ``freemad.core.scoring`` with the runtime's default decision: raw scores,
ties to the answer proposed first), ``majority_final`` and ``majority_initial`` (most agents in the
last round, in round 0; a tie is broken uniformly at random by the seeded generator), and
``single`` (the round-0 answer of the first honest agent). One seed gives the same numbers on
every run and platform: everything is drawn from one ``random.Random(seed)``.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from freemad.core.scoring import Move, Weights, score_moves, select_winner
from freemad.svg_chart import svg_document, svg_head, xml_text

__all__ = [
    "METHODS",
    "SWEEPABLE",
    "Accuracy",
    "Outcome",
    "Scenario",
    "Trajectory",
    "decide",
    "moves_of",
    "play_item",
    "run",
    "sweep",
    "sweep_chart_svg",
    "wilson_interval",
]

METHODS = ("freemad", "majority_final", "majority_initial", "single")
RIGHT = "A"
Z_95 = 1.959963984540054
# The parameters a sweep may vary, by their command-line names.
SWEEPABLE = ("conformity", "p-correct", "malicious", "agents", "rounds")


@dataclass(frozen=True, slots=True)
class Scenario:
    """The synthetic debate every item of a run plays; ``rounds`` counts critique rounds."""

    agents: int = 5
    p_correct: float = 0.6
    conformity: float = 0.7
    malicious: int = 1
    rounds: int = 1
    options: int = 4
    weights: Weights = field(default_factory=Weights)
    independent: Literal["keep", "rederive"] = "keep"

    def __post_init__(self) -> None:
        if self.agents < 1:
            raise ValueError(f"agents must be at least 1, got {self.agents}")
        if not 0 <= self.malicious <= self.agents:
            raise ValueError(
                f"malicious must be between 0 and agents ({self.agents}), got {self.malicious}"
            )
        for name in ("p_correct", "conformity"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name.replace('_', '-')} must be between 0 and 1, got {value}")
        if self.rounds < 0:
            raise ValueError(f"rounds must be at least 0, got {self.rounds}")
        if not 2 <= self.options <= 26:
            raise ValueError(f"options must be between 2 and 26, got {self.options}")
        if self.independent not in ("keep", "rederive"):
            raise ValueError(f"independent must be keep or rederive, got {self.independent!r}")
        if any(w < 0 for w in self.weights.as_tuple()):
            raise ValueError(f"weights must be non-negative, got {list(self.weights.as_tuple())}")

    def describe(self) -> dict[str, object]:
        """The settings as plain values, for reports."""
        return {
            "agents": self.agents,
            "malicious": self.malicious,
            "p_correct": self.p_correct,
            "conformity": self.conformity,
            "rounds": self.rounds,
            "options": self.options,
            "weights": list(self.weights.as_tuple()),
            "independent": self.independent,
        }


@dataclass(frozen=True, slots=True)
class Trajectory:
    """Who held which answer in each round: ``rounds[k][i]`` is agent ``agents[i]``'s answer."""

    agents: tuple[str, ...]
    rounds: tuple[tuple[str, ...], ...]
    single: int = 0  # the index of the agent whose round-0 answer is the `single` method's


@dataclass(frozen=True, slots=True)
class Accuracy:
    """How often one method was right, with its 95% Wilson score interval."""

    correct: int
    total: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.correct, self.total)

    def as_dict(self) -> dict[str, object]:
        low, high = self.interval
        return {
            "accuracy": self.accuracy,
            "correct": self.correct,
            "total": self.total,
            "interval": [low, high],
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    """A run's accuracy per method, and the paired count of where Free-MAD and the final vote differ."""

    scenario: Scenario
    items: int
    seed: int
    methods: Mapping[str, Accuracy]
    freemad_only: int  # items Free-MAD got right and majority_final wrong
    majority_final_only: int  # and the other way round

    def as_dict(self) -> dict[str, object]:
        return {
            "settings": {**self.scenario.describe(), "items": self.items, "seed": self.seed},
            "methods": {name: acc.as_dict() for name, acc in self.methods.items()},
            "paired": {
                "freemad_only": self.freemad_only,
                "majority_final_only": self.majority_final_only,
            },
        }


def wilson_interval(correct: int, total: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion; ``(0, 1)`` when there is nothing to count."""
    if total <= 0:
        return (0.0, 1.0)
    p = correct / total
    z2 = z * z
    denominator = 1 + z2 / total
    centre = (p + z2 / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / denominator
    # At 0 or all correct the interval ends exactly at the bound (not one float off it).
    low = 0.0 if correct <= 0 else max(0.0, centre - half)
    high = 1.0 if correct >= total else min(1.0, centre + half)
    return (low, high)


def moves_of(trajectory: Trajectory) -> list[Move]:
    """The moves exactly as the runtime's Tally builds them: round by round, agents in order."""
    moves: list[Move] = []
    previous: tuple[str, ...] | None = None
    for round_no, answers in enumerate(trajectory.rounds):
        for index, agent in enumerate(trajectory.agents):
            before = None if previous is None else previous[index]
            moves.append(Move(round_no, agent, answers[index], before))
        previous = answers
    return moves


def majority(answers: Sequence[str], rng: random.Random) -> str:
    """The answer most agents hold; a tie is drawn uniformly at random (sorted, then ``choice``)."""
    counts = Counter(answers)
    order = list(dict.fromkeys(answers))
    winner, tied = select_winner({a: float(n) for a, n in counts.items()}, order)
    return rng.choice(sorted(tied)) if len(tied) > 1 else winner


def decide(trajectory: Trajectory, weights: Weights, rng: random.Random) -> dict[str, str]:
    """Each method's answer for one trajectory."""
    board = score_moves(moves_of(trajectory), weights)
    # The runtime's default decision (scoring.normalize false, tie_break deterministic).
    freemad, _ = select_winner(board.raw, board.order, tie_break="deterministic")
    return {
        "freemad": freemad,
        "majority_final": majority(trajectory.rounds[-1], rng),
        "majority_initial": majority(trajectory.rounds[0], rng),
        "single": trajectory.rounds[0][trajectory.single],
    }


def play_item(scenario: Scenario, rng: random.Random) -> Trajectory:
    """One item's trajectory under the scenario's model (the module docstring states it)."""
    labels = [chr(ord("A") + i) for i in range(scenario.options)]
    wrong = labels[1:]
    roles = [True] * scenario.malicious + [False] * (scenario.agents - scenario.malicious)
    rng.shuffle(roles)
    target = rng.choice(wrong)

    def fresh() -> str:
        return RIGHT if rng.random() < scenario.p_correct else rng.choice(wrong)

    rounds = [tuple(target if malicious else fresh() for malicious in roles)]
    for _ in range(scenario.rounds):
        before = rounds[-1]
        now: list[str] = []
        for index, malicious in enumerate(roles):
            own = before[index]
            if malicious:
                now.append(own)
            elif rng.random() >= scenario.conformity:
                now.append(own if scenario.independent == "keep" else fresh())
            else:
                counts = Counter(before[:index] + before[index + 1 :])
                most = max(counts.values(), default=0)
                tied = sorted(a for a, n in counts.items() if n == most)
                now.append(own if own in tied or not tied else rng.choice(tied))
        rounds.append(tuple(now))
    single = roles.index(False) if False in roles else 0
    agents = tuple(f"agent{i + 1}" for i in range(scenario.agents))
    return Trajectory(agents, tuple(rounds), single)


def run(scenario: Scenario, items: int, seed: int) -> Outcome:
    """Play ``items`` items from ``random.Random(seed)`` and count each method's right answers."""
    if items < 1:
        raise ValueError(f"items must be at least 1, got {items}")
    rng = random.Random(seed)  # noqa: S311 - a simulation, not security
    correct = dict.fromkeys(METHODS, 0)
    freemad_only = final_only = 0
    for _ in range(items):
        chosen = decide(play_item(scenario, rng), scenario.weights, rng)
        for method, answer in chosen.items():
            correct[method] += answer == RIGHT
        freemad_only += chosen["freemad"] == RIGHT != chosen["majority_final"]
        final_only += chosen["majority_final"] == RIGHT != chosen["freemad"]
    methods = {m: Accuracy(correct[m], items) for m in METHODS}
    return Outcome(scenario, items, seed, methods, freemad_only, final_only)


def sweep(
    scenario: Scenario, parameter: str, values: Sequence[float], items: int, seed: int
) -> list[tuple[float, Outcome]]:
    """One run per value of ``parameter`` (a key of SWEEPABLE), each from the same seed."""
    if parameter not in SWEEPABLE:
        raise ValueError(f"cannot sweep {parameter!r}; choose one of {', '.join(SWEEPABLE)}")
    points: list[tuple[float, Outcome]] = []
    for value in values:
        points.append((value, run(_vary(scenario, parameter, value), items, seed)))
    return points


# The chart: colour (Okabe-Ito) and dash pattern both tell the methods apart.
_STYLE = {
    "freemad": ("#0072B2", "3", ""),
    "majority_final": ("#D55E00", "2", "7 4"),
    "majority_initial": ("#009E73", "2", "2 3"),
    "single": ("#555555", "1.5", "9 3 2 3"),
}
_W, _H, _LEFT, _RIGHT, _TOP, _BOTTOM = 720, 400, 56, 160, 56, 52


def _vary(scenario: Scenario, parameter: str, value: float) -> Scenario:
    if parameter == "conformity":
        return replace(scenario, conformity=float(value))
    if parameter == "p-correct":
        return replace(scenario, p_correct=float(value))
    if float(value) != int(value):
        raise ValueError(f"{parameter} must be a whole number, got {value:g}")
    if parameter == "malicious":
        return replace(scenario, malicious=int(value))
    if parameter == "agents":
        return replace(scenario, agents=int(value))
    return replace(scenario, rounds=int(value))


def sweep_chart_svg(parameter: str, points: Sequence[tuple[float, Outcome]], caption: str) -> str:
    """Accuracy of every method against the swept parameter, with 95% intervals as whiskers."""
    xs = [float(value) for value, _ in points]
    low, high = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if low == high:
        low, high = low - 0.5, high + 0.5
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def x(value: float) -> str:
        return f"{_LEFT + (value - low) / (high - low) * plot_w:.1f}"

    def y(value: float) -> str:
        return f"{_TOP + (1 - value) * plot_h:.1f}"

    name = parameter.replace("-", " ")
    lines = svg_head(
        _W,
        _H,
        name="sim",
        title=f"Accuracy of each decision rule against {name}",
        desc=_describe(name, points),
    )
    for row, text in enumerate(_wrap(caption, 96)):
        lines.append(
            f'<text x="{_LEFT}" y="{18 + row * 17}" font-size="13">{xml_text(text)}</text>'
        )
    for tick in range(6):
        value = tick / 5
        lines.append(
            f'<line x1="{_LEFT}" y1="{y(value)}" x2="{_LEFT + plot_w}" y2="{y(value)}" '
            'stroke="#E3E3E3"/>'
        )
        lines.append(
            f'<text x="{_LEFT - 6}" y="{y(value)}" text-anchor="end" '
            f'dominant-baseline="middle">{value:.1f}</text>'
        )
    for value in xs:
        lines.append(
            f'<text x="{x(value)}" y="{_TOP + plot_h + 18}" text-anchor="middle">{value:g}</text>'
        )
    lines += [
        f'<line x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_LEFT + plot_w}" y2="{_TOP + plot_h}" '
        'stroke="#333333"/>',
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_h}" stroke="#333333"/>',
        f'<text x="{_LEFT + plot_w / 2:.1f}" y="{_H - 12}" text-anchor="middle">{xml_text(name)}</text>',
        f'<text x="14" y="{_TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_TOP + plot_h / 2:.1f})">accuracy</text>',
    ]
    for rank, method in enumerate(METHODS):
        colour, width, dash = _STYLE[method]
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        coords = " ".join(f"{x(float(v))},{y(out.methods[method].accuracy)}" for v, out in points)
        lines.append(
            f'<polyline points="{coords}" fill="none" stroke="{colour}" '
            f'stroke-width="{width}"{dashed}/>'
        )
        for value, out in points:
            lo, hi = out.methods[method].interval
            lines.append(
                f'<line x1="{x(float(value))}" y1="{y(lo)}" x2="{x(float(value))}" y2="{y(hi)}" '
                f'stroke="{colour}" stroke-width="1"/>'
            )
        legend_y = _TOP + 10 + rank * 22
        lines += [
            f'<line x1="{_W - _RIGHT + 16}" y1="{legend_y}" x2="{_W - _RIGHT + 46}" '
            f'y2="{legend_y}" stroke="{colour}" stroke-width="{width}"{dashed}/>',
            f'<text x="{_W - _RIGHT + 52}" y="{legend_y}" dominant-baseline="middle">'
            f"{method}</text>",
        ]
    lines.append(
        f'<text x="{_W - _RIGHT + 16}" y="{_TOP + 10 + len(METHODS) * 22}" '
        'dominant-baseline="middle" fill="#555555">whiskers: 95% interval</text>'
    )
    return svg_document(lines, [])


def _wrap(text: str, width: int) -> list[str]:
    """At most two lines, broken after a comma."""
    if len(text) <= width:
        return [text]
    cut = text.rfind(", ", 0, width)
    return [text[: cut + 1], text[cut + 2 :]] if cut > 0 else [text]


def _describe(name: str, points: Sequence[tuple[float, Outcome]]) -> str:
    parts = []
    for method in METHODS:
        values = ", ".join(
            f"{out.methods[method].accuracy:.3f} at {float(v):g}" for v, out in points
        )
        parts.append(f"{method}: {values}")
    return f"Accuracy against {name}. " + "; ".join(parts) + "."
