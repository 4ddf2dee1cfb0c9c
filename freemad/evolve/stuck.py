"""What an evolve run says when it is stuck or its workers are broken: the problem a redirecting
debate is given, the question a person is asked, and the detail of a `worker_failed` stop with
what mends it. Pure: a run's state and its supervisor settings in, text out."""

from __future__ import annotations

from freemad.config.evolve_section import SupervisorConfig
from freemad.core.evolve.fold import EvolveState, Next

# What to do about a worker whose tooling failed the same way in a row, by its call's status.
_MENDS = {
    "spawn_error": "check the agent's cli_command and that its program is installed",
    "not_logged_in": "log the agent's CLI in",
    "timeout": "raise evolve.worker_budget.timeout_sec, or use a faster agent",
    "exit_error": "run the agent's command by hand to see its whole error",
}


def problem(state: EvolveState, step: Next, supervisor: SupervisorConfig) -> str:
    """Why the supervisor stepped in: a loop of one rejection, or a stall without admissions."""
    if step.detection == "loop":
        signature = state.records[-1].signature
        return (
            f"the last {supervisor.loop_threshold} candidates were rejected for the same "
            f"reason ({signature})"
        )
    return f"no candidate was admitted in the last {supervisor.stall_window} iterations"


def question(state: EvolveState, step: Next, supervisor: SupervisorConfig, config_arg: str) -> str:
    """The question a person is asked once interventions have stopped paying off."""
    incumbent = state.incumbent
    assert incumbent is not None
    scores = ", ".join(f"{k}={v:g}" for k, v in incumbent.components.items())
    tried = len(state.interventions)
    return (
        f"Evolve run {state.run_id} is stuck at v{incumbent.version} ({scores}): "
        f"{problem(state, step, supervisor)}, and {tried} intervention(s) brought no new best. "
        f"What should the workers try next? Answer with: freemad evolve answer "
        f'{state.run_id} "DIRECTION"{config_arg}, or end the run with --decline.'
    )


def broken_workers(state: EvolveState, window: int) -> str:
    """The cause of a `worker_failed` stop, from the last verdict, and what mends it."""
    reason = str(state.judged[state.last_judged]["verdict"]["reason"])
    cause = reason.rpartition("(")[2].rstrip(")")
    mend = _MENDS.get(cause, "fix the agent")
    return (
        f"{reason}, in each of the last {window} iterations; {mend}, check with 'freemad "
        f"evolve validate' (it starts every agent where its calls run), then 'freemad evolve "
        f"resume {state.run_id}'"
    )
