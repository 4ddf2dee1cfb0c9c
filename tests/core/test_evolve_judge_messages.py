"""What the judge says when a stage's output is wrong, exactly: the reason is what a person
reads in the run's report, and what failure signatures compare."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from freemad.core.evolve.judge import (
    Measurement,
    StageOutcome,
    best_ever,
    failure_signature,
    judge,
    measure,
    parse_predicate,
    parse_stage,
)
from tests.evolve.judging import SPEED, judge_config, ok

EXPECTED = 'expected one JSON object {"components": {...}}'


@dataclass(frozen=True)
class Stage:
    name: str = "bench"
    parse: str = "json_stdout"
    provides: tuple[str, ...] = ("a",)
    timeout_sec: float = 30.0
    extra: dict[str, str] = field(default_factory=dict)


def reason(stdout: str, provides: tuple[str, ...] = ("a",)) -> str:
    outcome = parse_stage(Stage(provides=provides), 0, stdout, False)  # type: ignore[arg-type]
    assert outcome.ok is False
    return outcome.reason


@pytest.mark.parametrize(
    ("stdout", "kind"),
    [("[1]", "array"), ('"s"', "string"), ("true", "boolean"), ("1", "number"), ("1.5", "number")],
)
def test_a_json_value_that_is_not_an_object_is_named(stdout: str, kind: str) -> None:
    assert reason(stdout) == f"printed a JSON {kind}; {EXPECTED}"


def test_null_and_non_object_components_are_named() -> None:
    assert reason("null") == f"printed a JSON null; {EXPECTED}"
    assert reason('{"components": [1]}') == "components is a JSON array, not an object"


def test_the_objects_keys_are_listed_or_said_to_be_none() -> None:
    assert reason("{}") == "the object's keys must be exactly 'components', got none"
    assert (
        reason('{"b": 1, "a": 2}') == "the object's keys must be exactly 'components', got 'a', 'b'"
    )


def test_what_follows_the_object_is_named() -> None:
    good = '{"components": {"a": 1}}'
    assert reason(good + ' {"x": 1}') == (
        f"printed a second JSON value after the JSON object; {EXPECTED} only"
    )
    assert reason(good + " [2]") == (
        f"printed a second JSON value after the JSON object; {EXPECTED} only"
    )
    assert reason(good + " XX") == f"printed text ('XX') after the JSON object; {EXPECTED} only"
    assert reason(good + " done") == (
        f"printed text ('done') after the JSON object; {EXPECTED} only"
    )


def test_an_excerpt_keeps_thirty_characters_and_cuts_a_longer_text() -> None:
    thirty = "x" * 30
    assert reason(thirty) == (
        f"stdout is not JSON (it starts with '{thirty}'); {EXPECTED} and nothing else"
    )
    assert reason("y" * 31) == (
        f"stdout is not JSON (it starts with '{'y' * 27}...'); {EXPECTED} and nothing else"
    )


def test_undeclared_and_missing_components_are_listed() -> None:
    assert reason('{"components": {"a": 1, "c": 2, "b": 3}}', ("a",)) == (
        "undeclared component(s) b, c; the stage provides a"
    )
    assert reason('{"components": {"a": 1}}', ("a", "b", "c")) == "missing component(s) b, c"


def test_a_process_killed_without_a_status_says_so() -> None:
    outcome = parse_stage(Stage(), None, "", False)  # type: ignore[arg-type]
    assert outcome == StageOutcome(
        "bench", False, {}, "ended without an exit status (killed by a signal?)"
    )


def test_a_predicate_that_does_not_parse_says_what_is_expected() -> None:
    with pytest.raises(ValueError) as caught:
        parse_predicate("runtime_ms ~ 5")
    assert str(caught.value) == (
        "'runtime_ms ~ 5' is not a predicate; expected COMPONENT OP NUMBER with OP one of "
        "== != < <= > >=, e.g. 'runtime_ms < 500'"
    )


def test_no_stage_at_all_is_a_failure_and_the_first_failure_keeps_what_came_before() -> None:
    assert measure([]) == Measurement(False, {}, None, "no judge stage ran")
    outcomes = [
        StageOutcome("tests", True, {"tests_pass": 1.0}),
        StageOutcome("bench", False, {}, "boom"),
        StageOutcome("late", True, {"x": 1.0}),
    ]
    assert measure(outcomes) == Measurement(False, {"tests_pass": 1.0}, "bench", "boom")


def test_a_failed_measurement_in_the_history_is_skipped_not_the_end() -> None:
    comparator = judge_config(
        [{"component": "runtime_ms", "direction": "minimize", "max_regress": 5.0}]
    ).comparator
    history = [ok(runtime_ms=50.0), Measurement(False, {}, "bench", "x"), ok(runtime_ms=40.0)]
    assert best_ever(history, comparator) == {"runtime_ms": 40.0}


def test_a_failure_without_a_stage_signs_with_a_dash() -> None:
    assert failure_signature(Measurement(False, {}, None, "no judge stage ran")) == (
        "-: no judge stage ran"
    )


def test_a_failed_incumbent_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match=r"^the incumbent must be a successful measurement$"):
        judge(ok(runtime_ms=1.0), Measurement(False, {}, "bench", "x"), {}, SPEED)


def test_best_ever_takes_each_component_on_its_own_when_another_is_missing() -> None:
    comparator = judge_config(
        [
            {"component": "accuracy", "direction": "maximize", "max_regress": 0.1},
            {"component": "runtime_ms", "direction": "minimize", "max_regress": 5.0},
        ]
    ).comparator
    history = [ok(runtime_ms=50.0), ok(accuracy=0.5, runtime_ms=60.0), ok(accuracy=0.25)]
    assert best_ever(history, comparator) == {"accuracy": 0.5, "runtime_ms": 50.0}
