"""A generation judged across runners: planned in one job, each candidate worked and judged in a
job of its own, the results admitted in one more (the GitHub flow: `freemad.github.evolve_matrix`).

The three steps share the local runtime's code (`freemad.evolve.generations`), so a generation
judged this way makes the same events and the same decision as one judged on one machine:

- `plan` carries the run on (its baseline, admissions, interventions) up to the next generation,
  records `generation_started` as a local run does, and names the candidates still to judge: a
  generation in flight is resumed, only its candidates without a `candidate_measured` planned.
- `work` is one candidate's worker call and judgement on its own worktree, as locally (the
  worker's request says its generation and candidate); it stores nothing: its caller carries the
  result (`candidate_measured`'s data, the proposal, the diff) to the admitting job.
- `admit` stores each result not stored yet (keyed by generation and candidate, so a result
  brought twice adds nothing twice) once `check` has found it well-formed, with the verdict that
  the judge gives for its measurement; a refused result is stored as a failed candidate. Once
  every candidate of the generation is in, the decision, confirmation and admission are the
  local runtime's, and the run is carried on to the next generation, which it does not start.
  A candidate without a result (its job failed or was cancelled) is planned again by the next
  `plan`: the local resume rule.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from freemad import runner as event_loop
from freemad.core.evolve import Measurement, judge
from freemad.core.evolve.fold import EvolveState, Status
from freemad.errors import UsageError
from freemad.evolve import generations
from freemad.evolve.evolve_runner import EvolveRunner
from freemad.evolve.judging import sandbox_problem
from freemad.workspace.repository_port import RunLineage

# The candidate jobs' setup beyond the worker call and the stages: a runner's start, the
# checkouts, installing FREE-MAD and the agent CLIs, the artifact's upload (generous on purpose).
SETUP_SECONDS = 600
_REFUSED = "refused"  # a refused result's failure signature
# The keys of `candidate_proposed`'s data a result may carry (`Variation.propose` makes them);
# any other is dropped.
_PROPOSED = (
    "iteration",
    "candidate",
    "agent",
    "ok",
    "cause",
    "summary",
    "written",
    "refused",
    "commands",
    "debate_run_id",
    "debate_status",
    "debate_agents",
    "cost_usd",
    "plan",
    "context_cut",
)
# The keys of `candidate_measured`'s data a result may carry; any other is dropped.
_MEASURED = (
    "iteration",
    "candidate",
    "tree",
    "changed_paths",
    "stages",
    "measurement",
    "signature",
    "verdict",
    "protected",
    "outside_editable",
    "commit",
    "agent",
    "seconds",
)


class GenerationDue(Exception):
    """A generation is due (`resumed`: one is in flight, candidates missing): the runner stops."""

    def __init__(self, resumed: bool) -> None:
        super().__init__("a generation is due")
        self.resumed = resumed


class MatrixRunner(EvolveRunner):
    """The runtime, except that it judges no candidate itself: where a generation is due it
    stops (`GenerationDue`). A generation whose every candidate is measured is decided here."""

    async def generation(self, state: EvolveState, lineage: RunLineage, *, resumed: bool) -> None:
        if resumed and not missing(state):
            await generations.run(self, state, lineage, resumed=True)  # judges none: decides
            return
        raise GenerationDue(resumed)


@dataclass(frozen=True)
class Plan:
    """What `plan` leaves: the generation in flight (None: the run is not running, so nothing to
    judge) and the candidates to judge in it."""

    run_id: str
    status: str
    iteration: int | None = None
    todo: tuple[int, ...] = ()


@dataclass(frozen=True)
class Worked:
    """One candidate's work and judgement, not stored: what its job hands the admitting job."""

    run_id: str
    iteration: int
    candidate: int
    parent: str  # the incumbent's commit, the candidate commit's one parent
    proposal: dict[str, Any]
    measured: dict[str, Any]  # `candidate_measured`'s data, without a diff artifact's id
    diff: str | None


@dataclass(frozen=True)
class Admitted:
    """What `admit` did: the candidates whose results it stored, those it refused and stored as
    failed (candidate, why), those it left alone (candidate, why: stored already, not in the
    generation), and the candidates still without a result."""

    state: EvolveState
    stored: tuple[int, ...] = ()
    refused: tuple[tuple[int, str], ...] = ()
    ignored: tuple[tuple[int, str], ...] = ()
    missing: tuple[int, ...] = ()


def missing(state: EvolveState) -> list[int]:
    """The candidates of the generation in flight without a `candidate_measured`."""
    return [k for k in range(state.generation) if k not in state.members]


def carry(runner: MatrixRunner, run_id: str) -> GenerationDue | None:
    """Advance the run until a generation is due (returned) or it idles (None)."""
    try:
        runner.advance(run_id)
    except GenerationDue as due:
        return due
    return None


def plan(runner: MatrixRunner, run_id: str) -> Plan:
    """Carry the run to its next generation, start it, and name the candidates to judge."""
    due = carry(runner, run_id)
    state = runner.state(run_id)
    if due is None:
        return Plan(run_id, state.status.value)
    if not due.resumed:
        state = generations.begin(runner, state)
    return Plan(run_id, state.status.value, state.next_iteration, tuple(missing(state)))


def timeout_minutes(runner: EvolveRunner) -> int:
    """A candidate job's time limit: the worker's budget, every stage's, and the setup."""
    evolve = runner.evolve
    stages = sum(stage.timeout_sec for stage in evolve.judge.stages)
    return math.ceil((evolve.worker_budget.timeout_sec + stages + SETUP_SECONDS) / 60)


def in_flight(state: EvolveState, candidate: int) -> int:
    """The generation in flight that has `candidate`: its iteration; a UsageError otherwise."""
    if state.status is not Status.RUNNING or state.started is None or not state.generation:
        raise UsageError(
            f"run {state.run_id} has no generation in flight ({state.status.value}): plan one "
            "first (freemad github generation plan)"
        )
    if not 0 <= candidate < state.generation:
        raise UsageError(
            f"candidate {candidate} is not in generation {state.started} of run {state.run_id} "
            f"(candidates 0 to {state.generation - 1})"
        )
    return state.started


def work(runner: EvolveRunner, run_id: str, candidate: int) -> Worked | None:
    """Candidate `candidate` of the generation in flight, worked and judged on a worktree of its
    own; None when it is measured already (a re-run job). Stores nothing."""
    state = runner.state(run_id)
    number = in_flight(state, candidate)
    if candidate in state.members:
        return None
    incumbent = state.incumbent
    assert incumbent is not None  # a generation starts from one
    problem = sandbox_problem(runner.sandbox, runner.agent_box)
    if problem:
        raise UsageError(problem)
    lineage = runner.repos.lineage(
        runner.repo, run_id, state.seed_commit, runner.worktrees_dir, state.branch
    )
    worktree = lineage.candidate(candidate)
    directives = [d.text for d in state.guiding(number)]
    _ = runner.variation

    async def judged() -> tuple[dict[str, Any], dict[str, Any], str | None]:
        began = time.monotonic()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evolve-candidate") as pool:
            proposal = await generations.propose(
                runner, state, number, candidate, worktree, incumbent.commit, directives, pool
            )
            data, diff = await generations.measure(
                runner, state, candidate, worktree, incumbent.commit, pool, proposal, began
            )
        return proposal, data, diff

    try:
        proposal, data, diff = event_loop.run(judged())
    finally:
        if candidate:
            worktree.remove()
        lineage.remove()
    return Worked(run_id, number, candidate, incumbent.commit, proposal, data, diff)


# --- checking a result brought from another job ------------------------------------------------


def check(
    runner: EvolveRunner, state: EvolveState, candidate: int, measured: Any, proposal: Any
) -> str | None:
    """Why `measured` (a result's `candidate_measured` data, for `candidate` of the generation in
    flight) cannot be stored, in one line; None when it can. Its verdict must be the judge's on
    its measurement against the incumbent: a result cannot declare itself admitted."""
    if not isinstance(measured, Mapping) or not isinstance(proposal, Mapping):
        return "its measured data or proposal is not an object"
    number = state.started
    if measured.get("iteration") != number or measured.get("candidate") != candidate:
        found = (measured.get("iteration"), measured.get("candidate"))
        return f"it is for generation {found[0]!r} candidate {found[1]!r}, not {number} {candidate}"
    shape = _proposal_shape(proposal, number, candidate) or _shape(measured)
    if shape:
        return shape
    taken = measured["measurement"]
    measurement = Measurement(
        bool(taken["ok"]),
        {str(k): float(v) for k, v in taken["components"].items()},
        taken.get("failed_stage"),
        str(taken.get("reason") or ""),
    )
    incumbent = state.incumbent
    assert incumbent is not None
    judge_cfg = runner.evolve.judge
    previous = Measurement(True, dict(incumbent.components))
    verdict = judge(measurement, previous, state.best(judge_cfg.comparator), judge_cfg)
    claimed = measured["verdict"]
    if (verdict.admitted, verdict.reason) != (claimed["admitted"], claimed["reason"]):
        return f"its verdict is not the judge's on its measurement ({verdict.reason})"
    if verdict.admitted and not _object_id(measured.get("commit")):
        return "the judge admits it, but it names no commit"
    return None


def _shape(measured: Mapping[str, Any]) -> str | None:
    """What is wrong with the fields a decision reads, or None."""
    verdict, taken = measured.get("verdict"), measured.get("measurement")
    if not isinstance(verdict, Mapping) or not isinstance(taken, Mapping):
        return "it has no verdict or measurement object"
    if not isinstance(verdict.get("admitted"), bool) or not isinstance(verdict.get("reason"), str):
        return "its verdict is not {admitted: bool, reason: text}"
    components = taken.get("components")
    if not isinstance(taken.get("ok"), bool) or not isinstance(components, Mapping):
        return "its measurement is not {ok: bool, components: {...}}"
    for name, value in components.items():
        if not isinstance(name, str) or not _finite(value):
            return f"its component {str(name)[:40]!r} is not a finite number"
    for name in ("failed_stage", "reason"):
        if taken.get(name) is not None and not isinstance(taken[name], str):
            return f"its measurement's {name} is not text"
    for name in ("signature", "agent"):
        if measured.get(name) is not None and not isinstance(measured[name], str):
            return f"its {name} is not text"
    if not _finite(measured.get("seconds", 0)) or float(measured.get("seconds", 0)) < 0:
        return "its seconds is not a number of seconds"
    for name in ("commit", "tree"):
        if measured.get(name) is not None and not _object_id(measured[name]):
            return f"its {name} is not a git object id"
    return None


def _proposal_shape(proposal: Mapping[str, Any], number: int | None, k: int) -> str | None:
    """What is wrong with a proposal's fields (the report, the dashboards and cost limits read
    them), or None."""
    if proposal.get("candidate") != k or proposal.get("iteration") != number:
        return "its proposal is for another generation or candidate"
    if not isinstance(proposal.get("ok"), bool):
        return "its proposal's ok is not true or false"
    for name in ("agent", "cause", "summary", "debate_run_id", "debate_status", "plan"):
        if proposal.get(name) is not None and not isinstance(proposal[name], str):
            return f"its proposal's {name} is not text"
    for name in ("written", "refused", "commands", "debate_agents"):
        if proposal.get(name) is not None and not isinstance(proposal[name], list):
            return f"its proposal's {name} is not a list"
    cost = proposal.get("cost_usd", 0.0)
    if not _finite(cost) or cost < 0:
        return "its proposal's cost_usd is not a number of dollars"
    return None


def proposal_data(proposal: Mapping[str, Any]) -> dict[str, Any]:
    """A checked proposal's data as stored: the keys a local proposal has, no other."""
    return {key: proposal[key] for key in _PROPOSED if key in proposal}


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _object_id(value: Any) -> bool:
    return (
        isinstance(value, str)
        and len(value) in (40, 64)
        and all(c in "0123456789abcdef" for c in value)
    )


def refused(state: EvolveState, candidate: int, reason: str) -> dict[str, Any]:
    """`candidate_measured`'s data for a result refused: a failed candidate, never admitted."""
    why = f"its result was refused: {reason}"
    return {
        "iteration": state.started,
        "candidate": candidate,
        "tree": None,
        "changed_paths": [],
        "stages": [],
        "measurement": {"ok": False, "components": {}, "failed_stage": None, "reason": why},
        "signature": _REFUSED,
        "verdict": {"admitted": False, "reason": why},
        "agent": None,
        "seconds": 0.0,
    }


# --- admitting ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """A result as the admitting job read it: for `candidate`, the proposal, the measured data
    and the diff; or `problem`, why it was refused before it could be read."""

    candidate: int
    proposal: Any = None
    measured: Any = None
    diff: str | None = None
    problem: str | None = None


def admit(runner: MatrixRunner, run_id: str, results: Sequence[Result]) -> Admitted:
    """Store each result not stored yet (refused ones as failed candidates); once the generation
    is complete, decide and admit it as a local run does and carry the run to the next one."""
    state = runner.state(run_id)
    if state.status is not Status.RUNNING or state.started is None or not state.generation:
        return Admitted(state)  # nothing in flight: a second admitting job, or a stopped run
    stored: list[int] = []
    refusals: list[tuple[int, str]] = []
    ignored: list[tuple[int, str]] = []
    for result in sorted(results, key=lambda r: r.candidate):
        k = result.candidate
        if k in state.members:
            ignored.append((k, f"candidate {k} of generation {state.started} is stored already"))
            continue
        if not 0 <= k < state.generation:
            ignored.append((k, f"generation {state.started} has no candidate {k}"))
            continue
        problem = result.problem or check(runner, state, k, result.measured, result.proposal)
        if problem is not None:
            refusals.append((k, problem))
            state = runner.append(run_id, [("candidate_measured", refused(state, k, problem))])
            continue
        measured = {key: result.measured[key] for key in _MEASURED if key in result.measured}
        runner.append(run_id, [("candidate_proposed", proposal_data(result.proposal))])
        state = generations.store_measured(runner, run_id, measured, result.diff)
        stored.append(k)
    if not missing(state):
        carry(runner, run_id)
        state = runner.state(run_id)
    return Admitted(state, tuple(stored), tuple(refusals), tuple(ignored), tuple(missing(state)))
