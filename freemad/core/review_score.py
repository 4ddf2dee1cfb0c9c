"""Which findings of a review debate survive: the Free-MAD score, finding by finding. No I/O.

Each agent holds a set of findings each round (`freemad.core.review_findings`; identity is the place,
`path:line`). The paper's rule is applied to each finding as to an answer: round 0 gives every
finding an agent raises `w1·f`; in a later round an agent that keeps a finding gives it `w4·f`,
one that drops a finding takes `w2·f` from it, one that takes up a finding gives it `w3·f`
(`f = 1/(k+1)`, `freemad.core.scoring`). A review with no findings is a stance too, "clean",
scored the same way. A finding survives when its score reaches `min_score`; by default the
weight `w1`, what one agent gives a finding in round 0, so a finding its only author withdrew
in round 1 falls (20 - 12.5 < 20), and one kept or taken up by others stands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from freemad.core.review_findings import Finding, finding_id, severity_rank
from freemad.core.scoring import Move, ScoreBoard, Weights

__all__ = ["CLEAN", "AgentStance", "ReviewScore", "ScoredFinding", "score_review"]

CLEAN = "clean"  # the stance "no findings", scored as an answer
_VOID = "\x00void"  # the other end of a move that only drops or only takes up a finding

# rounds[k][agent]: the findings the agent holds after round k; an agent missing from a round
# (it gave no answer, and held none before) takes no part in it.
Rounds = Sequence[Mapping[str, Sequence[Finding]]]


@dataclass(frozen=True)
class ScoredFinding:
    finding: Finding  # as held in the last round anyone held it (see `score_review`)
    id: str
    score: float
    survived: bool
    raised_by: tuple[str, ...]  # every agent that ever held it, in order of first holding
    held_by: tuple[str, ...]  # the agents holding it in the last round


@dataclass(frozen=True)
class AgentStance:
    agent: str
    findings: int  # held in the last round it took part in
    surviving: int  # of those, how many survived
    changed: bool  # whether its last review differs from its first


@dataclass(frozen=True)
class ReviewScore:
    findings: tuple[ScoredFinding, ...]  # every finding, surviving first, then by score
    stances: tuple[AgentStance, ...]
    clean_score: float | None  # the "no findings" stance's, when any agent took it
    min_score: float

    @property
    def surviving(self) -> tuple[ScoredFinding, ...]:
        return tuple(f for f in self.findings if f.survived)


def _ids(findings: Sequence[Finding]) -> set[str]:
    return {finding_id(f) for f in findings} or {CLEAN}


def _moves(rounds: Rounds) -> list[Move]:
    moves: list[Move] = []
    held: dict[str, set[str]] = {}
    for round_no, holdings in enumerate(rounds):
        for agent, findings in holdings.items():
            now, before = _ids(findings), held.get(agent)
            if before is None:  # its first answer: as round 0 scores it, whatever the round
                moves += [Move(0, agent, ident) for ident in sorted(now)]
            else:
                moves += [Move(round_no, agent, i, i) for i in sorted(now & before)]
                moves += [Move(round_no, agent, _VOID, i) for i in sorted(before - now)]
                moves += [Move(round_no, agent, i, _VOID) for i in sorted(now - before)]
            held[agent] = now
    return moves


def score_review(
    rounds: Rounds,
    weights: Weights | None = None,
    *,
    min_score: float | None = None,
    normalize: bool = False,
) -> ReviewScore:
    """Score every finding over the rounds and say which survive (see the module doc)."""
    weights = weights or Weights()
    board = ScoreBoard(weights).apply_all(_moves(rounds))
    scores = board.normalized() if normalize else board.raw
    threshold = weights.initial if min_score is None else min_score
    shown: dict[str, Finding] = {}
    raised: dict[str, list[str]] = {}
    for holdings in rounds:  # the later round's wording wins: the text agents last agreed on
        for agent, findings in holdings.items():
            for finding in findings:
                ident = finding_id(finding)
                raised.setdefault(ident, [])
                if agent not in raised[ident]:
                    raised[ident].append(agent)
        latest: dict[str, Finding] = {}
        for findings in holdings.values():
            for finding in findings:
                latest.setdefault(finding_id(finding), finding)
        shown.update(latest)
    last = _last_holdings(rounds)
    scored = [
        ScoredFinding(
            finding=finding,
            id=ident,
            score=scores[ident],
            survived=scores[ident] >= threshold - 1e-9,
            raised_by=tuple(raised[ident]),
            held_by=tuple(a for a, fs in last.items() if ident in {finding_id(f) for f in fs}),
        )
        for ident, finding in shown.items()
    ]
    scored.sort(key=lambda s: (not s.survived, -s.score, severity_rank(s.finding.severity)))
    survived = {s.id for s in scored if s.survived}
    stances = tuple(
        AgentStance(
            agent=agent,
            findings=len(findings),
            surviving=sum(1 for f in findings if finding_id(f) in survived),
            changed=_ids(findings) != _ids(_first_holdings(rounds)[agent]),
        )
        for agent, findings in last.items()
    )
    return ReviewScore(tuple(scored), stances, scores.get(CLEAN), threshold)


def _last_holdings(rounds: Rounds) -> dict[str, Sequence[Finding]]:
    last: dict[str, Sequence[Finding]] = {}
    for holdings in rounds:
        last.update(holdings)
    return last


def _first_holdings(rounds: Rounds) -> dict[str, Sequence[Finding]]:
    first: dict[str, Sequence[Finding]] = {}
    for holdings in rounds:
        for agent, findings in holdings.items():
            first.setdefault(agent, findings)
    return first
