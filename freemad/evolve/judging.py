"""Judging a candidate: its worktree made ready, the judge's stages run in the sandbox, what they
did recorded, and the verdict (with its commit, when admitted)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from freemad.agents.outputs import cause_line
from freemad.config.evolve_section import EvolveConfig, StageConfig
from freemad.core.evolve import (
    REPLY_STAGE,
    WORKER_STAGE,
    Measurement,
    StageOutcome,
    failure_signature,
    judge,
    measure,
    parse_stage,
)
from freemad.core.evolve.fold import EvolveState
from freemad.core.evolve.git_names import commit_message
from freemad.sandbox.sandbox_port import Sandbox, View
from freemad.workspace.repository_port import RunLineage

_TAIL = 2000  # characters of a stage's output kept in the judged event


def sandbox_problem(*boxes: Sandbox | None) -> str | None:
    """The first of these sandboxes that cannot run, as one line naming the setting that chose
    it; None when all can."""
    for box in boxes:
        if box is None:
            continue
        problem = box.problem()
        if problem:
            where = "evolve.judge.container" if box.kind == "container" else "security.sandbox"
            return f"{where}: {problem}"
    return None


def run_stages(
    stages: Sequence[StageConfig], sandbox: Sandbox, worktree: Path, view: View | None = None
) -> tuple[Measurement, list[dict[str, Any]]]:
    """Run the stages in order until one fails; the measurement, and one record per stage run."""
    outcomes: list[StageOutcome] = []
    records: list[dict[str, Any]] = []
    seen = view or View.of([worktree])
    for stage in stages:
        result = sandbox.run(stage.command_words, worktree, stage.timeout_sec, seen)
        if result.exit_code is None and not result.timed_out:
            # Never started (a missing program, an unusable container runtime): say which.
            outcome = StageOutcome(stage.name, False, {}, cause_line(result.stderr) or "not run")
        else:
            outcome = parse_stage(stage, result.exit_code, result.stdout, result.timed_out)
            cause = cause_line(result.stderr) if result.exit_code else ""
            if cause:  # "exited with status 1" alone hides the cause a failed stage printed
                outcome = replace(outcome, reason=f"{outcome.reason}: {cause}")
        outcomes.append(outcome)
        records.append(
            {
                "name": stage.name,
                "ok": outcome.ok,
                "components": outcome.components,
                "reason": outcome.reason,
                "exit_code": result.exit_code,
                "timed_out": result.timed_out,
                "seconds": round(result.duration, 3),
                "stdout_tail": result.stdout[-_TAIL:],
                "stderr_tail": result.stderr[-_TAIL:],
            }
        )
        if not outcome.ok:
            break
    return measure(outcomes), records


def measurement_data(measurement: Measurement) -> dict[str, Any]:
    return {
        "ok": measurement.ok,
        "components": measurement.components,
        "failed_stage": measurement.failed_stage,
        "reason": measurement.reason,
    }


# A worker's failures that are its tooling's, not its idea's: no direction mends them.
_TOOLING = frozenset({"spawn_error", "exit_error", "not_logged_in", "timeout"})


def worker_failure(proposal: Mapping[str, Any] | None) -> Measurement | None:
    """What a candidate whose worker failed measures, when it changed nothing: the worker's
    failure and its call's status, said as the worker's (its tooling's or its reply's), not
    the judge's."""
    if proposal is None or proposal.get("ok", True):
        return None
    cause = str(proposal.get("cause") or "failed")
    summary = str(proposal.get("summary") or "no detail")
    stage = WORKER_STAGE if cause in _TOOLING else REPLY_STAGE
    return Measurement(False, {}, stage, f"{summary} ({cause})")


def measure_candidate(
    evolve: EvolveConfig,
    sandbox: Sandbox,
    state: EvolveState,
    lineage: RunLineage,
    parent: str,
    proposal: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], str | None]:
    """Restore what is protected, fix the tree, run the stages and decide: the judged
    event's data, and the diff against `parent` to keep (no store writes: a generation calls
    this from its worker threads). `sandbox` is where the stages run; `proposal`, the
    candidate_proposed event's data, says why a candidate that changes nothing does not."""
    judge_cfg = evolve.judge
    protected = judge_cfg.protected_paths
    lineage.restore_protected(protected)
    tree = lineage.stage()
    editable = evolve.editable_paths
    taken_back: list[str] = []
    if editable is not None and state.incumbent is not None:  # the seed is never confined
        taken_back = lineage.confine(tree, parent, editable)
        if taken_back:
            tree = lineage.stage()
    changed = lineage.changed_paths(tree, parent)
    escaping = lineage.escaping_symlinks()
    incumbent = state.incumbent
    stages: list[dict[str, Any]] = []
    if incumbent is not None and not changed:
        failed = worker_failure(proposal)
        measurement = failed or Measurement(False, {}, None, "the candidate changes nothing")
    elif escaping:
        where = ", ".join(escaping[:5])
        measurement = Measurement(False, {}, None, f"symlinks lead out of the worktree: {where}")
    else:
        view = View.of(
            [lineage.worktree],
            [lineage.worktree / path for path in protected],
            [lineage.common],
        )
        measurement, stages = run_stages(judge_cfg.stages, sandbox, lineage.worktree, view)
    best = state.best(judge_cfg.comparator)
    previous = Measurement(True, dict(incumbent.components)) if incumbent else None
    verdict = judge(measurement, previous, best, judge_cfg)
    data: dict[str, Any] = {
        "tree": tree,
        "changed_paths": changed[:200],
        "stages": stages,
        "measurement": measurement_data(measurement),
        "signature": failure_signature(measurement),
        "verdict": {"admitted": verdict.admitted, "reason": verdict.reason},
        "protected": lineage.protected_ids(tree, protected),
    }
    if taken_back:
        data["outside_editable"] = taken_back[:200]
    diff = lineage.diff(tree, parent) if changed and incumbent is not None else None
    if verdict.admitted:
        if incumbent is None:
            data.update(commit=state.seed_commit, version=0)
        else:
            version = incumbent.version + 1
            message = commit_message(
                state.goal, state.run_id, version, state.next_iteration, measurement.components
            )
            data.update(commit=lineage.commit(tree, parent, message), version=version)
    return data, diff
