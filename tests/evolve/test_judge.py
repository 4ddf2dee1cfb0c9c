"""The judge: predicates, stage parsing (fail closed), measurements, signatures and admission."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freemad.config.evolve import JudgeConfig, StageConfig
from freemad.core.evolve import (
    Measurement,
    Predicate,
    StageOutcome,
    best_ever,
    failure_signature,
    judge,
    measure,
    parse_predicate,
    parse_stage,
)

TESTS = StageConfig(name="tests", command="pytest -q", provides=["tests_pass"])
BENCH = StageConfig(
    name="bench",
    command="python bench.py",
    parse="json_stdout",
    timeout_sec=30,
    provides=["runtime_ms", "memory_mb"],
)


def judge_config(comparator: list[dict[str, Any]], gate: list[str] | None = None) -> JudgeConfig:
    return JudgeConfig(
        stages=[
            TESTS,
            StageConfig(
                name="bench",
                command="b",
                parse="json_stdout",
                provides=["runtime_ms", "accuracy", "memory_mb"],
            ),
        ],
        gate=gate if gate is not None else ["tests_pass == 1"],
        comparator=comparator,  # validated from plain dicts
    )


SPEED = judge_config([{"component": "runtime_ms", "direction": "minimize", "epsilon": 1.0}])


def ok(**components: float) -> Measurement:
    return Measurement(True, {"tests_pass": 1.0, **components})


# --- predicates -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tests_pass == 1", Predicate("tests_pass", "==", 1.0)),
        ("runtime_ms<500", Predicate("runtime_ms", "<", 500.0)),
        ("  score >= 0.75  ", Predicate("score", ">=", 0.75)),
        ("delta > -2.5e-3", Predicate("delta", ">", -0.0025)),
        ("_x2 != .5", Predicate("_x2", "!=", 0.5)),
        ("m <= +3.", Predicate("m", "<=", 3.0)),
    ],
)
def test_predicates_parse(text: str, expected: Predicate) -> None:
    assert parse_predicate(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "runtime_ms",
        "runtime_ms = 5",
        "runtime_ms << 5",
        "500 > runtime_ms",
        "runtime_ms < other",
        "runtime_ms < 5 and memory_mb < 3",
        "runtime_ms < nan",
        "runtime_ms < inf",
        "2fast < 5",
        "runtime-ms < 5",
    ],
)
def test_bad_predicates_raise_one_line(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_predicate(text)
    assert "\n" not in str(caught.value)
    assert repr(text) in str(caught.value)


def test_huge_number_is_not_finite() -> None:
    with pytest.raises(ValueError, match="not a finite number"):
        parse_predicate("x < 1e999")


@pytest.mark.parametrize(
    ("text", "value", "holds"),
    [
        ("x == 1", 1.0, True),
        ("x == 1", 0.0, False),
        ("x != 1", 0.0, True),
        ("x < 5", 5.0, False),
        ("x <= 5", 5.0, True),
        ("x > 5", 5.0, False),
        ("x >= 5", 5.0, True),
    ],
)
def test_predicate_holds(text: str, value: float, holds: bool) -> None:
    assert parse_predicate(text).holds({"x": value}) is holds


def test_unmeasured_component_never_holds() -> None:
    assert parse_predicate("x != 1").holds({"y": 0.0}) is False


@given(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True),
    st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
    st.floats(allow_nan=False, allow_infinity=False),
)
def test_predicate_text_round_trips(component: str, op: str, value: float) -> None:
    predicate = Predicate(component, op, value)
    assert parse_predicate(str(predicate)) == predicate


# --- stage parsing ----------------------------------------------------------------------------


def bench(stdout: str, exit_code: int | None = 0, timed_out: bool = False) -> StageOutcome:
    return parse_stage(BENCH, exit_code, stdout, timed_out)


GOOD = '{"components": {"runtime_ms": 12.5, "memory_mb": 3}}'


def test_exit_code_stage_measures_one_on_success() -> None:
    assert parse_stage(TESTS, 0, "lots of pytest output\n", False) == StageOutcome(
        "tests", True, {"tests_pass": 1.0}, ""
    )


def test_json_stage_with_surrounding_whitespace() -> None:
    outcome = bench(f"\n  {GOOD}\n\n")
    assert outcome == StageOutcome("bench", True, {"runtime_ms": 12.5, "memory_mb": 3.0}, "")
    assert all(type(v) is float for v in outcome.components.values())


@pytest.mark.parametrize(
    ("stdout", "exit_code", "timed_out", "reason"),
    [
        (GOOD, 0, True, "timed out after 30.0 s"),
        (GOOD, 1, False, "exited with status 1"),
        (GOOD, -9, False, "exited with status -9"),
        (GOOD, None, False, "ended without an exit status (killed by a signal?)"),
        ("", 0, False, 'printed nothing on stdout; expected one JSON object {"components": {...}}'),
        ("  \n", 0, False, "printed nothing on stdout"),
        (
            "runtime: 12ms",
            0,
            False,
            "stdout is not JSON (it starts with 'runtime: 12ms'); expected one JSON object "
            '{"components": {...}} and nothing else',
        ),
        ("Benchmarking...\n" + GOOD, 0, False, "stdout is not JSON (it starts with 'Benchmarking"),
        (GOOD + "\ndone in 3s", 0, False, "printed text ('done in 3s') after the JSON object"),
        (GOOD + "\n" + GOOD, 0, False, "printed a second JSON value after the JSON object"),
        ("[1, 2]", 0, False, 'printed a JSON array; expected one JSON object {"components"'),
        ("12.5", 0, False, "printed a JSON number"),
        ("null", 0, False, "printed a JSON null"),
        ('{"runtime_ms": 12.5}', 0, False, "keys must be exactly 'components', got 'runtime_ms'"),
        (
            '{"components": {"runtime_ms": 1, "memory_mb": 2}, "note": "x"}',
            0,
            False,
            "keys must be exactly 'components', got 'components', 'note'",
        ),
        ('{"components": [12.5, 3]}', 0, False, "components is a JSON array, not an object"),
        ('{"components": {"runtime_ms": 12.5}}', 0, False, "missing component(s) memory_mb"),
        ('{"components": {}}', 0, False, "missing component(s) runtime_ms, memory_mb"),
        (
            '{"components": {"runtime_ms": 1, "memory_mb": 2, "speed": 9}}',
            0,
            False,
            "undeclared component(s) speed; the stage provides runtime_ms, memory_mb",
        ),
        (
            '{"components": {"runtime_ms": NaN, "memory_mb": 2}}',
            0,
            False,
            "component runtime_ms is nan, not a finite number",
        ),
        (
            '{"components": {"runtime_ms": -Infinity, "memory_mb": 2}}',
            0,
            False,
            "component runtime_ms is -inf, not a finite number",
        ),
        (
            '{"components": {"runtime_ms": 1e999, "memory_mb": 2}}',
            0,
            False,
            "not a finite number",
        ),
        (
            '{"components": {"runtime_ms": 1' + "0" * 400 + ', "memory_mb": 2}}',
            0,
            False,
            "not a finite number",
        ),
        (
            '{"components": {"runtime_ms": true, "memory_mb": 2}}',
            0,
            False,
            "component runtime_ms is 'true', not a number",
        ),
        (
            '{"components": {"runtime_ms": "12.5", "memory_mb": 2}}',
            0,
            False,
            "component runtime_ms is '\"12.5\"', not a number",
        ),
        (
            '{"components": {"runtime_ms": null, "memory_mb": 2}}',
            0,
            False,
            "component runtime_ms is 'null', not a number",
        ),
        (
            '{"components": {"runtime_ms": 1, "runtime_ms": 2, "memory_mb": 2}}',
            0,
            False,
            "the JSON repeats the key 'runtime_ms'",
        ),
    ],
)
def test_stage_failures_fail_closed(
    stdout: str, exit_code: int | None, timed_out: bool, reason: str
) -> None:
    outcome = bench(stdout, exit_code, timed_out)
    assert not outcome.ok
    assert outcome.components == {}
    assert outcome.name == "bench"
    assert reason in outcome.reason
    assert "\n" not in outcome.reason


def test_exit_code_stage_fails_on_non_zero_exit_and_timeout() -> None:
    assert parse_stage(TESTS, 1, "", False).reason == "exited with status 1"
    assert parse_stage(TESTS, 0, "", True).reason == "timed out after 300.0 s"


@given(st.text(max_size=200))
def test_parsing_never_raises(stdout: str) -> None:
    outcome = bench(stdout)
    assert outcome.ok == (outcome.reason == "")


# --- measurements and signatures ---------------------------------------------------------------


def test_measure_merges_components_of_successful_stages() -> None:
    result = measure(
        [StageOutcome("tests", True, {"tests_pass": 1.0}), StageOutcome("bench", True, {"r": 2.0})]
    )
    assert result == Measurement(True, {"tests_pass": 1.0, "r": 2.0}, None, "")


def test_the_first_failed_stage_fails_the_candidate() -> None:
    result = measure(
        [
            StageOutcome("tests", True, {"tests_pass": 1.0}),
            StageOutcome("bench", False, {}, "exited with status 2"),
            StageOutcome("lint", False, {}, "exited with status 1"),
        ]
    )
    assert result == Measurement(False, {"tests_pass": 1.0}, "bench", "exited with status 2")


def test_no_stage_is_a_failure() -> None:
    assert measure([]) == Measurement(False, {}, None, "no judge stage ran")


def failed(stage: str, reason: str) -> Measurement:
    return Measurement(False, {}, stage, reason)


def test_signature_is_empty_when_ok() -> None:
    assert failure_signature(ok(runtime_ms=3.0)) == ""


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("exited with status 1", "exited with status 2"),
        ("timed out after 30.0 s", "timed out after 45.5 s"),
        (
            "component runtime_ms is 12, not a number",
            "component runtime_ms is -3.5e+04, not a number",
        ),
        (
            "AssertionError at /tmp/evolve-abc123/worktree/tests/test_sum.py:41",
            "AssertionError at /var/folders/x9/wt_7/tests/test_sum.py:97",
        ),
        ("object at 0x7f3a2c1b9e80 failed", "object at 0x55d1c0ffee00 failed"),
        ("commit 3f9a2b1c0d is bad", "commit 0e1d2c3b4a5f6789 is bad"),
        ("commit 3f9a2b1 is bad", "commit 1234567 is bad"),
        ("took 1.0000000000000002e+16 s", "took 2 s"),
        (
            "run 123e4567-e89b-12d3-a456-426614174000 died",
            "run 9b2f0c44-1a2b-4c3d-8e9f-0a1b2c3d4e5f died",
        ),
        ("took 412.0ms  over\tthe limit", "took 9ms over the limit"),
    ],
)
def test_signature_blanks_what_varies(first: str, second: str) -> None:
    a, b = failure_signature(failed("bench", first)), failure_signature(failed("bench", second))
    assert a == b
    assert a.startswith("bench: ")


def test_signature_keeps_what_matters() -> None:
    base = failure_signature(failed("bench", "exited with status 1"))
    assert base == "bench: exited with status #"
    assert failure_signature(failed("tests", "exited with status 1")) != base
    assert failure_signature(failed("bench", "timed out after 1.0 s")) != base
    # Digits inside names are part of the name, not a measurement.
    assert failure_signature(failed("bench", "missing component(s) p95_ms")) == (
        "bench: missing component(s) p95_ms"
    )


def test_signature_is_short() -> None:
    assert len(failure_signature(failed("bench", "x " * 1000))) <= 200


@given(st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.integers(0, 2**64))
def test_signature_is_stable_across_numbers(code: int, seconds: float, ident: int) -> None:
    reason = f"exited with status {code} after {seconds} s in /tmp/w{ident}/x (commit {ident:07x})"
    assert failure_signature(failed("bench", reason)) == (
        "bench: exited with status # after # s in <path> (commit #)"
    )


# --- admission ----------------------------------------------------------------------------------


def test_a_failed_stage_rejects() -> None:
    verdict = judge(failed("bench", "exited with status 1"), ok(runtime_ms=5.0), {}, SPEED)
    assert verdict.admitted is False
    assert verdict.reason == "stage bench failed: exited with status 1"


def test_no_stage_at_all_rejects() -> None:
    verdict = judge(measure([]), ok(runtime_ms=5.0), {}, SPEED)
    assert verdict.reason == "the judge failed: no judge stage ran"


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
