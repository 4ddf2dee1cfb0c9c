"""An evolve run as a fold over its events, and the one next action the runtime takes. No I/O.

The runtime appends events; everything it decides comes from `fold` and `next_action` over the
events already durable. So a run killed at any point resumes from the store alone: an
iteration that was started but never judged is abandoned and redone, and an admission whose
judged event is stored but whose version is not is finished (the branch only rolls forward).

Events (kind: data):
    run_created        goal, goal_hash, judge_hash, seed_commit, branch, branch_prefix, variation
    iteration_started  iteration, parent_version, parent_commit, directives
    candidate_proposed iteration, agent, ok, summary, ...
    candidate_judged   iteration, tree, stages, measurement, signature, verdict, protected,
                       commit (admitted only), version (admitted only), seconds; with a
                       population it is the generation's decision: also candidate (the
                       winner's index, or None) and generation {size, candidates: [...]}
    generation_started iteration, size, parent_version, parent_commit, directives
    candidate_measured iteration, candidate, the judged data of one candidate of a generation
                       (verdict: the judge's against the incumbent, on its own)
    candidate_confirmed iteration, candidate, runs, verdict   (evolve.judge.confirm_runs)
    generation_resumed iteration, judged, redo   (a record only)
    version_admitted   iteration, version, commit, components
    iteration_abandoned iteration, reason
    intervention       after_iteration, detection, directions, error, intervention, agents
    Any event may carry cost_usd, what its agent calls cost; the run's total is their sum.
    waiting_for_human  after_iteration, detection, question
    human_answer       text          human_declined  (nothing)
    paused / resumed / stop_requested / stopped {reason}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from freemad.core.evolve.judge import ComparatorSpec, Measurement, best_ever
from freemad.core.evolve.supervisor import (
    Detection,
    Directive,
    IterationRecord,
    StopSpec,
    SupervisorSpec,
    active,
    broken_worker,
    cost_cap_reached,
    detect,
    needs_human,
    should_stop,
)


class Status(str, Enum):
    RUNNING = "running"
    PAUSED = "paused"
    WAITING = "waiting_for_human"
    STOPPED = "stopped"
    FAILED = "failed"


# Why a run ends, beyond should_stop's reasons: a person declined to steer it, a person stopped
# it, the judge failed on the unmodified seed, its lineage was tampered with, or the worker's
# tooling failed the same way in a row (broken_worker).
END_REASONS = (
    "target",
    "max_iterations",
    "max_wall_clock",
    "max_total_cost",
    "declined",
    "user",
    "baseline_failed",
    "tampered",
    "worker_failed",
)


@dataclass(frozen=True, slots=True)
class Version:
    version: int
    iteration: int
    commit: str
    components: dict[str, float]


@dataclass(frozen=True, slots=True)
class PendingAdmission:
    """A judged-admitted candidate whose version is not recorded yet (a crash in between)."""

    iteration: int
    version: int
    commit: str
    components: dict[str, float]


@dataclass
class EvolveState:
    run_id: str
    goal: str = ""
    goal_hash: str = ""
    judge_hash: str = ""
    seed_commit: str = ""
    branch: str = ""
    status: Status = Status.RUNNING
    stop_reason: str | None = None
    error: str | None = None  # why a failed run failed
    versions: list[Version] = field(default_factory=list)
    records: list[IterationRecord] = field(default_factory=list)
    judged: dict[int, dict[str, Any]] = field(default_factory=dict)  # iteration: verdict, ...
    started: int | None = None  # the iteration in flight: started, not yet judged
    # The generation in flight (size 0: a single-candidate iteration): what its candidates
    # measured so far, {candidate: verdict, ok, components, signature, commit, ...}, and the winner's
    # confirmation once made. A resume judges only the candidates missing here.
    generation: int = 0
    members: dict[int, dict[str, Any]] = field(default_factory=dict)
    confirmation: dict[str, Any] | None = None
    pending: PendingAdmission | None = None
    directives: list[Directive] = field(default_factory=list)
    interventions: list[dict[str, Any]] = field(default_factory=list)
    interventions_without_new_best: int = 0
    supervised_after: int = 0  # detection only looks at iterations after this one
    question: str | None = None
    last_judged: int = -1
    active_seconds: float = 0.0
    cost_usd: float = 0.0  # what the run's agent calls cost, by their events' cost_usd
    events: int = 0

    @property
    def incumbent(self) -> Version | None:
        return self.versions[-1] if self.versions else None

    @property
    def next_iteration(self) -> int:
        return self.last_judged + 1

    @property
    def iterations(self) -> int:
        """Iterations judged after the seed's baseline (iteration 0): what `stop.max_iterations`
        counts, and the one count `status` and `report` both show."""
        return max(self.last_judged, 0)

    def admitted_measurements(self) -> list[Measurement]:
        return [Measurement(True, dict(v.components)) for v in self.versions]

    def best(self, comparator: Sequence[ComparatorSpec]) -> dict[str, float]:
        return best_ever(self.admitted_measurements(), comparator)

    def guiding(self, iteration: int) -> list[Directive]:
        return active(self.directives, iteration)

    def view(self) -> dict[str, Any]:
        """The run as `status` prints it."""
        incumbent = self.incumbent
        return {
            "run_id": self.run_id,
            "status": self.status.value,
            "stop_reason": self.stop_reason,
            "error": self.error,
            "goal": self.goal,
            "branch": self.branch,
            "seed_commit": self.seed_commit,
            "iterations_judged": self.iterations,
            "versions": len(self.versions),
            "incumbent": None
            if incumbent is None
            else {
                "version": f"v{incumbent.version}",
                "iteration": incumbent.iteration,
                "commit": incumbent.commit,
                "components": incumbent.components,
            },
            "interventions": len(self.interventions),
            "question": self.question,
            "cost_usd": round(self.cost_usd, 6),
        }


def fold(
    run_id: str,
    events: Iterable[tuple[str, Mapping[str, Any]]],
    ttl: int = 5,
    *,
    onto: EvolveState | None = None,
) -> EvolveState:
    """The run after `events`, in order; `onto` a state already folded from the events before
    them (it is updated in place), so a long run is not folded from the start at every step.
    `ttl` is the directions' time to live, in iterations."""
    state = onto if onto is not None else EvolveState(run_id)
    for kind, data in events:
        state.events += 1
        _apply(state, kind, data, ttl)
    return state


def _apply(state: EvolveState, kind: str, data: Mapping[str, Any], ttl: int) -> None:
    state.cost_usd += float(data.get("cost_usd") or 0.0)
    if kind in _LIFECYCLE:
        _LIFECYCLE[kind](state, data)
    elif kind in _GENERATION:
        _GENERATION[kind](state, data)
    elif kind == "run_created":
        for name in ("goal", "goal_hash", "judge_hash", "seed_commit", "branch"):
            setattr(state, name, str(data[name]))
    elif kind == "iteration_started":
        state.started = int(data["iteration"])
    elif kind == "iteration_abandoned":
        state.started = None
        _end_generation(state)
    elif kind == "candidate_judged":
        _judged(state, data)
    elif kind == "version_admitted":
        version = Version(
            int(data["version"]), int(data["iteration"]), str(data["commit"]), _floats(data)
        )
        state.versions.append(version)
        state.pending = None
        if version.version > 0:
            state.interventions_without_new_best = 0
    elif kind == "intervention":
        state.interventions.append(dict(data))
        state.interventions_without_new_best += 1
        state.supervised_after = int(data["after_iteration"])
        for text in data.get("directions", []):
            state.directives.append(Directive(str(text), state.supervised_after, ttl))
    elif kind == "human_answer":
        state.status, state.question = Status.RUNNING, None
        state.interventions_without_new_best = 0
        state.directives.append(Directive(str(data["text"]), state.last_judged, ttl))


def _waiting(state: EvolveState, data: Mapping[str, Any]) -> None:
    state.status, state.question = Status.WAITING, str(data["question"])
    state.supervised_after = int(data["after_iteration"])


def _ended(reason: str) -> Callable[[EvolveState, Mapping[str, Any]], None]:
    def end(state: EvolveState, data: Mapping[str, Any]) -> None:
        why = str(data.get("reason", reason))
        state.status = Status.FAILED if why == "baseline_failed" else Status.STOPPED
        state.stop_reason, state.question = why, None
        state.error = str(data["detail"]) if "detail" in data else None

    return end


def _paused(state: EvolveState, data: Mapping[str, Any]) -> None:
    state.status = Status.PAUSED


def _resumed(state: EvolveState, data: Mapping[str, Any]) -> None:
    if state.status is not Status.WAITING:  # a waiting run needs an answer, not a resume
        if state.stop_reason == "worker_failed":  # mended, one hopes: new evidence is needed
            state.supervised_after = state.last_judged
        state.status, state.stop_reason = Status.RUNNING, None


_LIFECYCLE: dict[str, Callable[[EvolveState, Mapping[str, Any]], None]] = {
    "waiting_for_human": _waiting,
    "human_declined": _ended("declined"),
    "stop_requested": _ended("user"),
    "stopped": _ended("stopped"),
    "paused": _paused,
    "resumed": _resumed,
}


def _generation_started(state: EvolveState, data: Mapping[str, Any]) -> None:
    state.started = int(data["iteration"])
    state.generation = int(data["size"])
    state.members, state.confirmation = {}, None


def _candidate_measured(state: EvolveState, data: Mapping[str, Any]) -> None:
    if state.started != int(data["iteration"]):
        return
    measurement = data["measurement"]
    state.members[int(data["candidate"])] = {
        "verdict": dict(data["verdict"]),
        "ok": bool(measurement.get("ok")),
        "components": dict(measurement.get("components", {})),
        "signature": str(data.get("signature", "")),
        "commit": data.get("commit"),
        "tree": data.get("tree"),
        "agent": data.get("agent"),
        "seconds": data.get("seconds"),
    }


def _candidate_confirmed(state: EvolveState, data: Mapping[str, Any]) -> None:
    if state.started == int(data["iteration"]):
        state.confirmation = dict(data)


# A generation's own events: its start, each candidate's judgement, the winner's confirmation.
_GENERATION: dict[str, Callable[[EvolveState, Mapping[str, Any]], None]] = {
    "generation_started": _generation_started,
    "candidate_measured": _candidate_measured,
    "candidate_confirmed": _candidate_confirmed,
}


def _judged(state: EvolveState, data: Mapping[str, Any]) -> None:
    iteration = int(data["iteration"])
    verdict = data["verdict"]
    admitted = bool(verdict["admitted"])
    # Only what decisions and prompts need: a run of thousands of iterations keeps no stage output.
    state.judged[iteration] = {
        "verdict": dict(verdict),
        "signature": str(data.get("signature", "")),
        "components": dict(data["measurement"].get("components", {})),
    }
    state.last_judged = iteration
    state.started = None
    _end_generation(state)
    state.active_seconds += float(data.get("seconds", 0.0))
    state.records.append(IterationRecord(iteration, admitted, str(data.get("signature", ""))))
    if admitted:
        state.pending = PendingAdmission(
            iteration,
            int(data["version"]),
            str(data["commit"]),
            _floats(data["measurement"]),
        )


def _end_generation(state: EvolveState) -> None:
    state.generation, state.members, state.confirmation = 0, {}, None


def _floats(data: Mapping[str, Any]) -> dict[str, float]:
    return {str(k): float(v) for k, v in dict(data["components"]).items()}


# --- what to do next ------------------------------------------------------------------------

Action = Literal[
    "idle",  # paused, waiting for a person, stopped or failed: nothing runs
    "abandon",  # an iteration was started and never judged: record it, then redo it
    "generation",  # a generation was started and not decided: judge its missing candidates
    "admit",  # a judged admission lacks its version: finish it (branch, tag, event)
    "baseline_failed",  # the seed itself did not pass the judge
    "intervene",  # a stall or loop: a debate proposes new directions
    "ask_human",  # interventions stopped paying off: ask a person
    "stop",  # a stop rule holds
    "iterate",  # run the next iteration
]


@dataclass(frozen=True, slots=True)
class Next:
    action: Action
    detection: Detection | None = None
    reason: str | None = None


def next_action(state: EvolveState, supervisor: SupervisorSpec, stop: StopSpec) -> Next:
    """The one thing the runtime does next. Order matters: unfinished work first (an
    interrupted iteration, a half-made admission), then the baseline's fate, then the
    supervisor, then the stop rules, and only then a new iteration."""
    if state.status is not Status.RUNNING:
        return Next("idle")
    if state.started is not None:
        return Next("generation" if state.generation else "abandon")
    if state.pending is not None:
        return Next("admit")
    if 0 in state.judged and not state.versions:
        return Next("baseline_failed")
    if state.versions:
        incumbent = state.versions[-1].components  # the target is met by one version, whole
        reason = should_stop(state.last_judged, state.active_seconds / 60, incumbent, stop)
        if reason is None and cost_cap_reached(state.cost_usd, stop):
            return Next("stop", reason="max_total_cost")  # before an intervention spends more
        since = [r for r in state.records if r.iteration > max(state.supervised_after, 0)]
        if broken_worker(since, supervisor):
            return Next("stop", reason="worker_failed")
        detection = detect(since, supervisor)
        if detection is not None:
            if needs_human(state.interventions_without_new_best, supervisor):
                return Next("ask_human", detection)
            return Next("intervene", detection)
        if reason is not None:
            return Next("stop", reason=reason)
    return Next("iterate")
