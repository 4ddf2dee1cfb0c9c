"""The judge: predicates, stage parsing (fail closed), measurements, signatures and admission."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freemad.core.evolve import (
    Measurement,
    Predicate,
    StageOutcome,
    failure_signature,
    measure,
    parse_predicate,
    parse_stage,
)
from tests.evolve.judging import BENCH, TESTS, failed, ok

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
