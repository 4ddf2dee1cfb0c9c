"""A component the judge could not measure refuses the candidate: the decision, not only its reason."""

from __future__ import annotations

from freemad.core.evolve import Measurement, judge
from tests.evolve.judging import judge_config, ok

REGRESS = judge_config(
    [
        {"component": "runtime_ms", "direction": "minimize", "epsilon": 1.0},
        {"component": "accuracy", "direction": "maximize", "max_regress": 0.125},
    ]
)


def test_a_comparator_component_missing_from_the_candidate_is_refused() -> None:
    verdict = judge(ok(accuracy=0.5), ok(runtime_ms=100.0, accuracy=0.5), {}, REGRESS)
    assert verdict.admitted is False
    assert verdict.reason == "runtime_ms was not measured on both candidate and incumbent"


def test_a_comparator_component_missing_from_the_incumbent_is_refused() -> None:
    verdict = judge(ok(runtime_ms=1.0), Measurement(True, {"tests_pass": 1.0}), {}, REGRESS)
    assert verdict.admitted is False
    assert verdict.reason == "runtime_ms was not measured on both candidate and incumbent"


def test_a_faster_candidate_without_a_regress_guarded_component_is_refused() -> None:
    incumbent = ok(runtime_ms=100.0, accuracy=0.5)
    verdict = judge(ok(runtime_ms=50.0), incumbent, {"accuracy": 0.75}, REGRESS)
    assert verdict.admitted is False
    assert verdict.reason == "accuracy was not measured, so its regression is unknown"


def test_a_regression_exactly_at_max_regress_is_admitted_and_beyond_it_refused() -> None:
    incumbent = ok(runtime_ms=100.0, accuracy=0.5)
    at_limit = judge(ok(runtime_ms=50.0, accuracy=0.625), incumbent, {"accuracy": 0.75}, REGRESS)
    assert at_limit.admitted is True
    assert at_limit.reason == "runtime_ms 50.0 is better than 100.0 beyond epsilon 1.0"
    beyond = judge(ok(runtime_ms=50.0, accuracy=0.5), incumbent, {"accuracy": 0.75}, REGRESS)
    assert beyond.admitted is False
    assert beyond.reason == (
        "accuracy 0.5 regresses by 0.25 from the best ever 0.75, more than max_regress 0.125"
    )
