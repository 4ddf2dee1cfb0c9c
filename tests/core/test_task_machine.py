"""The pure stage machine: roles, transitions, people, caps."""

from __future__ import annotations

import pytest

from freemad.core.task_machine import (
    Call,
    RoleError,
    Status,
    after_failure,
    after_reply,
    approve_events,
    assign_roles,
    fold,
    iteration_cap_reached,
    next_calls,
)

ROLES = {"planner": "p", "researcher": "p", "reviewer": "r", "arbiter": "a"}


def created(task_type: str = "plan", cap: int = 30, roles=ROLES):
    return (
        "task_created",
        {
            "task_type": task_type,
            "goal": "g",
            "workspace_root": "/w",
            "roles": roles,
            "max_total_iterations": cap,
        },
    )


def replied(stage: str, role: str, **response):
    return ("agent_replied", {"stage": stage, "role": role, "agent": "x", "response": response})


def test_roles_keep_the_reviewer_and_arbiter_independent() -> None:
    roles = assign_roles("plan", {"a": ["planner", "reviewer"], "b": ["reviewer"]})
    assert roles["planner"] == "a" and roles["reviewer"] == "b"
    assert "arbiter" not in roles  # nobody offers it: a dispute waits for a person
    # Offered only where it cannot be taken (b reviews): refused, as docs/tasks.md says, not
    # dropped without a word.
    with pytest.raises(RoleError, match=r"only b \(reviewer\) offer the role 'arbiter'"):
        assign_roles("plan", {"a": ["planner", "reviewer"], "b": ["reviewer", "arbiter"]})
    with pytest.raises(RoleError, match=r"only a \(planner\), b \(reviewer\) offer"):
        assign_roles("plan", {"a": ["planner", "arbiter"], "b": ["reviewer", "arbiter"]})
    three = {"a": ["planner", "arbiter"], "b": ["reviewer"], "c": ["arbiter"]}
    assert assign_roles("plan", three)["arbiter"] == "c"
    with pytest.raises(RoleError, match="role 'reviewer'"):
        assign_roles("plan", {"a": ["planner"]})
    # Without roles, the error says which config lines give them, naming the agents.
    with pytest.raises(RoleError) as refused:
        assign_roles("plan", {"x": [], "y": [], "z": []})
    assert str(refused.value) == (
        "no enabled agent has the role 'planner', which a plan task needs; give the agents "
        "roles in the config, e.g. roles: [planner, researcher, implementer] on x; "
        "roles: [reviewer, verifier] on y; roles: [arbiter] on z"
    )
    with pytest.raises(RoleError, match=r"two agents at least"):
        assign_roles("plan", {"solo": []})
    with pytest.raises(RoleError, match=r"on p; roles: \[reviewer, verifier\] on q$"):
        assign_roles("plan", {"p": ["planner"], "q": []})
    with pytest.raises(RoleError, match="different agent"):
        assign_roles("plan", {"a": ["planner", "reviewer"]})
    with pytest.raises(RoleError, match="'implementer'"):
        assign_roles("code", {"a": ["planner"], "b": ["reviewer"]})
    assert assign_roles("plan", {"a": ["planner"], "b": ["reviewer"]})["researcher"] == "a"


def test_work_stages_advance_and_the_review_sends_back_with_findings() -> None:
    events = [created()]
    state = fold("t", events)
    assert next_calls(state) == [Call("intake", "planner")]
    for stage, role in (
        ("intake", "planner"),
        ("research", "researcher"),
        ("draft_plan", "planner"),
    ):
        state = fold("t", events)
        assert next_calls(state) == [Call(stage, role)]
        events += [replied(stage, role, content="x"), *after_reply(state, Call(stage, role), {}, 1)]
    state = fold("t", events)
    assert state.current_stage == "plan_review"
    review = {"review_decision": "revise", "findings": ["too vague"]}
    steps = after_reply(state, Call("plan_review", "reviewer"), review, 1)
    assert steps == [
        ("stage_sent_back", {"from": "draft_plan", "to": "draft_plan", "feedback": ["too vague"]})
    ]
    events += [replied("plan_review", "reviewer", **review), *steps]
    state = fold("t", events)
    assert state.current_stage == "draft_plan" and state.request_feedback() == ["too vague"]


def test_after_the_retries_the_arbiter_then_a_person_decides() -> None:
    state = fold("t", [created(), ("stage_advanced", {"from": "intake", "to": "plan_review"})])
    state.attempts["draft_plan"] = 1
    steps = after_reply(state, Call("plan_review", "reviewer"), {"review_decision": "reject"}, 1)
    assert steps[0][0] == "arbitration"
    state = fold(
        "t", [created(), ("stage_advanced", {"from": "intake", "to": "plan_review"}), *steps]
    )
    assert next_calls(state) == [Call("plan_review", "arbiter")]
    steps = after_reply(
        state,
        Call("plan_review", "arbiter"),
        {"review_decision": "needs_human", "findings": ["SQLite or Postgres?"]},
        1,
    )
    assert steps == [
        ("waiting_for_human", {"stage": "plan_review", "question": "SQLite or Postgres?"})
    ]


def test_no_decision_never_counts_as_approval() -> None:
    state = fold("t", [created(), ("stage_advanced", {"from": "intake", "to": "plan_review"})])
    ((kind, data),) = after_reply(state, Call("plan_review", "reviewer"), {"content": "fine"}, 1)
    assert kind == "stage_sent_back" and "no review_decision" in data["feedback"][0]


def test_without_an_arbiter_a_dispute_goes_to_a_person() -> None:
    roles = {"planner": "p", "reviewer": "r"}
    state = fold(
        "t", [created(roles=roles), ("stage_advanced", {"from": "intake", "to": "plan_review"})]
    )
    steps = after_reply(state, Call("plan_review", "reviewer"), {"review_decision": "revise"}, 0)
    assert steps[0][0] == "waiting_for_human"


def test_answers_persist_and_resume_redoes_the_reviewed_work() -> None:
    events = [
        created(),
        ("stage_advanced", {"from": "intake", "to": "plan_review"}),
        ("waiting_for_human", {"stage": "plan_review", "question": "Which?"}),
        ("human_answer", {"text": "Use SQLite."}),
        ("resumed", {"more_iterations": 0}),
    ]
    state = fold("t", events)
    assert state.status is Status.RUNNING and state.current_stage == "draft_plan"
    events.append(replied("draft_plan", "planner", content="plan"))
    assert fold("t", events).request_feedback() == ["HUMAN_INPUT: Use SQLite."]


def test_approval_moves_on_and_the_last_stage_completes() -> None:
    state = fold("t", [created(), ("stage_advanced", {"from": "intake", "to": "finalize"})])
    assert approve_events(state, "finalize")[-1] == ("completed", {"stage": "finalize"})


def test_failures_are_attempts_and_the_cap_asks_a_person() -> None:
    state = fold("t", [created(cap=2)])
    first = after_failure(state, Call("intake", "planner"), "timeout", "slow", 1)
    assert first[0][0] == "stage_sent_back"
    state = fold("t", [created(cap=2), ("agent_failed", {}), *first])
    assert (
        after_failure(state, Call("intake", "planner"), "timeout", "slow", 1)[0][0]
        == "waiting_for_human"
    )
    state = fold("t", [created(cap=2), ("agent_failed", {}), ("agent_failed", {})])
    capped = iteration_cap_reached(state)
    assert capped is not None and "--more-iterations" in capped[1]["question"]
    state = fold(
        "t",
        [
            created(cap=2),
            ("agent_failed", {}),
            ("agent_failed", {}),
            capped,
            ("resumed", {"more_iterations": 3}),
        ],
    )
    assert state.iteration_cap == 5 and iteration_cap_reached(state) is None


def test_ready_batches_honour_dependencies_and_scopes() -> None:
    from freemad.core.work_items import WorkItem, ready_batch

    plan = WorkItem.from_plan(
        [
            {"id": "a", "write_scope": ["src/a"]},
            {"id": "b", "write_scope": ["src/b"]},
            {"id": "c", "depends_on": ["a", "b"], "write_scope": ["src"]},
            {"id": "d", "write_scope": ["src/a/x"]},
            {"id": "e", "depends_on": ["ghost"]},
        ]
    )
    assert [i.item_id for i in ready_batch(plan, set())] == ["a", "b"]
    assert [i.item_id for i in ready_batch(plan, {"a", "b"})] == ["c"]
    assert [i.item_id for i in ready_batch(plan, {"a", "b", "c"})] == ["d"]
    assert plan[4].depends_on == (), "unknown dependencies are dropped"
    assert [i.item_id for i in WorkItem.from_plan([])] == ["all"]
    cycle = WorkItem.from_plan([{"id": "x", "depends_on": ["y"]}, {"id": "y", "depends_on": ["x"]}])
    assert ready_batch(cycle, set()) == []
