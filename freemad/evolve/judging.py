"""Running the judge's stages on a candidate's worktree, in the sandbox, and recording what they did."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from freemad.config.evolve import StageConfig
from freemad.core.evolve import Measurement, StageOutcome, measure, parse_stage
from freemad.sandbox.port import Sandbox, View

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
            why = result.stderr.strip().splitlines()[0] if result.stderr.strip() else "not run"
            outcome = StageOutcome(stage.name, False, {}, why)
        else:
            outcome = parse_stage(stage, result.exit_code, result.stdout, result.timed_out)
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
