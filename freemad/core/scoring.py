"""The Free-MAD decision rule: weights, moves, the score board and winner selection.

Cui et al., "Free-MAD: Consensus-Free Multi-Agent Debate" (arXiv 2509.11035). Round ``k``
weighs ``f = 1/(k+1)``. In round 0 every agent gives ``w1·f`` to the answer it proposes. In a
round ``k >= 1`` an agent that leaves answer ``a`` for ``b`` takes ``w2·f`` from ``a`` and gives
``w3·f`` to ``b``; an agent that keeps ``a`` gives ``w4·f`` to ``a``. The highest score wins, so an
answer that was held early and defended can beat the final round's majority.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Literal

__all__ = [
    "Action",
    "Delta",
    "Move",
    "ScoreBoard",
    "TieBreak",
    "Weights",
    "score_moves",
    "select_winner",
]

TIE_TOLERANCE = 1e-9
TieBreak = Literal["deterministic", "random", "confidence"]
TIE_BREAKS: tuple[TieBreak, ...] = ("deterministic", "random", "confidence")


@dataclass(frozen=True, slots=True)
class Weights:
    """The four Free-MAD weights ``(w1, w2, w3, w4)``; the defaults are the paper's."""

    initial: float = 20.0
    change_penalty: float = 25.0
    change_bonus: float = 30.0
    keep: float = 20.0

    def __post_init__(self) -> None:
        for name in ("initial", "change_penalty", "change_bonus", "keep"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise ValueError(f"weight {name} must be a finite number, got {value!r}")

    @classmethod
    def from_sequence(cls, values: Sequence[float]) -> Weights:
        """Build from ``(w1, w2, w3, w4)``, the order the paper and config files use."""
        if len(values) != 4:
            raise ValueError(
                f"expected exactly 4 weights (initial, change_penalty, change_bonus, keep), "
                f"got {len(values)}"
            )
        initial, change_penalty, change_bonus, keep = (float(v) for v in values)
        return cls(initial, change_penalty, change_bonus, keep)

    def as_tuple(self) -> tuple[float, float, float, float]:
        """The weights in paper order ``(w1, w2, w3, w4)``."""
        return (self.initial, self.change_penalty, self.change_bonus, self.keep)


class Action(str, Enum):
    """What one move did to one answer."""

    INITIAL = "initial"
    KEEP = "keep"
    LEAVE = "leave"
    JOIN = "join"


@dataclass(frozen=True, slots=True)
class Move:
    """One agent's answer in one round, with answers given as opaque answer ids."""

    round: int
    agent: str
    answer: str
    previous: str | None = None

    def __post_init__(self) -> None:
        if self.round < 0:
            raise ValueError(f"round must be >= 0, got {self.round}")
        if self.round == 0 and self.previous is not None:
            raise ValueError("a round-0 move has no previous answer")
        if self.round > 0 and self.previous is None:
            raise ValueError(f"a round-{self.round} move needs the agent's previous answer")


@dataclass(frozen=True, slots=True)
class Delta:
    """One line of an answer's score explainer; ``amount`` is negative for LEAVE."""

    round: int
    agent: str
    action: Action
    factor: float
    amount: float


class ScoreBoard:
    """Accumulates Free-MAD scores move by move, keeping an explainer per answer."""

    __slots__ = ("_contributors", "_explainers", "_moves", "_raw", "_weights")

    def __init__(self, weights: Weights = Weights()) -> None:
        self._weights = weights
        self._raw: dict[str, float] = {}
        self._contributors: dict[str, set[str]] = {}
        # Explainers are rebuilt from the move log on demand: a Delta per move would cost more
        # than the scoring itself on long debates.
        self._moves: list[Move] = []
        self._explainers: dict[str, list[Delta]] | None = None

    @property
    def weights(self) -> Weights:
        """The weights this board scores with (fixed, so explainers replay the same rule)."""
        return self._weights

    def apply(self, move: Move) -> None:
        """Score one move: INITIAL in round 0, KEEP if unchanged, else LEAVE plus JOIN."""
        self.apply_all((move,))

    def apply_all(self, moves: Iterable[Move]) -> ScoreBoard:
        """Score every move in order; returns ``self`` so calls can be chained."""
        # One hot loop with everything in locals: scoring 10,000 moves must stay in the
        # low milliseconds, and attribute lookups and calls per move would dominate.
        raw = self._raw
        contributors = self._contributors
        log = self._moves
        initial, change_penalty, change_bonus, keep = self._weights.as_tuple()
        self._explainers = None
        for move in moves:
            round_ = move.round
            factor = 1.0 / (round_ + 1)
            agent = move.agent
            answer = move.answer
            previous = move.previous
            if round_ == 0:
                amount = initial * factor
            elif previous is None:
                raise ValueError(f"a round-{round_} move needs the agent's previous answer")
            elif answer == previous:
                amount = keep * factor
            else:
                if previous in raw:
                    raw[previous] -= change_penalty * factor
                    contributors[previous].add(agent)
                else:
                    raw[previous] = -change_penalty * factor
                    contributors[previous] = {agent}
                amount = change_bonus * factor
            if answer in raw:
                raw[answer] += amount
                contributors[answer].add(agent)
            else:
                raw[answer] = amount
                contributors[answer] = {agent}
            log.append(move)
        return self

    @property
    def raw(self) -> dict[str, float]:
        """Answer id to raw score, for every answer any move touched (0 and negatives too)."""
        return dict(self._raw)

    @property
    def explainers(self) -> dict[str, list[Delta]]:
        """Answer id to its deltas in application order; they sum to the raw score."""
        if self._explainers is None:
            self._explainers = self._replay()
        return {answer: list(deltas) for answer, deltas in self._explainers.items()}

    def _replay(self) -> dict[str, list[Delta]]:
        explainers: dict[str, list[Delta]] = {answer: [] for answer in self._raw}
        w = self._weights
        for move in self._moves:
            round_, agent, answer = move.round, move.agent, move.answer
            factor = 1.0 / (round_ + 1)
            if round_ == 0:
                delta = Delta(round_, agent, Action.INITIAL, factor, w.initial * factor)
            elif answer == move.previous:
                delta = Delta(round_, agent, Action.KEEP, factor, w.keep * factor)
            else:
                previous = move.previous
                assert previous is not None  # apply_all only logs moves that have one
                leave = Delta(round_, agent, Action.LEAVE, factor, -w.change_penalty * factor)
                explainers[previous].append(leave)
                delta = Delta(round_, agent, Action.JOIN, factor, w.change_bonus * factor)
            explainers[answer].append(delta)
        return explainers

    @property
    def contributors(self) -> dict[str, frozenset[str]]:
        """Answer id to the distinct agents whose moves touched it."""
        return {answer: frozenset(agents) for answer, agents in self._contributors.items()}

    @property
    def order(self) -> tuple[str, ...]:
        """Answer ids by first appearance, the order ``select_winner`` breaks ties with."""
        return tuple(self._raw)

    def normalized(self) -> dict[str, float]:
        """Raw score divided by the number of distinct contributors to the answer."""
        return {
            answer: score / len(self._contributors[answer]) for answer, score in self._raw.items()
        }

    def winner(
        self,
        *,
        normalize: bool = False,
        tie_break: TieBreak = "deterministic",
        seed: int | None = None,
        confidence: Mapping[str, float | None] | None = None,
    ) -> tuple[str, list[str]]:
        """``select_winner`` over this board's raw (or normalized) scores."""
        scores = self.normalized() if normalize else self._raw
        return select_winner(
            scores, self.order, tie_break=tie_break, seed=seed, confidence=confidence
        )


def score_moves(moves: Iterable[Move], weights: Weights = Weights()) -> ScoreBoard:
    """Score a whole trajectory of moves on a fresh board."""
    return ScoreBoard(weights).apply_all(moves)


def select_winner(
    scores: Mapping[str, float],
    order: Sequence[str],
    *,
    tie_break: TieBreak = "deterministic",
    seed: int | None = None,
    confidence: Mapping[str, float | None] | None = None,
) -> tuple[str, list[str]]:
    """Return ``(winner, tied)``: the top answer and every answer tied with it.

    Scores within ``1e-9`` of the best (scaled by its magnitude when that exceeds 1) tie, so
    float summation order never decides a debate. ``tied`` follows ``order`` (answer ids by first
    appearance); ids missing from it come last, sorted. A deterministic tie-break takes the first
    tied id; a random one takes ``random.Random(seed).choice(sorted(tied))``; a confidence one
    the first tied id of the highest ``confidence`` (an id without one counts 0), so with no
    confidences at all it is the deterministic one. Scores, and so ``tied``, never change.
    """
    if not scores:
        raise ValueError("cannot select a winner from no scores")
    if tie_break not in TIE_BREAKS:
        raise ValueError(
            f"tie_break must be 'deterministic', 'random' or 'confidence', got {tie_break!r}"
        )
    for answer, score in scores.items():
        if math.isnan(score):
            raise ValueError(f"score of answer {answer!r} is NaN")
    best = max(scores.values())
    tolerance = TIE_TOLERANCE * max(1.0, abs(best)) if math.isfinite(best) else 0.0
    tied_set = {
        answer for answer, score in scores.items() if score == best or best - score <= tolerance
    }

    tied: list[str] = []
    listed: set[str] = set()
    for answer in order:
        if answer in tied_set and answer not in listed:
            tied.append(answer)
            listed.add(answer)
    tied.extend(sorted(tied_set - listed))

    if tie_break == "random":
        return random.Random(seed).choice(sorted(tied)), tied  # noqa: S311 - not security
    if tie_break == "confidence":
        known = confidence or {}
        return max(tied, key=lambda answer: known.get(answer) or 0.0), tied
    return tied[0], tied
