"""A generation folded from hand-written events (docs/evolve.md, "Generations"): its start, each
candidate's measurement, the winner's confirmation and the decision, and the next action at each
step: a generation started and not decided is judged again, never abandoned."""

from __future__ import annotations

from typing import Any

from freemad.core.evolve.fold import EvolveState, Next, PendingAdmission, fold, next_action
from freemad.core.evolve.supervisor import IterationRecord
from tests.core.test_evolve_fold import STOP, SUPERVISOR, Event, baseline, judged, version


def started(iteration: int = 1, size: int = 3) -> Event:
    data = {
        "iteration": iteration,
        "size": size,
        "parent_version": 0,
        "parent_commit": "c0",
        "directives": [],
    }
    return ("generation_started", data)


def proposed(candidate: int, iteration: int = 1) -> Event:
    data = {"iteration": iteration, "candidate": candidate, "agent": "worker", "ok": True}
    return ("candidate_proposed", {**data, "summary": "s"})


def measured(
    candidate: int, admitted: bool, runtime: float, iteration: int = 1, signature: str = ""
) -> Event:
    data: dict[str, Any] = {
        "iteration": iteration,
        "candidate": candidate,
        "tree": f"t{candidate}",
        "stages": [],
        "measurement": {"ok": True, "components": {"runtime_ms": runtime}},
        "signature": signature,
        "verdict": {"admitted": admitted, "reason": f"r{candidate}"},
        "commit": f"k{candidate}",
        "agent": "worker",
        "seconds": 4.0,
    }
    return ("candidate_measured", data)


def member(candidate: int, admitted: bool, runtime: float, signature: str = "") -> dict[str, Any]:
    return {
        "verdict": {"admitted": admitted, "reason": f"r{candidate}"},
        "ok": True,
        "components": {"runtime_ms": runtime},
        "signature": signature,
        "commit": f"k{candidate}",
        "tree": f"t{candidate}",
        "agent": "worker",
        "seconds": 4.0,
    }


def confirmed(iteration: int = 1, admitted: bool = True) -> Event:
    data = {
        "iteration": iteration,
        "candidate": 1,
        "runs": 2,
        "verdict": {"admitted": admitted, "reason": "confirmed by 2 more run(s)"},
    }
    return ("candidate_confirmed", data)


def decided(winner: int | None, runtime: float = 30.0, iteration: int = 1) -> Event:
    """The generation's candidate_judged: the winner's data, every candidate's outcome."""
    admitted = winner is not None
    data: dict[str, Any] = {
        "iteration": iteration,
        "tree": "t1",
        "stages": [],
        "measurement": {"ok": True, "components": {"runtime_ms": runtime}},
        "signature": "" if admitted else "bench: slow",
        "verdict": {"admitted": admitted, "reason": "best of 3"},
        "protected": [],
        "seconds": 12.0,
        "candidate": winner,
        "generation": {
            "size": 3,
            "candidates": [
                {"candidate": 0, "outcome": "beaten" if admitted else "rejected"},
                {"candidate": 1, "outcome": "admitted" if admitted else "rejected"},
                {"candidate": 2, "outcome": "failed"},
            ],
        },
    }
    if admitted:
        data.update(commit="k1", version=1)
    return ("candidate_judged", data)


def generation(state: EvolveState) -> tuple[int | None, int, dict[int, Any], Any]:
    return state.started, state.generation, state.members, state.confirmation


def step(state: EvolveState) -> Next:
    return next_action(state, SUPERVISOR, STOP)


def test_a_started_generation_is_in_flight_and_judged_again_not_abandoned() -> None:
    state = fold("r", [*baseline(), started(1, 3)])
    assert generation(state) == (1, 3, {}, None)
    assert step(state) == Next("generation")
    state = fold("r", [proposed(0), proposed(1), proposed(2)], onto=state)
    assert generation(state) == (1, 3, {}, None)  # a proposal is not a measurement
    assert step(state) == Next("generation")


def test_each_measured_candidate_is_kept_by_its_index() -> None:
    state = fold("r", [*baseline(), started(), measured(2, False, 60.0, signature="bench: slow")])
    assert state.members == {2: member(2, False, 60.0, "bench: slow")}
    state = fold("r", [measured(0, True, 40.0), measured(1, True, 30.0)], onto=state)
    assert state.members == {
        0: member(0, True, 40.0),
        1: member(1, True, 30.0),
        2: member(2, False, 60.0, "bench: slow"),
    }
    assert (state.started, state.generation, state.confirmation) == (1, 3, None)
    assert (state.last_judged, state.judged.keys(), state.pending) == (0, {0}, None)
    assert state.active_seconds == 6.0  # a candidate's seconds count once, when decided
    assert step(state) == Next("generation")


def test_a_measurement_with_only_its_required_data_takes_the_defaults() -> None:
    bare = {"iteration": 1, "candidate": 0, "measurement": {}, "verdict": {"admitted": False}}
    state = fold("r", [*baseline(), started(), ("candidate_measured", bare)])
    assert state.members == {
        0: {
            "verdict": {"admitted": False},
            "ok": False,
            "components": {},
            "signature": "",
            "commit": None,
            "tree": None,
            "agent": None,
            "seconds": None,
        }
    }


def test_a_measurement_or_confirmation_of_another_iteration_is_ignored() -> None:
    state = fold("r", [*baseline(), started(2), measured(0, True, 40.0, iteration=1)])
    state = fold("r", [confirmed(iteration=1), confirmed(iteration=3)], onto=state)
    assert generation(state) == (2, 3, {}, None)
    # Nothing in flight: a late measurement or confirmation changes nothing.
    idle = fold("r", [*baseline(), measured(0, True, 40.0, iteration=0), confirmed(iteration=0)])
    assert generation(idle) == (None, 0, {}, None)
    assert step(idle) == Next("iterate")


def test_the_winners_confirmation_is_kept_whole() -> None:
    state = fold("r", [*baseline(), started(), measured(1, True, 30.0), confirmed()])
    assert state.confirmation == {
        "iteration": 1,
        "candidate": 1,
        "runs": 2,
        "verdict": {"admitted": True, "reason": "confirmed by 2 more run(s)"},
    }
    assert state.members == {1: member(1, True, 30.0)}
    assert step(state) == Next("generation")


def test_a_generation_started_again_forgets_what_its_candidates_measured() -> None:
    state = fold("r", [*baseline(), started(1, 3), measured(1, True, 30.0), confirmed()])
    state = fold("r", [started(1, 2)], onto=state)
    assert generation(state) == (1, 2, {}, None)


def test_resuming_a_generation_is_a_record_only() -> None:
    events = [*baseline(), started(), measured(0, True, 40.0)]
    before = fold("r", events)
    resumed = ("generation_resumed", {"iteration": 1, "judged": [0], "redo": [1, 2]})
    after = fold("r", [*events, resumed])
    assert generation(after) == generation(before) == (1, 3, {0: member(0, True, 40.0)}, None)
    assert after.events == before.events + 1
    assert step(after) == Next("generation")


def test_the_decision_ends_the_generation_and_admits_the_winner() -> None:
    events = [
        *baseline(),
        started(),
        *(proposed(k) for k in range(3)),
        measured(0, True, 40.0),
        measured(1, True, 30.0),
        measured(2, False, 90.0, signature="tests: x"),
        confirmed(),
        decided(1),
    ]
    state = fold("r", events)
    assert generation(state) == (None, 0, {}, None)
    assert state.judged[1] == {
        "verdict": {"admitted": True, "reason": "best of 3"},
        "signature": "",
        "components": {"runtime_ms": 30.0},
    }
    assert state.pending == PendingAdmission(1, 1, "k1", {"runtime_ms": 30.0})
    assert state.records[-1] == IterationRecord(1, True, "")
    assert (state.last_judged, state.active_seconds) == (1, 18.0)
    assert step(state) == Next("admit")
    state = fold("r", [version(1, 30.0)], onto=state)
    assert state.pending is None
    assert step(state) == Next("iterate")
    assert state.next_iteration == 2


def test_a_generation_without_a_winner_is_judged_rejected() -> None:
    events = [*baseline(), started(), measured(0, False, 60.0), decided(None, 60.0)]
    state = fold("r", events)
    assert generation(state) == (None, 0, {}, None)
    assert state.pending is None
    assert state.records[-1] == IterationRecord(1, False, "bench: slow")
    assert step(state) == Next("iterate")


def test_an_abandoned_generation_is_forgotten_and_redone() -> None:
    events = [*baseline(), started(), measured(0, True, 40.0), confirmed()]
    abandoned = ("iteration_abandoned", {"iteration": 1, "reason": "killed"})
    state = fold("r", [*events, abandoned])
    assert generation(state) == (None, 0, {}, None)
    assert step(state) == Next("iterate")
    assert state.next_iteration == 1


def test_a_single_candidate_iteration_in_flight_is_abandoned() -> None:
    state = fold("r", [*baseline(), ("iteration_started", {"iteration": 1})])
    assert generation(state) == (1, 0, {}, None)
    assert step(state) == Next("abandon")
    # A generation of size 0 is no generation.
    state = fold("r", [*baseline(), started(1, 0)])
    assert step(state) == Next("abandon")


def test_a_paused_generation_waits() -> None:
    state = fold("r", [*baseline(), started(), ("paused", {})])
    assert step(state) == Next("idle")


def test_detection_ignores_the_iteration_an_intervention_followed() -> None:
    intervention = ("intervention", {"after_iteration": 3, "detection": "stall", "directions": []})
    events = [
        *baseline(),
        *judged(1, False, 60.0),
        *judged(2, False, 61.0),
        *judged(3, False, 62.0),
        intervention,
        *judged(4, False, 63.0),
        *judged(5, False, 64.0),
    ]
    # Iterations 4 and 5 only: short of the stall window of 3, whatever came before.
    assert step(fold("r", events)) == Next("iterate")
    events += judged(6, False, 65.0)
    assert step(fold("r", events)).action == "ask_human"
