"""The pure parts of two evolve settings: the run branch prefix (`core.evolve.git_names`) and the cost
cap (`core.evolve.fold`, `core.evolve.supervisor`)."""

from __future__ import annotations

import pytest

from freemad.config.evolve_section import StopConfig
from freemad.core.evolve.fold import END_REASONS, fold, next_action
from freemad.core.evolve.git_names import DEFAULT_BRANCH_PREFIX, branch_name, check_branch_prefix
from freemad.core.evolve.supervisor import cost_cap_reached
from tests.core.test_evolve_fold import SUPERVISOR, Event, baseline, judged, version

CHARS = "may hold only letters, digits and '.', '_', '-', '/'"
SLASHES = "may not start or end with '/' or hold '//'"
DOTS = "has a part starting with '.' or ending with '.' or '.lock'"


def test_the_default_prefix_is_todays_branch() -> None:
    assert DEFAULT_BRANCH_PREFIX == "freemad/evolve"
    assert branch_name("abc") == "freemad/evolve/abc"
    assert branch_name("abc", "team/runs") == "team/runs/abc"


@pytest.mark.parametrize(
    ("prefix", "problem"),
    [
        ("", CHARS),
        ("a b", CHARS),
        ("a~b", CHARS),
        ("a@{1}", CHARS),
        ("a\\b", CHARS),
        ("x" * 101, "is longer than 100 characters"),
        ("-x", "may not start with '-' (git would read it as an option)"),
        ("/a", SLASHES),
        ("a/", SLASHES),
        ("a//b", SLASHES),
        ("a..b", "may not hold '..'"),
        (".a", DOTS),
        ("a/.b", DOTS),
        ("a.", DOTS),
        ("a/b./c", DOTS),
        ("a.lock", DOTS),
        ("a.lock/b", DOTS),
    ],
)
def test_a_prefix_no_branch_can_have_is_refused_saying_why(prefix: str, problem: str) -> None:
    with pytest.raises(ValueError) as caught:
        check_branch_prefix(prefix)
    assert str(caught.value) == f"{prefix!r} {problem}: it must be part of a git branch name"


@pytest.mark.parametrize("prefix", ["a", "x" * 100, "a.b/c-d_e", "v1.0/lock", "a.locks", "a-"])
def test_a_fair_prefix_is_kept(prefix: str) -> None:
    assert check_branch_prefix(prefix) == prefix


def test_the_cap_is_reached_at_its_value_not_before() -> None:
    capped = StopConfig(max_total_cost_usd=1.0)
    assert not cost_cap_reached(0.99, capped)
    assert cost_cap_reached(1.0, capped) and cost_cap_reached(1.5, capped)
    assert not cost_cap_reached(1e9, StopConfig())


def costed(n: int, cost: float) -> list[Event]:
    """Iteration `n`: a rejected candidate whose proposal cost `cost`."""
    started, done = judged(n, False, 60.0, signature="tests failed")
    return [started, ("candidate_proposed", {"iteration": n, "cost_usd": cost}), done]


def test_the_run_cost_is_the_sum_over_its_events() -> None:
    events = [*baseline(), *costed(1, 0.25), *costed(2, 0.5)]
    events.append(("intervention", {"after_iteration": 2, "directions": [], "cost_usd": 0.125}))
    events.append(("candidate_proposed", {"iteration": 3, "cost_usd": None}))
    state = fold("r", events)
    assert state.cost_usd == 0.875 and state.view()["cost_usd"] == 0.875
    fold("r", [("candidate_proposed", {"cost_usd": 0.0000004})], onto=state)
    assert state.view()["cost_usd"] == 0.875  # status shows it to the microdollar


def test_a_cost_cap_stops_before_the_next_iteration_and_before_an_intervention() -> None:
    stop = StopConfig(max_iterations=10, max_total_cost_usd=1.0)
    events = [*baseline(), *costed(1, 0.5)]
    assert next_action(fold("r", events), SUPERVISOR, stop).action == "iterate"
    events += costed(2, 0.5)  # $1.00: reached, and two like rejections make a loop
    assert next_action(fold("r", events), SUPERVISOR, StopConfig()).action == "intervene"
    step = next_action(fold("r", events), SUPERVISOR, stop)
    assert (step.action, step.reason) == ("stop", "max_total_cost")
    assert "max_total_cost" in END_REASONS


def test_the_target_wins_over_the_cost_cap() -> None:
    stop = StopConfig(max_total_cost_usd=0.1, target=["runtime_ms < 10"])
    started, done = judged(1, True, 5.0)
    events = [
        *baseline(),
        started,
        ("candidate_proposed", {"cost_usd": 0.5}),
        done,
        version(1, 5.0),
    ]
    step = next_action(fold("r", events), SUPERVISOR, stop)
    assert (step.action, step.reason) == ("stop", "target")
