"""The stage machine's decisions that a dropped line or a flipped operator would change: who is
chosen for each role, what the events fold into, and which event follows a reply."""

from __future__ import annotations

from typing import Any

import pytest

from freemad.core.task_machine import (
    Call,
    RoleError,
    Status,
    TaskState,
    after_failure,
    after_reply,
    approve_events,
    assign_roles,
    fold,
    idle_events,
    iteration_cap_reached,
    next_calls,
)
from freemad.core.work_items import WorkItem

CODE_ROLES = {"planner": "p", "implementer": "i", "reviewer": "r", "verifier": "v", "arbiter": "a"}


def created(task_type: str = "code", cap: int = 30, roles: dict[str, str] = CODE_ROLES):
    return (
        "task_created",
        {
            "task_type": task_type,
            "goal": "g",
            "workspace_root": "/w",
            "roles": roles,
            "max_total_iterations": cap,
            "branch": "freemad/t",
        },
    )


def replied(stage: str, **response: Any):
    return ("agent_replied", {"stage": stage, "role": "x", "agent": "x", "response": response})


def at(stage: str, *events: tuple[str, dict[str, Any]], task_type: str = "code") -> TaskState:
    return fold("t", [created(task_type), ("stage_advanced", {"to": stage}), *events])


# --- roles ---------------------------------------------------------------------------------------


def test_a_configured_verifier_that_wrote_nothing_is_chosen() -> None:
    roles = assign_roles(
        "code",
        {"p": ["planner"], "i": ["implementer", "verifier"], "r": ["reviewer"], "v": ["verifier"]},
    )
    assert roles == {
        "planner": "p",
        "implementer": "i",
        "researcher": "p",  # no researcher: the planner researches
        "verifier": "v",
        "reviewer": "r",
    }


def test_without_a_verifier_the_reviewer_verifies() -> None:
    roles = assign_roles("code", {"p": ["planner"], "i": ["implementer"], "r": ["reviewer"]})
    assert roles == {"planner": "p", "implementer": "i", "researcher": "p", "reviewer": "r"}
    state = at("verify")
    state.roles = roles
    assert next_calls(state) == [Call("verify", "reviewer")]


def test_a_configured_arbiter_independent_of_authors_and_reviewer_is_chosen() -> None:
    roles = assign_roles(
        "plan",
        {"p": ["planner", "arbiter"], "r": ["reviewer", "arbiter"], "a": ["arbiter"]},
    )
    assert roles == {"planner": "p", "researcher": "p", "reviewer": "r", "arbiter": "a"}
    # Offered only by the planner: refused (docs/tasks.md), never dropped without a word.
    with pytest.raises(RoleError, match=r"only p \(planner\) offer the role 'arbiter'"):
        assign_roles("plan", {"p": ["planner", "arbiter"], "r": ["reviewer"]})


# --- folding events ------------------------------------------------------------------------------


def test_every_reply_and_every_failure_counts_one_iteration() -> None:
    state = fold(
        "t",
        [
            created(cap=3),
            replied("intake", content="x"),
            ("agent_failed", {"stage": "research"}),
            replied("research", content="y"),
        ],
    )
    assert state.iterations == 3
    assert iteration_cap_reached(state) == (
        "waiting_for_human",
        {
            "stage": "intake",
            "question": "The task has used its 3 agent calls at intake. "
            "Resume with --more-iterations N to go on, or cancel it.",
        },
    )


def test_one_call_below_the_cap_goes_on() -> None:
    state = fold("t", [created(cap=3), replied("intake"), replied("research")])
    assert state.iterations == 2
    assert iteration_cap_reached(state) is None
    resumed = fold("t", [created(cap=2), replied("intake"), replied("research"), ("resumed", {})])
    assert iteration_cap_reached(resumed) is not None
    more = fold(
        "t",
        [
            created(cap=2),
            replied("intake"),
            replied("research"),
            ("resumed", {"more_iterations": 1}),
        ],
    )
    assert more.iteration_cap == 3
    assert iteration_cap_reached(more) is None


def test_a_reply_delivers_the_feedback_once() -> None:
    sent_back = ("stage_sent_back", {"from": "draft_plan", "to": "draft_plan", "feedback": ["f"]})
    state = at("plan_review", sent_back)
    assert state.current_stage == "draft_plan"
    assert state.feedback == ["f"]
    assert state.attempts == {"draft_plan": 1}
    assert state.request_feedback() == ["f"]
    assert at("plan_review", sent_back, replied("draft_plan")).feedback == []


def test_a_draft_plan_reply_sets_the_work_items_and_other_stages_do_not() -> None:
    items = [{"id": "a", "title": "A"}, {"id": "b", "title": "B", "depends_on": ["a"]}]
    state = at("draft_plan", replied("draft_plan", work_items=items))
    assert state.work_items == [WorkItem("a", "A"), WorkItem("b", "B", ("a",))]
    state = at("research", replied("research", work_items=items))
    assert state.work_items == []


def test_redoing_execute_forgets_the_items_done_but_redoing_another_stage_keeps_them() -> None:
    done = ("item_done", {"item_id": "a"})
    redo = ("stage_sent_back", {"from": "execute", "to": "execute", "feedback": []})
    assert at("code_review", done, redo).items_done == {}
    retry = ("stage_sent_back", {"from": "failed:execute", "to": "execute", "feedback": []})
    state = at("execute", done, retry)
    assert state.items_done == {"a": {"item_id": "a"}}
    assert state.attempts == {"failed:execute": 1}


def test_a_human_rejection_sends_a_review_back_to_its_work_with_the_reason() -> None:
    done = ("item_done", {"item_id": "a"})
    waiting = ("waiting_for_human", {"question": "q?"})
    state = at(
        "code_review", done, waiting, ("human_rejection", {"stage": "code_review", "reason": "no"})
    )
    assert state.current_stage == "execute"
    assert state.items_done == {}
    assert state.feedback == ["HUMAN_REJECTION of code_review: no"]
    assert (state.status, state.question) == (Status.RUNNING, None)
    # A work stage rejected stays where it is, and keeps what was done elsewhere.
    state = at("research", done, ("human_rejection", {"stage": "research", "reason": "thin"}))
    assert state.current_stage == "research"
    assert state.items_done == {"a": {"item_id": "a"}}
    assert next_calls(state) == [Call("research", "planner")]  # no researcher configured


def test_an_answer_to_a_waiting_review_redoes_its_work_with_the_answer() -> None:
    events = [
        ("stage_sent_back", {"from": "execute", "to": "execute", "feedback": []}),
        ("stage_advanced", {"to": "code_review"}),
        ("item_done", {"item_id": "a"}),
        ("waiting_for_human", {"question": "which?"}),
        ("human_answer", {"text": "the first"}),
    ]
    state = at("execute", *events)
    assert state.current_stage == "execute"
    assert state.attempts == {"execute": 0}
    assert state.items_done == {}
    assert (state.status, state.question) == (Status.RUNNING, None)
    assert state.request_feedback() == ["HUMAN_INPUT: the first"]
    # An answer while running is kept for every call, and moves nothing.
    running = at("research", ("human_answer", {"text": "hint"}))
    assert (running.current_stage, running.status) == ("research", Status.RUNNING)
    assert running.human_inputs == ["hint"]


def test_an_advance_ends_a_wait_and_an_arbitration() -> None:
    state = at("plan_review", ("arbitration", {"feedback": ["x"]}))
    assert state.arbitrating is True
    assert next_calls(state) == [Call("plan_review", "arbiter")]
    state = at(
        "plan_review",
        ("waiting_for_human", {"question": "q"}),
        ("stage_advanced", {"to": "finalize"}),
    )
    assert (state.status, state.question, state.arbitrating) == (Status.RUNNING, None, False)
    paused = at("plan_review", ("paused", {}), ("stage_advanced", {"to": "finalize"}))
    assert paused.status is Status.PAUSED
    assert next_calls(paused) == []


# --- the next calls ------------------------------------------------------------------------------


def test_execute_runs_the_ready_items_that_do_not_overlap_together() -> None:
    items = [
        {"id": "a", "write_scope": ["src/a"]},
        {"id": "b", "write_scope": ["src/b"]},
        {"id": "c", "write_scope": ["src/a/x.py"]},
        {"id": "d", "depends_on": ["a"], "write_scope": ["docs"]},
    ]
    state = at(
        "draft_plan", replied("draft_plan", work_items=items), ("stage_advanced", {"to": "execute"})
    )
    assert next_calls(state) == [
        Call("execute", "implementer", "a"),
        Call("execute", "implementer", "b"),
    ]
    state = fold("t", [*_events(items), ("item_done", {"item_id": "a"})])
    assert next_calls(state) == [
        Call("execute", "implementer", "b"),
        Call("execute", "implementer", "c"),
        Call("execute", "implementer", "d"),
    ]


def _events(items: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        created(),
        ("stage_advanced", {"to": "draft_plan"}),
        replied("draft_plan", work_items=items),
        ("stage_advanced", {"to": "execute"}),
    ]


def test_idle_execute_advances_when_every_item_is_done_and_asks_on_a_cycle() -> None:
    items = [{"id": "a"}, {"id": "b", "depends_on": ["c"]}, {"id": "c", "depends_on": ["b"]}]
    state = fold("t", [*_events(items), ("item_done", {"item_id": "a"})])
    assert next_calls(state) == []
    assert idle_events(state) == [
        (
            "waiting_for_human",
            {
                "stage": "execute",
                "question": "The plan's work items b, c depend on each other in a cycle.",
            },
        )
    ]
    done = fold("t", [*_events([{"id": "a"}]), ("item_done", {"item_id": "a"})])
    assert idle_events(done) == [("stage_advanced", {"from": "execute", "to": "code_review"})]
    assert idle_events(at("research")) == []
    assert idle_events(fold("t", [*_events([{"id": "a"}]), ("paused", {})])) == []


# --- after a reply -------------------------------------------------------------------------------


@pytest.mark.parametrize("decision", ["approve", "APPROVE", "Approve"])
def test_an_approval_advances(decision: str) -> None:
    state = at("plan_review", task_type="plan")
    events = after_reply(state, Call("plan_review", "reviewer"), {"review_decision": decision}, 2)
    assert events == [("stage_advanced", {"from": "plan_review", "to": "finalize"})]


def test_a_needs_human_review_asks_at_once_whatever_the_retries() -> None:
    state = at("plan_review", task_type="plan")
    response = {"review_decision": "needs_human", "findings": ["ok", "which db?"]}
    events = after_reply(state, Call("plan_review", "reviewer"), response, 5)
    assert events == [("waiting_for_human", {"stage": "plan_review", "question": "which db?"})]


@pytest.mark.parametrize("decision", ["revise", "reject"])
def test_a_refusal_goes_back_until_the_retries_are_used_then_to_the_arbiter(decision: str) -> None:
    response = {"review_decision": decision, "findings": ["too vague"]}
    call = Call("plan_review", "reviewer")
    first = at("plan_review", task_type="plan")
    assert after_reply(first, call, response, 1) == [
        ("stage_sent_back", {"from": "draft_plan", "to": "draft_plan", "feedback": ["too vague"]})
    ]
    back = ("stage_sent_back", {"from": "draft_plan", "to": "draft_plan", "feedback": []})
    used = at("plan_review", back, ("stage_advanced", {"to": "plan_review"}), task_type="plan")
    assert after_reply(used, call, response, 1) == [
        ("arbitration", {"stage": "plan_review", "feedback": ["too vague"]})
    ]
    assert after_reply(used, call, response, 2)[0][0] == "stage_sent_back"
    used.roles = {"planner": "p", "reviewer": "r"}
    assert after_reply(used, call, response, 1) == [
        ("waiting_for_human", {"stage": "plan_review", "question": "too vague"})
    ]


def test_no_decision_is_a_refusal_that_says_so() -> None:
    state = at("plan_review", task_type="plan")
    events = after_reply(state, Call("plan_review", "reviewer"), {"findings": ["hm"]}, 1)
    feedback = ["the reviewer gave no review_decision", "hm"]
    assert events == [
        ("stage_sent_back", {"from": "draft_plan", "to": "draft_plan", "feedback": feedback})
    ]


def test_a_failed_verification_goes_to_a_person_never_to_the_arbiter() -> None:
    state = at("verify")
    state.attempts["execute"] = 1
    response = {"review_decision": "reject", "content": "tests fail"}
    assert after_reply(state, Call("verify", "verifier"), response, 1) == [
        ("waiting_for_human", {"stage": "verify", "question": "tests fail"})
    ]


def test_the_arbiter_settles_by_approving_and_otherwise_a_person_is_asked() -> None:
    state = at("code_review", ("arbitration", {"feedback": []}))
    call = Call("code_review", "arbiter")
    assert after_reply(state, call, {"review_decision": "approve"}, 1) == [
        ("stage_advanced", {"from": "code_review", "to": "verify"})
    ]
    for decision in ("revise", "reject", "needs_human", ""):
        events = after_reply(state, call, {"review_decision": decision}, 9)
        assert events == [
            (
                "waiting_for_human",
                {
                    "stage": "code_review",
                    "question": "The agents could not agree; what should they do?",
                },
            )
        ]


def test_a_work_stage_reply_advances_and_the_last_stage_completes() -> None:
    assert after_reply(at("research"), Call("research", "researcher"), {}, 1) == [
        ("stage_advanced", {"from": "research", "to": "draft_plan"})
    ]
    assert after_reply(at("finalize"), Call("finalize", "planner"), {}, 1) == [
        ("completed", {"stage": "finalize"})
    ]
    assert approve_events(at("verify"), "verify") == [
        ("human_approval", {"stage": "verify"}),
        ("stage_advanced", {"from": "verify", "to": "finalize"}),
    ]


@pytest.mark.parametrize(
    ("response", "question"),
    [
        ({"content": "  why?  ", "findings": ["a", "b?"]}, "b?"),
        ({"content": "  plain  ", "findings": ["a"]}, "plain"),
        ({"content": "", "findings": [" ", "first", "second"]}, "first"),
        ({"content": None, "findings": None}, "The agents could not agree; what should they do?"),
    ],
)
def test_the_question_prefers_a_finding_that_asks_then_the_content(
    response: dict[str, Any], question: str
) -> None:
    state = at("plan_review", task_type="plan")
    response = {"review_decision": "needs_human", **response}
    events = after_reply(state, Call("plan_review", "reviewer"), response, 1)
    assert events == [("waiting_for_human", {"stage": "plan_review", "question": question})]


# --- after a failure -----------------------------------------------------------------------------


def test_a_failure_is_retried_then_a_person_is_asked() -> None:
    call = Call("research", "researcher")
    state = at("research")
    assert after_failure(state, call, "timeout", "120 s", 1) == [
        (
            "stage_sent_back",
            {
                "from": "failed:research",
                "to": "research",
                "feedback": ["your previous reply failed: timeout: 120 s"],
            },
        )
    ]
    retried = at(
        "research",
        ("stage_sent_back", {"from": "failed:research", "to": "research", "feedback": []}),
    )
    assert after_failure(retried, call, "timeout", "120 s", 1) == [
        (
            "waiting_for_human",
            {
                "stage": "research",
                "question": "The researcher (?) failed at research: timeout: 120 s. "
                "Fix the agent, then resume; or answer with guidance.",
            },
        )
    ]
    assert after_failure(retried, Call("research", "planner"), "exit", "1", 1)[0][1][
        "question"
    ].startswith("The planner (p) failed at research: exit: 1.")


# --- what the CLI and the dashboards show --------------------------------------------------------


def test_the_view_shows_the_folded_state() -> None:
    items = [{"id": "a", "title": "A", "write_scope": ["src/"]}, {"id": "b", "depends_on": ["a"]}]
    events = [
        *_events(items),
        ("agent_replied", {"stage": "execute", "response": {"ok": 1}, "artifact_ids": ["x1"]}),
        ("item_done", {"item_id": "a"}),
        ("arbitration", {"feedback": ["settle it"]}),
        ("waiting_for_human", {"question": "which?"}),
        ("publish_approved", {}),
    ]
    state = fold("t", events)
    assert state.feedback == ["settle it"]
    assert state.arbitrating is False
    assert state.outputs == {"draft_plan": {"work_items": items}, "execute": {"ok": 1}}
    assert state.view() == {
        "task_id": "t",
        "task_type": "code",
        "goal": "g",
        "status": "waiting_for_human",
        "current_stage": "execute",
        "question": "which?",
        "iterations": 2,
        "max_total_iterations": 30,
        "roles": CODE_ROLES,
        "workspace_root": "/w",
        "artifact_ids": ["x1"],
        "work_items": [
            {"id": "a", "title": "A", "depends_on": [], "write_scope": ["src"], "done": True},
            {"id": "b", "title": "b", "depends_on": ["a"], "write_scope": [], "done": False},
        ],
        "branch": "freemad/t",
        "publish_approved": True,
    }


def test_resuming_a_waiting_review_redoes_its_work_and_resuming_a_pause_does_not() -> None:
    events = [
        ("item_done", {"item_id": "a"}),
        ("waiting_for_human", {"question": "q"}),
        ("resumed", {"more_iterations": 5}),
    ]
    state = at("code_review", *events)
    assert (state.current_stage, state.status, state.question) == ("execute", Status.RUNNING, None)
    assert state.items_done == {}
    assert state.iteration_cap == 35
    paused = at("code_review", ("item_done", {"item_id": "a"}), ("paused", {}), ("resumed", {}))
    assert (paused.current_stage, paused.status) == ("code_review", Status.RUNNING)
    assert paused.items_done == {"a": {"item_id": "a"}}
    # A person's answer to a waiting plan review redoes the plan, and keeps the items done.
    plan = at(
        "plan_review",
        ("item_done", {"item_id": "a"}),
        ("waiting_for_human", {"question": "q"}),
        ("human_answer", {"text": "t"}),
    )
    assert plan.current_stage == "draft_plan"
    assert plan.items_done == {"a": {"item_id": "a"}}
    assert plan.attempts == {"draft_plan": 0}
    for kind, status in (("cancelled", Status.CANCELLED), ("completed", Status.COMPLETED)):
        assert at("research", (kind, {})).status is status


def test_a_send_back_without_feedback_or_an_arbitration_without_it_leaves_none() -> None:
    state = at("plan_review", ("arbitration", {}), task_type="plan")
    assert (state.arbitrating, state.feedback) == (True, [])
    back = ("stage_sent_back", {"from": "draft_plan", "to": "draft_plan"})
    state = fold("t", [created("plan"), ("arbitration", {"feedback": ["x"]}), back, back])
    assert (state.arbitrating, state.feedback) == (False, [])
    assert state.attempts == {"draft_plan": 2}


def test_a_reviewer_who_wrote_the_work_is_refused_by_name() -> None:
    with pytest.raises(RoleError) as caught:
        assign_roles("code", {"p": ["planner", "reviewer"], "i": ["implementer", "reviewer"]})
    assert str(caught.value) == (
        "the reviewer must be a different agent from the planner and the implementer; "
        "only p, i can review"
    )
