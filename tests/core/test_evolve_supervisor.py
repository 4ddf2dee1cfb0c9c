"""The supervisor (stall, loop, when to ask a person, directives) and the stop rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freemad.config.evolve_section import StopConfig, SupervisorConfig
from freemad.core.evolve import (
    Directive,
    IterationRecord,
    active,
    broken_worker,
    detect,
    needs_human,
    should_stop,
)

CONFIG = SupervisorConfig(stall_window=4, loop_threshold=3)
BASELINE = IterationRecord(0, True)


def history(*steps: str) -> list[IterationRecord]:
    """'A' an admission, '-' a rejection with no failed stage, a letter a failure signature."""
    records = [BASELINE]
    for number, step in enumerate(steps, start=1):
        if step == "A":
            records.append(IterationRecord(number, True))
        else:
            records.append(IterationRecord(number, False, "" if step == "-" else f"bench: {step}"))
    return records


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ((), None),
        (("-", "-", "-"), None),  # the baseline is inside the window: it counts as an admission
        (("-", "-", "-", "-"), "stall"),
        (("A", "-", "-", "-"), None),
        (("-", "-", "A", "-", "-", "-"), None),
        (("-", "-", "A", "-", "-", "-", "-"), "stall"),
        (("x", "x"), None),  # fewer than loop_threshold failures
        (("x", "x", "x"), "loop"),
        (("-", "y", "x", "x", "x"), "loop"),  # loop wins when both hold
        (("x", "x", "y"), None),
        (("x", "y", "x", "y"), "stall"),  # alternating is a stall, not a loop
        (("x", "A", "x", "x"), None),
        (("A", "x", "x", "x"), "loop"),
        (("-", "-", "-", "-", "-"), "stall"),  # the same empty signature is never a loop
    ],
)
def test_detect(steps: tuple[str, ...], expected: str | None) -> None:
    assert detect(history(*steps), CONFIG) == expected


def test_admitted_records_never_make_a_loop_even_with_a_signature() -> None:
    records = [IterationRecord(n, True, "bench: x") for n in range(5)]
    assert detect(records, CONFIG) is None


def test_records_since_the_last_intervention_need_a_whole_window() -> None:
    # After an intervention the runtime passes only the records since: three are not a window.
    since = [IterationRecord(n, False, f"bench: {n}") for n in (7, 8, 9)]
    assert detect(since, CONFIG) is None
    assert detect([*since, IterationRecord(10, False, "bench: 10")], CONFIG) == "stall"


def test_smallest_windows() -> None:
    tight = SupervisorConfig(stall_window=1, loop_threshold=2)
    assert detect([BASELINE], tight) is None
    assert detect([BASELINE, IterationRecord(1, False, "s")], tight) == "stall"
    assert detect([BASELINE, *[IterationRecord(n, False, "s") for n in (1, 2)]], tight) == "loop"


@given(st.lists(st.tuples(st.booleans(), st.sampled_from(["", "a", "b"])), max_size=12))
def test_detect_only_without_recent_admissions(steps: list[tuple[bool, str]]) -> None:
    records = [IterationRecord(n, admitted, sig) for n, (admitted, sig) in enumerate(steps)]
    found = detect(records, CONFIG)
    if found == "loop":
        assert not any(r.admitted for r in records[-CONFIG.loop_threshold :])
    if found == "stall":
        assert len(records) >= CONFIG.stall_window
        assert not any(r.admitted for r in records[-CONFIG.stall_window :])
    if records and records[-1].admitted:
        assert found is None


@pytest.mark.parametrize(
    ("limit", "count", "expected"),
    [(2, 0, False), (2, 1, False), (2, 2, True), (2, 5, True), (0, 0, True)],
)
def test_needs_human(limit: int, count: int, expected: bool) -> None:
    config = SupervisorConfig(max_interventions_before_human=limit)
    assert needs_human(count, config) is expected


def test_directives_live_for_ttl_iterations_after_they_are_issued() -> None:
    first = Directive("try memoizing partial sums", issued_at=5, ttl=3)
    second = Directive("vectorise the inner loop", issued_at=7, ttl=1)
    directives = [first, second]
    assert active(directives, 5) == []
    assert active(directives, 6) == [first]
    assert active(directives, 8) == [first, second]
    assert active(directives, 9) == []
    assert active([], 6) == []


STOP = StopConfig(max_iterations=10, max_wall_clock_minutes=30.0, target=["runtime_ms < 5"])


@pytest.mark.parametrize(
    ("iteration", "minutes", "best", "expected"),
    [
        (3, 1.0, {"runtime_ms": 4.5}, "target"),
        (3, 1.0, {"runtime_ms": 5.0}, None),
        (3, 1.0, {}, None),
        (10, 1.0, {"runtime_ms": 4.5}, "target"),  # reaching the target wins
        (10, 1.0, {"runtime_ms": 9.0}, "max_iterations"),
        (9, 1.0, {"runtime_ms": 9.0}, None),
        (0, 1.0, {"runtime_ms": 9.0}, None),
        (9, 30.0, {"runtime_ms": 9.0}, "max_wall_clock"),
        (9, 29.5, {"runtime_ms": 9.0}, None),
        (10, 31.0, {"runtime_ms": 9.0}, "max_iterations"),
    ],
)
def test_should_stop(
    iteration: int, minutes: float, best: dict[str, float], expected: str | None
) -> None:
    assert should_stop(iteration, minutes, best, STOP) == expected


def test_every_target_must_hold() -> None:
    config = StopConfig(target=["runtime_ms < 5", "tests_pass == 1"])
    assert should_stop(1, 0.0, {"runtime_ms": 1.0, "tests_pass": 1.0}, config) == "target"
    assert should_stop(1, 0.0, {"runtime_ms": 1.0, "tests_pass": 0.0}, config) is None


def test_no_target_and_no_clock_runs_to_max_iterations() -> None:
    config = StopConfig(max_iterations=3)
    assert should_stop(2, 1e9, {"runtime_ms": 0.0}, config) is None
    assert should_stop(3, 0.0, {}, config) == "max_iterations"


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([IterationRecord(n, False, "<worker>: x") for n in (1, 2, 3, 4)], True),
        ([IterationRecord(n, False, "<worker>: x") for n in (1, 2, 3)], False),  # window is 4
        ([BASELINE, *(IterationRecord(n, False, "<worker>: x") for n in (1, 2, 3))], False),
        (
            [IterationRecord(n, False, "<worker>: x") for n in (1, 2, 3)]
            + [IterationRecord(4, False, "<worker>: y")],
            False,
        ),
        ([IterationRecord(n, True, "<worker>: x") for n in (1, 2, 3, 4)], False),
        ([IterationRecord(n, False, "<worker>:x") for n in (1, 2, 3, 4)], False),
        ([IterationRecord(n, False, "x<worker>: x") for n in (1, 2, 3, 4)], False),
        (
            [IterationRecord(0, False, "tests: x")]
            + [IterationRecord(n, False, "<worker>: x") for n in (1, 2, 3, 4)],
            True,
        ),
    ],
)
def test_broken_worker(records: list[IterationRecord], expected: bool) -> None:
    assert broken_worker(records, CONFIG) is expected
