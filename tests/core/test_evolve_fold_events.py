"""What an evolve run's events fold into, field by field: the view `status` prints, the judged
iterations, the pending admission, the directions and the ends of a run."""

from __future__ import annotations

from typing import Any

import pytest

from freemad.config.evolve_section import StopConfig, SupervisorConfig
from freemad.core.evolve.fold import Next, PendingAdmission, Status, Version, fold, next_action
from freemad.core.evolve.judge import Measurement
from freemad.core.evolve.supervisor import Directive, IterationRecord
from tests.core.test_evolve_fold import baseline, created, judged, version
from tests.evolve.judging import judge_config

COMPARATOR = judge_config([{"component": "runtime_ms", "direction": "minimize"}]).comparator


def test_a_run_with_two_versions_as_status_shows_it() -> None:
    events = [*baseline(50.0), *judged(1, False, 60.0, "bench: slow"), *judged(2, True, 40.0)]
    state = fold("r", [*events, version(2, 40.0)])
    assert state.events == 9
    assert state.view() == {
        "run_id": "r",
        "status": "running",
        "stop_reason": None,
        "error": None,
        "goal": "faster",
        "branch": "freemad/evolve/r",
        "seed_commit": "seed",
        "iterations_judged": 2,
        "versions": 2,
        "incumbent": {
            "version": "v2",
            "iteration": 2,
            "commit": "c2",
            "components": {"runtime_ms": 40.0},
        },
        "interventions": 0,
        "question": None,
        "cost_usd": 0.0,
    }
    assert (state.goal_hash, state.judge_hash) == ("g", "j")
    assert state.versions == [
        Version(0, 0, "c0", {"runtime_ms": 50.0}),
        Version(2, 2, "c2", {"runtime_ms": 40.0}),
    ]
    assert state.records == [
        IterationRecord(0, True, ""),
        IterationRecord(1, False, "bench: slow"),
        IterationRecord(2, True, ""),
    ]
    assert state.judged[1] == {
        "verdict": {"admitted": False, "reason": "r"},
        "signature": "bench: slow",
        "components": {"runtime_ms": 60.0},
    }
    assert state.active_seconds == 18.0
    assert state.admitted_measurements() == [
        Measurement(True, {"runtime_ms": 50.0}),
        Measurement(True, {"runtime_ms": 40.0}),
    ]
    assert state.best(COMPARATOR) == {"runtime_ms": 40.0}


def test_a_new_run_shows_no_incumbent() -> None:
    state = fold("r", [created()])
    assert state.view()["incumbent"] is None
    assert state.view()["iterations_judged"] == 0
    assert state.events == 1


def test_a_judged_admission_is_pending_until_its_version() -> None:
    state = fold("r", [*baseline(), *judged(1, True, 30.0)])
    assert state.pending == PendingAdmission(1, 1, "c1", {"runtime_ms": 30.0})
    assert fold("r", [version(1, 30.0)], onto=state).pending is None


def test_judging_without_seconds_or_signature_or_components_counts_nothing() -> None:
    data: dict[str, Any] = {
        "iteration": 0,
        "measurement": {"ok": False},
        "verdict": {"admitted": False, "reason": "r"},
    }
    state = fold("r", [created(), ("candidate_judged", data)])
    assert state.active_seconds == 0.0
    assert state.records == [IterationRecord(0, False, "")]
    assert state.judged[0] == {
        "verdict": {"admitted": False, "reason": "r"},
        "signature": "",
        "components": {},
    }


def test_interventions_count_until_a_new_best_not_the_baseline() -> None:
    intervention = ("intervention", {"after_iteration": 3, "directions": ["try caching"]})
    state = fold("r", [*baseline(), intervention, intervention])
    assert state.interventions_without_new_best == 2
    assert state.supervised_after == 3
    assert state.interventions == [dict(intervention[1]), dict(intervention[1])]
    assert state.directives == [Directive("try caching", 3, 5), Directive("try caching", 3, 5)]
    assert fold("r", [version(4, 10.0)], onto=state).interventions_without_new_best == 0
    again = fold("r", [created(), intervention, version(0, 50.0)])
    assert again.interventions_without_new_best == 1
    bare = fold("r", [("intervention", {"after_iteration": 1})], ttl=2)
    assert bare.directives == []
    assert bare.interventions_without_new_best == 1


@pytest.mark.parametrize(
    ("kind", "data", "status", "reason", "error"),
    [
        ("stopped", {}, Status.STOPPED, "stopped", None),
        (
            "stopped",
            {"reason": "baseline_failed", "detail": "tests"},
            Status.FAILED,
            "baseline_failed",
            "tests",
        ),
        ("stopped", {"reason": "target", "detail": 7}, Status.STOPPED, "target", "7"),
        ("stop_requested", {}, Status.STOPPED, "user", None),
        ("human_declined", {}, Status.STOPPED, "declined", None),
    ],
)
def test_the_ends_of_a_run(
    kind: str, data: dict[str, Any], status: Status, reason: str, error: str | None
) -> None:
    waiting = ("waiting_for_human", {"question": "q?", "after_iteration": 2})
    state = fold("r", [*baseline(), waiting, (kind, data)])
    assert (state.status, state.stop_reason, state.error, state.question) == (
        status,
        reason,
        error,
        None,
    )


def test_a_persons_answer_resets_the_interventions_and_guides_from_the_last_judged() -> None:
    intervention = ("intervention", {"after_iteration": 1, "directions": []})
    waiting = ("waiting_for_human", {"question": "q?", "after_iteration": 1})
    state = fold("r", [*baseline(), *judged(1, False, 60.0), intervention, intervention, waiting])
    assert (state.status, state.question, state.supervised_after) == (Status.WAITING, "q?", 1)
    assert state.interventions_without_new_best == 2
    state = fold("r", [("human_answer", {"text": "cache it"})], onto=state)
    assert (state.status, state.question) == (Status.RUNNING, None)
    assert state.interventions_without_new_best == 0
    assert state.directives == [Directive("cache it", 1, 5)]


def test_the_wall_clock_counts_judged_seconds_in_minutes() -> None:
    stop = StopConfig(max_iterations=100, max_wall_clock_minutes=0.2)  # 12 s
    supervisor = SupervisorConfig(stall_window=50, loop_threshold=50)
    # The baseline took 6 s: under the limit.
    assert next_action(fold("r", baseline()), supervisor, stop) == Next("iterate")
    # One more judged iteration of 6 s: 12 s, the limit exactly.
    events = [*baseline(), *judged(1, False, 60.0, "a")]
    assert next_action(fold("r", events), supervisor, stop) == Next("stop", reason="max_wall_clock")
