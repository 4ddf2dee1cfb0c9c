"""evolve.context_budget_chars on the worker's prompt: what goes first, what never goes, and the
prompt saying what it lost."""

from __future__ import annotations

from typing import Any

from freemad.evolve.context_budget import fit
from freemad.evolve.worker_protocol import EvolveRequest, Incumbent, Rejection, render_worker_prompt
from tests.evolve.runs import request_of

GOAL = "make slow_sum fast without changing what it returns"


def request(**changes: Any) -> EvolveRequest:
    fields: dict[str, Any] = {
        "run_id": "run1",
        "goal": GOAL,
        "agent_id": "worker",
        "iteration": 7,
        "workspace_root": "/work/tree",
        "allowed_actions": ["read_workspace", "write_workspace"],
        "knowledge_paths": ["NOTES.md", "docs/design.md"],
        "protected_paths": ["tests", "bench.py"],
        "objective": "tests pass and runtime_ms drops",
        "incumbent": Incumbent(version=2, commit="0" * 40, components={"runtime_ms": 4.0}),
        "best_ever": {"runtime_ms": 4.0},
        "directions": ["Use a closed form.", "Keep every test passing."],
        "recent_rejections": [
            Rejection(iteration=i, reason=f"rejection number {i}: " + "x" * 80) for i in (2, 4, 6)
        ],
        "plan": "1. Find the loop.\n2. " + "Replace it with arithmetic. " * 20,
    }
    return EvolveRequest(**{**fields, **changes})


def test_no_budget_or_room_enough_changes_nothing() -> None:
    whole = render_worker_prompt(request())
    assert fit(request(), None) == (whole, [])
    assert fit(request(), len(whole)) == (whole, [])
    assert '"context_note"' not in whole and "context was cut" not in whole


def test_the_oldest_rejection_goes_first() -> None:
    whole = render_worker_prompt(request())
    prompt, cut = fit(request(), len(whole) - 1)
    assert len(prompt) <= len(whole) - 1
    sent = request_of(prompt)
    kept = [r["iteration"] for r in sent["recent_rejections"]]
    assert kept and kept == [2, 4, 6][-len(kept) :] and len(kept) < 3
    assert cut == [f"the {3 - len(kept)} oldest rejected candidate(s)"]
    assert sent["knowledge_paths"] == ["NOTES.md", "docs/design.md"]
    assert (
        sent["context_note"]
        == f"to fit evolve.context_budget_chars ({len(whole) - 1}), left out: {cut[0]}"
    )
    assert f"Part of this run's context was cut {sent['context_note']}." in prompt


def test_a_tight_budget_cuts_everything_cuttable_but_never_the_goal_or_the_rules() -> None:
    bare = request(recent_rejections=[], knowledge_paths=[], best_ever={}, directions=[], plan=None)
    floor = len(render_worker_prompt(bare))
    prompt, cut = fit(request(), floor + 600)
    sent = request_of(prompt)
    assert len(prompt) <= floor + 600
    assert cut == [
        "the 3 oldest rejected candidate(s)",
        "2 knowledge path(s)",
        "the best scores",
        "2 direction(s)",
        "the plan's end",
    ]
    assert sent["recent_rejections"] == [] and sent["knowledge_paths"] == []
    assert sent["best_ever"] == {} and sent["directions"] == []
    assert sent["plan"].startswith("1. Find the loop.") and sent["plan"].endswith(" [...]")
    assert sent["goal"] == GOAL and f"<goal>\n{GOAL}\n</goal>" in prompt
    assert sent["protected_paths"] == ["tests", "bench.py"]
    assert "Protected, restored before judging" in prompt


def test_a_goal_longer_than_the_budget_is_sent_whole() -> None:
    long_goal = "be fast " * 200
    prompt, cut = fit(request(goal=long_goal), 100)
    sent = request_of(prompt)
    assert sent["goal"] == long_goal and len(prompt) > 100
    assert sent["plan"] == " [...]" and "the plan's end" in cut


def test_directions_lose_the_last_listed_first() -> None:
    """A candidate's own direction is listed first, so it is the one kept longest."""
    long_one = "Keep every test passing and measure each change. " * 6
    bare = request(
        recent_rejections=[],
        knowledge_paths=[],
        best_ever={},
        plan=None,
        directions=["Use a closed form.", long_one],
    )
    whole = len(render_worker_prompt(bare))
    prompt, cut = fit(bare, whole - 1)
    assert request_of(prompt)["directions"] == ["Use a closed form."]
    assert cut == ["1 direction(s)"]
