"""An evolve run as a fold over its events, and the next action decided from it (no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from freemad.config.evolve_section import StopConfig, SupervisorConfig
from freemad.core.evolve.fold import Status, fold, next_action

SUPERVISOR = SupervisorConfig(
    stall_window=3, loop_threshold=2, directions_ttl_iterations=2, max_interventions_before_human=1
)
STOP = StopConfig(max_iterations=10, target=["runtime_ms < 1"])

Event = tuple[str, dict[str, Any]]


def created() -> Event:
    return (
        "run_created",
        {
            "goal": "faster",
            "goal_hash": "g",
            "judge_hash": "j",
            "seed_commit": "seed",
            "branch": "freemad/evolve/r",
        },
    )


def judged(
    n: int, admitted: bool, runtime: float | None = None, signature: str = ""
) -> list[Event]:
    components = {} if runtime is None else {"runtime_ms": runtime}
    data: dict[str, Any] = {
        "iteration": n,
        "measurement": {"ok": runtime is not None, "components": components},
        "signature": signature,
        "verdict": {"admitted": admitted, "reason": "r"},
        "seconds": 6.0,
    }
    if admitted:
        data.update(commit=f"c{n}", version=n)
    return [("iteration_started", {"iteration": n}), ("candidate_judged", data)]


def version(n: int, runtime: float) -> Event:
    data = {"iteration": n, "version": n, "commit": f"c{n}", "components": {"runtime_ms": runtime}}
    return ("version_admitted", data)


def baseline(runtime: float = 50.0) -> list[Event]:
    return [created(), *judged(0, True, runtime), version(0, runtime)]


def decide(events: list[Event], stop: StopConfig = STOP) -> tuple[str, Any]:
    state = fold("r", events, ttl=SUPERVISOR.directions_ttl_iterations)
    step = next_action(state, SUPERVISOR, stop)
    return step.action, step.detection or step.reason


def test_a_new_run_measures_its_seed_first() -> None:
    state = fold("r", [created()])
    assert state.next_iteration == 0
    assert next_action(state, SUPERVISOR, STOP).action == "iterate"


def test_a_judged_admission_without_its_version_is_rolled_forward_not_judged_again() -> None:
    events = [created(), *judged(0, True, 50.0)]
    assert decide(events)[0] == "admit"
    state = fold("r", events)
    assert state.pending is not None and state.pending.commit == "c0"
    assert decide([*events, version(0, 50.0)])[0] == "iterate"


def test_an_iteration_started_and_never_judged_is_abandoned_then_redone() -> None:
    events = [*baseline(), ("iteration_started", {"iteration": 1})]
    assert decide(events)[0] == "abandon"
    events.append(("iteration_abandoned", {"iteration": 1, "reason": "killed"}))
    state = fold("r", events)
    assert decide(events)[0] == "iterate"
    assert state.next_iteration == 1  # the same number: max_iterations counts judged ones


def test_a_seed_the_judge_rejects_ends_the_run() -> None:
    events = [created(), *judged(0, False, None, "tests: failed")]
    assert decide(events)[0] == "baseline_failed"
    events.append(("stopped", {"reason": "baseline_failed"}))
    state = fold("r", events)
    assert state.status is Status.FAILED
    assert decide(events)[0] == "idle"


def test_the_versions_and_the_incumbent_follow_the_admissions() -> None:
    events = [*baseline(), *judged(1, False, 60.0), *judged(2, True, 30.0), version(2, 30.0)]
    state = fold("r", events)
    assert [v.version for v in state.versions] == [0, 2]
    assert state.incumbent is not None and state.incumbent.components == {"runtime_ms": 30.0}
    assert state.view()["incumbent"]["version"] == "v2"
    assert state.active_seconds == 18.0


def test_a_stall_asks_for_an_intervention_then_for_a_person() -> None:
    events = [
        *baseline(),
        *judged(1, False, 60.0),
        *judged(2, False, 61.0),
        *judged(3, False, 62.0),
    ]
    assert decide(events) == ("intervene", "stall")
    events.append(
        ("intervention", {"after_iteration": 3, "detection": "stall", "directions": ["cache"]})
    )
    state = fold("r", events, ttl=2)
    assert [d.text for d in state.guiding(4)] == ["cache"]
    assert state.guiding(6) == []  # the direction lived two iterations
    assert decide(events)[0] == "iterate"  # the evidence before the intervention is spent
    events += [*judged(4, False, 63.0), *judged(5, False, 64.0), *judged(6, False, 65.0)]
    assert decide(events) == ("ask_human", "stall")  # one intervention is the limit here


def test_a_loop_is_the_same_failure_again() -> None:
    events = [*baseline(), *judged(1, False, None, "tests: x"), *judged(2, False, None, "tests: x")]
    assert decide(events) == ("intervene", "loop")


def test_a_new_best_resets_the_interventions_count() -> None:
    events = [
        *baseline(),
        ("intervention", {"after_iteration": 0, "detection": "stall", "directions": []}),
        *judged(1, True, 40.0),
        version(1, 40.0),
    ]
    assert fold("r", events).interventions_without_new_best == 0


def test_an_answer_resumes_with_a_direction_and_a_decline_ends_the_run() -> None:
    waiting = [*baseline(), ("waiting_for_human", {"after_iteration": 0, "question": "what now?"})]
    state = fold("r", waiting)
    assert state.status is Status.WAITING and state.question == "what now?"
    assert decide(waiting)[0] == "idle"
    assert decide([*waiting, ("resumed", {})])[0] == "idle"  # a resume is not an answer

    answered = fold("r", [*waiting, ("human_answer", {"text": "memoize"})])
    assert answered.status is Status.RUNNING and answered.question is None
    assert [d.text for d in answered.guiding(1)] == ["memoize"]

    declined = fold("r", [*waiting, ("human_declined", {})])
    assert (declined.status, declined.stop_reason) == (Status.STOPPED, "declined")


@pytest.mark.parametrize(
    ("runtime", "stop", "expected"),
    [
        (0.5, STOP, "target"),
        (5.0, StopConfig(max_iterations=1), "max_iterations"),
        (5.0, StopConfig(max_iterations=1, target=["runtime_ms < 6"]), "target"),
        (5.0, StopConfig(max_iterations=5, max_wall_clock_minutes=0.1), "max_wall_clock"),
    ],
)
def test_the_stop_rules_see_the_incumbent(runtime: float, stop: StopConfig, expected: str) -> None:
    events = [*baseline(), *judged(1, True, runtime), version(1, runtime)]
    assert decide(events, stop) == ("stop", expected)


def test_a_raised_iteration_limit_carries_a_stopped_run_on() -> None:
    events = [*baseline(), *judged(1, True, 5.0), version(1, 5.0)]
    events.append(("stopped", {"reason": "max_iterations"}))
    assert decide(events, StopConfig(max_iterations=1))[0] == "idle"
    events.append(("resumed", {}))
    assert decide(events, StopConfig(max_iterations=1)) == ("stop", "max_iterations")
    assert decide(events, StopConfig(max_iterations=3))[0] == "iterate"


def test_pause_and_user_stop() -> None:
    events = [*baseline(), ("paused", {})]
    assert fold("r", events).status is Status.PAUSED
    assert decide(events)[0] == "idle"
    events.append(("stop_requested", {}))
    state = fold("r", events)
    assert (state.status, state.stop_reason) == (Status.STOPPED, "user")


def test_a_worker_whose_tooling_fails_the_same_way_stops_the_run_and_resumes_afresh() -> None:
    crash = "<worker>: exit status #: ModuleNotFoundError (exit_error)"
    events = [*baseline(), *judged(1, False, None, crash), *judged(2, False, None, crash)]
    assert decide(events) == ("intervene", "loop")  # two of three: not yet the whole window
    events += judged(3, False, None, crash)
    assert decide(events) == ("stop", "worker_failed")  # before the loop's intervention
    events.append(("stopped", {"reason": "worker_failed", "detail": "mend it"}))
    state = fold("r", events)
    assert (state.status, state.stop_reason, state.error) == (
        Status.STOPPED,
        "worker_failed",
        "mend it",
    )
    events.append(("resumed", {}))
    state = fold("r", events)
    assert state.supervised_after == 3 and state.stop_reason is None
    assert decide(events)[0] == "iterate"  # the old evidence is spent: new iterations decide
    events += judged(4, False, None, crash)
    events += judged(5, False, None, crash)
    events += judged(6, False, None, crash)
    assert decide(events) == ("stop", "worker_failed")


def test_only_a_resume_after_a_worker_failure_spends_the_evidence() -> None:
    events = [*baseline(), *judged(1, True, 5.0), version(1, 5.0)]
    events += [("stopped", {"reason": "max_iterations"}), ("resumed", {})]
    assert fold("r", events).supervised_after == 0


@pytest.mark.parametrize(
    "signatures",
    [
        ["<worker>: a", "<worker>: a", "<worker>: b"],  # not the same failure
        ["<worker reply>: a"] * 3,  # a reply may mend with directions
        ["tests: a"] * 3,  # a judge stage's failure is the candidate's
        ["worker: a"] * 3,  # a stage a config named "worker"
    ],
)
def test_other_repeated_failures_do_not_stop_the_run(signatures: list[str]) -> None:
    events = baseline()
    for n, signature in enumerate(signatures, start=1):
        events += judged(n, False, None, signature)
    assert decide(events)[1] != "worker_failed"
