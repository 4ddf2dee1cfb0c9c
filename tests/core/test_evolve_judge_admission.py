"""Admission: the gate, the lexicographic comparator with epsilon, max_regress, the baseline."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freemad.core.evolve import (
    REPLY_STAGE,
    WORKER_STAGE,
    Measurement,
    best_ever,
    judge,
    measure,
)
from tests.evolve.judging import SPEED, failed, judge_config, ok

# --- admission ----------------------------------------------------------------------------------


def test_a_failed_stage_rejects() -> None:
    verdict = judge(failed("bench", "exited with status 1"), ok(runtime_ms=5.0), {}, SPEED)
    assert verdict.admitted is False
    assert verdict.reason == "stage bench failed: exited with status 1"


def test_no_stage_at_all_rejects() -> None:
    verdict = judge(measure([]), ok(runtime_ms=5.0), {}, SPEED)
    assert verdict.reason == "the judge failed: no judge stage ran"


@pytest.mark.parametrize("stage", [WORKER_STAGE, REPLY_STAGE])
def test_a_failed_worker_is_said_to_be_the_workers_failure(stage: str) -> None:
    failure = Measurement(False, {}, stage, "exit status 1: boom")
    verdict = judge(failure, ok(runtime_ms=5.0), {}, SPEED)
    assert (verdict.admitted, verdict.reason) == (False, "the worker failed: exit status 1: boom")


def test_the_gate_rejects_even_a_faster_candidate() -> None:
    config = judge_config(
        [{"component": "runtime_ms", "direction": "minimize"}],
        gate=["tests_pass == 1", "memory_mb <= 64"],
    )
    candidate = ok(runtime_ms=1.0, memory_mb=65.0)
    verdict = judge(candidate, ok(runtime_ms=50.0, memory_mb=10.0), {}, config)
    assert verdict.admitted is False
    assert verdict.reason == "gate memory_mb <= 64.0 does not hold: memory_mb is 65.0"


def test_a_gate_on_an_unmeasured_component_rejects() -> None:
    verdict = judge(Measurement(True, {"runtime_ms": 1.0}), ok(runtime_ms=5.0), {}, SPEED)
    assert verdict.reason == "gate tests_pass == 1.0 does not hold: tests_pass was not measured"


def test_the_baseline_is_admitted_when_it_succeeds_and_passes_the_gate() -> None:
    verdict = judge(ok(runtime_ms=400.0), None, {}, SPEED)
    assert verdict.admitted is True
    assert verdict.reason == "baseline: every stage succeeded and the gate holds"


def test_the_baseline_is_rejected_when_it_fails() -> None:
    assert not judge(failed("tests", "exited with status 1"), None, {}, SPEED).admitted
    slow_gate = judge_config(
        [{"component": "runtime_ms", "direction": "minimize"}], gate=["runtime_ms < 100"]
    )
    assert not judge(ok(runtime_ms=400.0), None, {}, slow_gate).admitted


def test_the_baseline_ignores_max_regress() -> None:
    config = judge_config(
        [{"component": "runtime_ms", "direction": "minimize", "max_regress": 1.0}]
    )
    assert judge(ok(runtime_ms=400.0), None, {"runtime_ms": 10.0}, config).admitted


@pytest.mark.parametrize(
    ("new", "admitted", "reason"),
    [
        (380.0, True, "runtime_ms 380.0 is better than 410.5 beyond epsilon 1.0"),
        (412.0, False, "runtime_ms 412.0 is worse than 410.5 beyond epsilon 1.0"),
        (
            409.5,
            False,
            "no improvement: runtime_ms 409.5 is not better than 410.5 beyond epsilon 1.0",
        ),
        (
            411.5,
            False,
            "no improvement: runtime_ms 411.5 is not better than 410.5 beyond epsilon 1.0",
        ),
        (
            410.5,
            False,
            "no improvement: runtime_ms 410.5 is not better than 410.5 beyond epsilon 1.0",
        ),
        (409.25, True, "runtime_ms 409.25 is better than 410.5 beyond epsilon 1.0"),
    ],
)
def test_minimize_with_epsilon(new: float, admitted: bool, reason: str) -> None:
    verdict = judge(ok(runtime_ms=new), ok(runtime_ms=410.5), {}, SPEED)
    assert (verdict.admitted, verdict.reason) == (admitted, reason)


@pytest.mark.parametrize(
    ("new", "admitted"),
    [(0.875, True), (0.75, False), (0.8125, False), (0.6875, False), (0.5, False)],
)
def test_maximize_with_epsilon(new: float, admitted: bool) -> None:
    config = judge_config([{"component": "accuracy", "direction": "maximize", "epsilon": 0.0625}])
    assert judge(ok(accuracy=new), ok(accuracy=0.75), {}, config).admitted is admitted


def test_zero_epsilon_admits_any_strict_gain_and_rejects_equality() -> None:
    config = judge_config([{"component": "accuracy", "direction": "maximize"}])
    assert judge(ok(accuracy=0.5 + 2**-20), ok(accuracy=0.5), {}, config).admitted
    assert not judge(ok(accuracy=0.5), ok(accuracy=0.5), {}, config).admitted


LEXICOGRAPHIC = judge_config(
    [
        {"component": "accuracy", "direction": "maximize", "epsilon": 0.125},
        {"component": "runtime_ms", "direction": "minimize", "epsilon": 1.0},
        {"component": "memory_mb", "direction": "minimize"},
    ]
)
INCUMBENT = ok(accuracy=0.75, runtime_ms=100.0, memory_mb=64.0)


@pytest.mark.parametrize(
    ("candidate", "admitted", "reason"),
    [
        # Worse on the first rung: rejected however much faster and smaller.
        (
            ok(accuracy=0.5, runtime_ms=1.0, memory_mb=1.0),
            False,
            "accuracy 0.5 is worse than 0.75 beyond epsilon 0.125",
        ),
        # Better on the first rung: admitted even though slower.
        (
            ok(accuracy=1.0, runtime_ms=500.0, memory_mb=64.0),
            True,
            "accuracy 1.0 is better than 0.75 beyond epsilon 0.125",
        ),
        # A tie on the first rung falls through to the second.
        (
            ok(accuracy=0.6875, runtime_ms=90.0, memory_mb=64.0),
            True,
            "runtime_ms 90.0 is better than 100.0 beyond epsilon 1.0",
        ),
        (
            ok(accuracy=0.8125, runtime_ms=102.0, memory_mb=1.0),
            False,
            "runtime_ms 102.0 is worse than 100.0 beyond epsilon 1.0",
        ),
        # Ties on two rungs fall through to the third.
        (
            ok(accuracy=0.75, runtime_ms=100.5, memory_mb=63.0),
            True,
            "memory_mb 63.0 is better than 64.0 beyond epsilon 0.0",
        ),
        (
            ok(accuracy=0.75, runtime_ms=99.5, memory_mb=64.0),
            False,
            "no improvement: accuracy 0.75 is not better than 0.75 beyond epsilon 0.125; "
            "runtime_ms 99.5 is not better than 100.0 beyond epsilon 1.0; "
            "memory_mb 64.0 is not better than 64.0 beyond epsilon 0.0",
        ),
    ],
)
def test_lexicographic_walk(candidate: Measurement, admitted: bool, reason: str) -> None:
    verdict = judge(candidate, INCUMBENT, {}, LEXICOGRAPHIC)
    assert (verdict.admitted, verdict.reason) == (admitted, reason)


REGRESS = judge_config(
    [
        {"component": "runtime_ms", "direction": "minimize", "epsilon": 1.0},
        {"component": "accuracy", "direction": "maximize", "max_regress": 0.125},
        {"component": "memory_mb", "direction": "minimize", "max_regress": 8.0},
    ]
)


def test_max_regress_against_the_best_ever() -> None:
    incumbent = ok(runtime_ms=100.0, accuracy=0.5, memory_mb=40.0)
    best = {"runtime_ms": 100.0, "accuracy": 0.75, "memory_mb": 32.0}
    fine = ok(runtime_ms=50.0, accuracy=0.625, memory_mb=40.0)  # exactly at both limits
    assert judge(fine, incumbent, best, REGRESS).admitted
    lossy = ok(runtime_ms=50.0, accuracy=0.5, memory_mb=40.0)
    verdict = judge(lossy, incumbent, best, REGRESS)
    assert verdict == judge(lossy, incumbent, best, REGRESS)
    assert not verdict.admitted
    assert verdict.reason == (
        "accuracy 0.5 regresses by 0.25 from the best ever 0.75, more than max_regress 0.125"
    )
    bloated = ok(runtime_ms=50.0, accuracy=0.75, memory_mb=48.0)
    assert judge(bloated, incumbent, best, REGRESS).reason == (
        "memory_mb 48.0 regresses by 16.0 from the best ever 32.0, more than max_regress 8.0"
    )


def test_max_regress_unset_or_unknown_best_is_no_limit() -> None:
    incumbent = ok(runtime_ms=100.0, accuracy=0.5, memory_mb=40.0)
    candidate = ok(runtime_ms=50.0, accuracy=0.5, memory_mb=40.0)
    assert judge(candidate, incumbent, {"runtime_ms": 1.0}, REGRESS).admitted


def test_an_unmeasured_component_fails_closed() -> None:
    incumbent = ok(runtime_ms=100.0, accuracy=0.5, memory_mb=40.0)
    verdict = judge(ok(runtime_ms=50.0), incumbent, {"accuracy": 0.75}, REGRESS)
    assert verdict.reason == "accuracy was not measured, so its regression is unknown"
    verdict = judge(ok(accuracy=0.5), incumbent, {}, REGRESS)
    assert verdict.reason == "runtime_ms was not measured on both candidate and incumbent"


def test_not_better_is_reported_before_regressions() -> None:
    incumbent = ok(runtime_ms=100.0, accuracy=0.5, memory_mb=40.0)
    candidate = ok(runtime_ms=100.0, accuracy=0.0, memory_mb=40.0)
    verdict = judge(candidate, incumbent, {"accuracy": 0.75}, REGRESS)
    assert verdict.reason.startswith("accuracy 0.0 is worse than 0.5")


def test_an_unsuccessful_incumbent_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="incumbent"):
        judge(ok(runtime_ms=1.0), failed("bench", "x"), {}, SPEED)


def test_best_ever_per_component_and_direction() -> None:
    history = [
        ok(runtime_ms=100.0, accuracy=0.5),
        failed("bench", "exited with status 1"),
        Measurement(False, {"runtime_ms": 1.0, "accuracy": 1.0}, "tests", "exited with status 1"),
        ok(runtime_ms=80.0, accuracy=0.25),
        ok(runtime_ms=90.0, accuracy=0.75),
    ]
    assert best_ever(history, LEXICOGRAPHIC.comparator) == {"accuracy": 0.75, "runtime_ms": 80.0}
    assert best_ever([], LEXICOGRAPHIC.comparator) == {}


finite = st.floats(-1e6, 1e6, allow_nan=False)
components = st.fixed_dictionaries({"accuracy": finite, "runtime_ms": finite, "memory_mb": finite})


@given(components, components)
def test_admission_is_strict_and_antisymmetric(a: dict[str, float], b: dict[str, float]) -> None:
    first, second = ok(**a), ok(**b)
    assert not judge(first, first, {}, LEXICOGRAPHIC).admitted
    forward = judge(first, second, {}, LEXICOGRAPHIC).admitted
    backward = judge(second, first, {}, LEXICOGRAPHIC).admitted
    assert not (forward and backward)


def test_reasons_are_one_line_and_json_safe() -> None:
    verdict = judge(ok(runtime_ms=math.pi), ok(runtime_ms=5.0), {}, SPEED)
    assert json.loads(json.dumps(verdict.reason)) == verdict.reason
    assert "\n" not in verdict.reason
