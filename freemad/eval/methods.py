"""Every decision rule read from one debate's transcript: each agent's round-0 answer (`single`),
the round-0 and final-round majorities, the Free-MAD rule over the trajectory with the checker's
normal form as the answer identity (`freemad`), and the debate's own decision as it was made
under `scoring.answer_identity` (`freemad_debate`). Pure: a transcript and a normal form in,
answers out.

A majority counts the agents holding each normal form (an agent whose answer has none does not
vote). Ties go to the tied answer held first: earliest round, and within a round the agent whose
id sorts first; so in round 0, the answer of the first agent by id among those tied.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from freemad.core.scoring import Move, Weights, score_moves
from freemad.debate.debate_record import DebateResult

METHODS = ("single", "majority_initial", "majority_final", "freemad")
# The debate's own winner, its answers told apart by scoring.answer_identity: beside `freemad`.
FREEMAD_DEBATE = "freemad_debate"
# The finalizer's answer (`debate.finalizer`): graded, beside `freemad`, when the config has one.
FINALIZED = "freemad_finalized"
# The baselines that cost calls of their own (freemad.eval.baselines), graded when asked for.
EXTRA_METHODS = ("self_consistency", "judge")
Normalize = Callable[[str | None], str | None]


@dataclass(frozen=True)
class Trajectory:
    """Who held what after each round (agents by id), and the debate's decision."""

    agents: tuple[str, ...]
    held: tuple[dict[str, str], ...]  # per round: agent -> the answer text held after it
    decision: str | None
    finalized: str | None = None  # the finalizer's text; None when it wrote none
    weights: tuple[float, ...] = Weights().as_tuple()  # the debate's scoring.weights
    normalize_scores: bool = False  # the debate's scoring.normalize

    def initial(self, agent: str) -> str | None:
        return self.held[0].get(agent) if self.held else None


def trajectory(result: DebateResult) -> Trajectory:
    """What a transcript says each agent held after each round; a failed or cut turn carries the
    agent's answer forward, as the debate itself does."""
    named = result.settings.get("agents")
    agents = set(named) if isinstance(named, list) else set()
    holdings: dict[str, str] = {}
    held: list[dict[str, str]] = []
    for record in result.transcript:
        agents |= set(record.agents)
        for agent_id, turn in record.agents.items():
            if turn.status == "ok" and turn.response is not None:
                holdings[agent_id] = turn.response.solution
        held.append(dict(holdings))
    decision = result.final_solution if result.status == "completed" else None
    done = result.finalized
    finalized = done.text if done is not None and done.status == "ok" and decision else None
    weights = result.settings.get("weights")
    if not (isinstance(weights, list) and len(weights) == 4):
        weights = list(Weights().as_tuple())
    normalized = result.settings.get("normalize") is True
    return Trajectory(
        tuple(sorted(agents)),
        tuple(held),
        decision,
        finalized,
        tuple(float(w) for w in weights),
        normalized,
    )


def freemad_by_identity(path: Trajectory, normalize: Normalize) -> str | None:
    """The Free-MAD winner when answers are told apart by `normalize` (the checker's normal
    form): the debate's moves replayed with its weights, ties to the debate's own decision
    where it is among them, else to the answer held first (round, then agent id). An answer with no normal form is its own answer (and wrong if it wins). None
    when the debate made no decision (it failed)."""
    if path.decision is None or not path.held:
        return None

    def ident(text: str) -> str:
        form = normalize(text)
        return form if form is not None else "\x00" + text

    moves: list[Move] = []
    before: dict[str, str] = {}
    for number, round_held in enumerate(path.held):
        for agent in sorted(round_held):
            answer = ident(round_held[agent])
            if number == 0:
                moves.append(Move(0, agent, answer))
            else:  # a first answer after round 0 counts as holding it
                moves.append(Move(number, agent, answer, before.get(agent, answer)))
            before[agent] = answer
    if not moves:
        return None
    board = score_moves(moves, Weights.from_sequence(path.weights))
    winner, tied = board.winner(normalize=path.normalize_scores)
    # Where the replay ties and the debate's own decision is among the tied, the debate's
    # tie-break stands (it may have read validation's confidence, which the replay cannot).
    decided = ident(path.decision)
    if len(tied) > 1 and decided in tied:
        winner = decided
    return None if winner.startswith("\x00") else winner


def majority(held: tuple[dict[str, str], ...], upto: int, normalize: Normalize) -> str | None:
    """The normal form most agents held after round `upto`; ties as the module says; None when
    nobody held a gradable answer."""
    if not held or upto >= len(held):
        return None
    first_seen: dict[str, int] = {}
    for round_held in held[: upto + 1]:
        for agent in sorted(round_held):
            form = normalize(round_held[agent])
            if form is not None:
                first_seen.setdefault(form, len(first_seen))
    votes = Counter(
        form for form in (normalize(text) for text in held[upto].values()) if form is not None
    )
    if not votes:
        return None
    return min(votes, key=lambda form: (-votes[form], first_seen[form]))


def decisions(
    path: Trajectory, normalize: Normalize, *, finalizer: bool = False
) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """Each method's answer, as a normal form: `single` per agent, then the others; with
    `finalizer`, the finalizer's text too (none, when it failed: graded wrong)."""
    last = len(path.held) - 1
    single = {agent: normalize(path.initial(agent)) for agent in path.agents}
    chosen = {
        "majority_initial": majority(path.held, 0, normalize),
        "majority_final": majority(path.held, last, normalize),
        "freemad": freemad_by_identity(path, normalize),
        FREEMAD_DEBATE: normalize(path.decision),
    }
    if finalizer:
        chosen[FINALIZED] = normalize(path.finalized)
    return single, chosen
