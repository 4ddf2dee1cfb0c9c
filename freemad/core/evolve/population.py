"""A generation's admission rule: which of its candidates the judge admits, if any. No I/O.

Every candidate of a generation is judged on its own against the same incumbent; those the judge
admits compete, and the best under the comparator wins (a tie, within epsilon, goes to the lower
candidate index). The winner is measured again `confirm_runs` times and admitted only if the judge
admits every re-measurement too. So the outcome depends on the measurements alone, never on the
order in which candidates finished.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from freemad.core.evolve.judge import ComparatorSpec, Measurement, Verdict, judge

Outcome = Literal["admitted", "beaten", "unconfirmed", "rejected", "failed"]


@dataclass(frozen=True, slots=True)
class Member:
    """One judged candidate of a generation: whether the judge admitted it over the incumbent on
    its own, whether every stage succeeded, and what it measured."""

    candidate: int
    admitted: bool
    ok: bool
    components: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Order:
    """The comparator alone, as a judge spec: ranks two passing candidates."""

    comparator: Sequence[ComparatorSpec]
    gate: Sequence[str] = ()


def winner(members: Iterable[Member], comparator: Sequence[ComparatorSpec]) -> int | None:
    """The candidate index to admit: among the members the judge admitted, the best under the
    comparator; one that is not better beyond epsilon than an earlier one loses to it."""
    best: Member | None = None
    for member in sorted(members, key=lambda m: m.candidate):
        if not member.admitted:
            continue
        if best is None or beats(member.components, best.components, comparator):
            best = member
    return None if best is None else best.candidate


def beats(
    candidate: Mapping[str, float],
    other: Mapping[str, float],
    comparator: Sequence[ComparatorSpec],
) -> bool:
    """Whether `candidate` is better than `other` beyond epsilon at the comparator's first
    deciding rung."""
    order = _Order(comparator)
    verdict = judge(Measurement(True, dict(candidate)), Measurement(True, dict(other)), {}, order)
    return verdict.admitted


def confirm(verdicts: Sequence[Verdict]) -> Verdict:
    """The winner's re-measurements, each judged against the incumbent: admitted only if all are."""
    for number, verdict in enumerate(verdicts, 1):
        if not verdict.admitted:
            return Verdict(False, f"confirmation run {number} did not win: {verdict.reason}")
    return Verdict(True, f"confirmed by {len(verdicts)} more run(s)")


def outcome(member: Member, chosen: int | None, confirmed: bool) -> Outcome:
    """What became of a member: admitted, beaten by the winner, unconfirmed (won, then lost its
    re-measurement), rejected (measured, not better), or failed (a stage, or the worker)."""
    if member.candidate == chosen:
        return "admitted" if confirmed else "unconfirmed"
    if member.admitted:
        return "beaten"
    return "rejected" if member.ok else "failed"


def signature(signatures: Sequence[str]) -> str:
    """A generation's failure signature, for loop detection: the one every candidate failed
    with, else "" (the candidates did not all fail the same way)."""
    distinct = set(signatures)
    if len(distinct) == 1:
        return next(iter(distinct))
    return ""
