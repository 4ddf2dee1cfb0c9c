"""A task after a person's answer: no longer waiting on the question it answered."""

from __future__ import annotations

from typing import Any

from freemad.core.task_machine import Status, fold

ROLES = {"planner": "p", "reviewer": "r", "arbiter": "a"}


def waiting() -> list[tuple[str, dict[str, Any]]]:
    created = {
        "task_type": "plan",
        "goal": "g",
        "workspace_root": "/w",
        "roles": ROLES,
        "max_total_iterations": 30,
    }
    return [
        ("task_created", created),
        ("stage_advanced", {"from": "intake", "to": "plan_review"}),
        ("waiting_for_human", {"stage": "plan_review", "question": "Which backend?"}),
    ]


def test_an_answered_task_waits_no_more_and_redoes_the_reviewed_work() -> None:
    state = fold("t", [*waiting(), ("human_answer", {"text": "Use SQLite."})])
    assert state.status is Status.RUNNING
    assert state.question is None and state.view()["question"] is None
    assert state.current_stage == "draft_plan"  # the plan is redone with the answer
    assert state.request_feedback() == ["HUMAN_INPUT: Use SQLite."]


def test_a_resume_after_the_answer_changes_nothing_more() -> None:
    answered = [*waiting(), ("human_answer", {"text": "Use SQLite."})]
    resumed = fold("t", [*answered, ("resumed", {"more_iterations": 0})])
    assert resumed.view() == fold("t", answered).view()
    assert resumed.attempts == {"draft_plan": 0}
