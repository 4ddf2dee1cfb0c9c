"""The evolve supervisor and stop rules: stall and loop detection, directives, when to stop. No I/O.

The runtime records one `IterationRecord` per judged candidate (the baseline v0 included, as
an admission). After each iteration it asks `detect`; on a stall or a loop it intervenes (a
debate proposes new directions, which become `Directive`s living for a few iterations), and
once `needs_human` says the interventions have stopped paying off, it asks a person.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from freemad.core.evolve.judge import WORKER_STAGE, parse_predicate


class SupervisorSpec(Protocol):
    """freemad.config.evolve_section.SupervisorConfig fits."""

    @property
    def stall_window(self) -> int: ...
    @property
    def loop_threshold(self) -> int: ...
    @property
    def max_interventions_before_human(self) -> int: ...


class StopSpec(Protocol):
    """freemad.config.evolve_section.StopConfig fits."""

    @property
    def max_iterations(self) -> int: ...
    @property
    def max_wall_clock_minutes(self) -> float | None: ...
    @property
    def target(self) -> Sequence[str]: ...
    @property
    def max_total_cost_usd(self) -> float | None: ...


@dataclass(frozen=True, slots=True)
class IterationRecord:
    """One judged iteration; `signature` is `failure_signature` of its measurement."""

    iteration: int
    admitted: bool
    signature: str = ""


Detection = Literal["stall", "loop"]


def detect(history: Sequence[IterationRecord], config: SupervisorSpec) -> Detection | None:
    """ "loop" when the last `loop_threshold` records are rejections sharing one non-empty
    signature; else "stall" when none of the last `stall_window` records was admitted. Fewer
    records than a window prove nothing. Pass the records since the last intervention, so
    one intervention is not asked for twice on the same evidence."""
    recent = history[-config.loop_threshold :]
    if len(recent) == config.loop_threshold:
        signatures = {record.signature for record in recent}
        rejected = not any(record.admitted for record in recent)
        if rejected and len(signatures) == 1 and "" not in signatures:
            return "loop"
    window = history[-config.stall_window :]
    if len(window) == config.stall_window and not any(record.admitted for record in window):
        return "stall"
    return None


def broken_worker(history: Sequence[IterationRecord], config: SupervisorSpec) -> bool:
    """True when each of the last `stall_window` records is the same failure of the worker's
    tooling (the failed stage WORKER_STAGE in its signature). No new direction mends a CLI that cannot run, so the
    run stops with the cause instead of intervening or asking a person what to try."""
    window = history[-config.stall_window :]
    signatures = {record.signature for record in window}
    return (
        len(window) == config.stall_window
        and len(signatures) == 1
        and signatures.pop().startswith(WORKER_STAGE + ": ")
        and not any(record.admitted for record in window)
    )


def needs_human(interventions_without_new_best: int, config: SupervisorSpec) -> bool:
    """True when the interventions since the last new best have reached the limit: the next
    stall or loop goes to a person instead of another intervention (at 0, the first does)."""
    return interventions_without_new_best >= config.max_interventions_before_human


@dataclass(frozen=True, slots=True)
class Directive:
    """A direction for the workers, issued after iteration `issued_at`; it guides the `ttl`
    iterations that follow."""

    text: str
    issued_at: int
    ttl: int


def active(directives: Iterable[Directive], iteration: int) -> list[Directive]:
    """The directives that guide `iteration`, in the order they were issued."""
    return [d for d in directives if d.issued_at < iteration <= d.issued_at + d.ttl]


StopReason = Literal["target", "max_iterations", "max_wall_clock", "max_total_cost"]


def should_stop(
    iteration: int, elapsed_minutes: float, best: Mapping[str, float], config: StopSpec
) -> StopReason | None:
    """Why the run stops after `iteration` (0 is the baseline), or None to go on. Reaching the
    target wins over running out of iterations or time; an empty target is never reached."""
    targets = [parse_predicate(text) for text in config.target]
    if targets and all(target.holds(best) for target in targets):
        return "target"
    if iteration >= config.max_iterations:
        return "max_iterations"
    limit = config.max_wall_clock_minutes
    if limit is not None and elapsed_minutes >= limit:
        return "max_wall_clock"
    return None


def cost_cap_reached(cost_usd: float, config: StopSpec) -> bool:
    """Whether the run's agent calls, `cost_usd` so far, have reached `max_total_cost_usd`."""
    limit = config.max_total_cost_usd
    return limit is not None and cost_usd >= limit
