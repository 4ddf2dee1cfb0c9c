"""The task stage machine: a task's state as a fold over its events, and what to do next. No I/O.

A task walks its workflow's stages. A work stage is done by its proposer; a review stage is an
independent reviewer's verdict on the work stage before it. A rejected stage goes back to its
work stage with the findings as feedback, up to `max_stage_retries` times; then the arbiter
decides, and a person is asked when the arbiter cannot (or none is configured). Every agent call
is one iteration; at the cap the task asks a person whether to go on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from freemad.core.work_items import WorkItem, ready_batch

WORKFLOWS: dict[str, tuple[str, ...]] = {
    "plan": ("intake", "research", "draft_plan", "plan_review", "finalize"),
    "code": (
        "intake",
        "research",
        "draft_plan",
        "plan_review",
        "execute",
        "code_review",
        "verify",
        "finalize",
    ),
}
# The role that does each stage's work.
STAGE_ROLES: dict[str, str] = {
    "intake": "planner",
    "research": "researcher",
    "draft_plan": "planner",
    "plan_review": "reviewer",
    "execute": "implementer",
    "code_review": "reviewer",
    "verify": "verifier",
    "finalize": "planner",
}
# Review stage -> the work stage it judges (and sends back to).
REVIEWS: dict[str, str] = {
    "plan_review": "draft_plan",
    "code_review": "execute",
    "verify": "execute",
}
# Roles a workflow cannot run without; the others fall back (see `assign_roles`).
REQUIRED_ROLES: dict[str, tuple[str, ...]] = {
    "plan": ("planner", "reviewer"),
    "code": ("planner", "reviewer", "implementer"),
}
FALLBACK_ROLES = {"researcher": "planner", "verifier": "reviewer"}


class Status(str, Enum):
    RUNNING = "running"
    WAITING = "waiting_for_human"
    PAUSED = "paused"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


DECISIONS = ("approve", "revise", "reject", "needs_human")


class RoleError(ValueError):
    """The agents of a config cannot fill the roles a task type needs."""


def assign_roles(task_type: str, agent_roles: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """Role -> agent id: the first agent offering each role, with the reviewer never the agent
    whose work it judges and the arbiter neither. Missing required roles are an error."""
    offered: dict[str, list[str]] = {}
    for agent_id, roles in agent_roles.items():
        for role in roles:
            offered.setdefault(role, []).append(agent_id)
    for role in REQUIRED_ROLES[task_type]:
        if not offered.get(role):
            raise RoleError(
                f"no enabled agent has the role {role!r}, which a {task_type} task needs; "
                + roles_example(list(agent_roles))
            )
    chosen: dict[str, str] = {}
    for role in ("planner", "implementer", "researcher"):
        candidates = offered.get(role) or offered.get(FALLBACK_ROLES.get(role, ""), [])
        if candidates:
            chosen[role] = candidates[0]
    authors = {chosen[r] for r in ("planner", "implementer") if r in chosen}
    verifiers = [a for a in offered.get("verifier", []) if a not in authors]
    if verifiers:
        chosen["verifier"] = verifiers[0]
    reviewers = [a for a in offered["reviewer"] if a not in authors]
    if not reviewers:
        raise RoleError(
            "the reviewer must be a different agent from the planner and the implementer; "
            f"only {', '.join(offered['reviewer'])} can review"
        )
    chosen["reviewer"] = reviewers[0]
    arbiters = [a for a in offered.get("arbiter", []) if a not in {*authors, chosen["reviewer"]}]
    if offered.get("arbiter") and not arbiters:
        # Offered but unusable: dropping it would leave every dispute to a person unsaid.
        taken = {chosen[r]: r for r in ("reviewer", "implementer", "planner") if r in chosen}
        said = ", ".join(f"{a} ({taken[a]})" for a in offered["arbiter"])
        raise RoleError(
            "the arbiter must be another agent than the planner, the implementer and the "
            f"reviewer, but only {said} offer the role 'arbiter'; give it to another agent, "
            "or take it away (a dispute then waits for a person)"
        )
    if arbiters:
        chosen["arbiter"] = arbiters[0]
    return chosen


_EXAMPLE_ROLES = ("[planner, researcher, implementer]", "[reviewer, verifier]", "[arbiter]")


def roles_example(agent_ids: Sequence[str]) -> str:
    """The config lines that give `agent_ids` the roles a task needs, said in one line."""
    if len(agent_ids) < 2:
        return "a task needs two agents at least (the reviewer is never the planner)"
    lines = [f"roles: {r} on {a}" for a, r in zip(agent_ids, _EXAMPLE_ROLES, strict=False)]
    return "give the agents roles in the config, e.g. " + "; ".join(lines)


@dataclass
class TaskState:
    """Everything a decision needs, folded from the events."""

    task_id: str
    task_type: str = "plan"
    goal: str = ""
    workspace_root: str = ""
    roles: dict[str, str] = field(default_factory=dict)
    status: Status = Status.RUNNING
    current_stage: str = "intake"
    attempts: dict[str, int] = field(default_factory=dict)
    iterations: int = 0
    iteration_cap: int = 0
    question: str | None = None
    feedback: list[str] = field(default_factory=list)  # for the next call only
    human_inputs: list[str] = field(default_factory=list)  # for every call from now on
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    artifact_ids: list[str] = field(default_factory=list)
    arbitrating: bool = False
    work_items: list[WorkItem] = field(default_factory=list)
    items_done: dict[str, dict[str, Any]] = field(default_factory=dict)
    branch: str | None = None
    publish_approved: bool = False

    @property
    def stages(self) -> tuple[str, ...]:
        return WORKFLOWS[self.task_type]

    def request_feedback(self) -> list[str]:
        return [*(f"HUMAN_INPUT: {text}" for text in self.human_inputs), *self.feedback]

    def view(self) -> dict[str, Any]:
        """The task as the CLI and the dashboards show it."""
        return {
            "task_id": self.task_id,
            "task_type": self.task_type,
            "goal": self.goal,
            "status": self.status.value,
            "current_stage": self.current_stage,
            "question": self.question,
            "iterations": self.iterations,
            "max_total_iterations": self.iteration_cap,
            "roles": self.roles,
            "workspace_root": self.workspace_root,
            "artifact_ids": self.artifact_ids,
            "work_items": [
                {**item.as_dict(), "done": item.item_id in self.items_done}
                for item in self.work_items
            ],
            "branch": self.branch,
            "publish_approved": self.publish_approved,
        }


def fold(task_id: str, events: Iterable[tuple[str, Mapping[str, Any]]]) -> TaskState:
    """Replay (kind, data) events into a TaskState."""
    state = TaskState(task_id)
    for kind, data in events:
        _APPLY[kind](state, data)
    return state


def _created(s: TaskState, d: Mapping[str, Any]) -> None:
    s.task_type, s.goal, s.workspace_root = d["task_type"], d["goal"], d["workspace_root"]
    s.branch = d.get("branch")
    s.roles, s.iteration_cap = dict(d["roles"]), int(d["max_total_iterations"])
    s.current_stage = s.stages[0]


def _replied(s: TaskState, d: Mapping[str, Any]) -> None:
    s.iterations += 1
    s.outputs[d["stage"]] = dict(d["response"])
    if d["stage"] == "draft_plan":
        s.work_items = WorkItem.from_plan(d["response"].get("work_items") or [])
    s.artifact_ids.extend(d.get("artifact_ids", []))
    s.feedback = []  # delivered with this call


def _failed(s: TaskState, d: Mapping[str, Any]) -> None:
    s.iterations += 1


def _advanced(s: TaskState, d: Mapping[str, Any]) -> None:
    s.current_stage, s.arbitrating, s.question = d["to"], False, None
    if s.status is Status.WAITING:
        s.status = Status.RUNNING


def _sent_back(s: TaskState, d: Mapping[str, Any]) -> None:
    if d["to"] == "execute" and d["from"] == "execute":
        s.items_done = {}  # the whole change is redone, with the findings
    s.current_stage, s.arbitrating = d["to"], False
    s.attempts[d["from"]] = s.attempts.get(d["from"], 0) + 1
    s.feedback = list(d.get("feedback", []))


def _arbitrate(s: TaskState, d: Mapping[str, Any]) -> None:
    s.arbitrating = True
    s.feedback = list(d.get("feedback", []))


def _waiting(s: TaskState, d: Mapping[str, Any]) -> None:
    s.status, s.question, s.arbitrating = Status.WAITING, d["question"], False


def _answered(s: TaskState, d: Mapping[str, Any]) -> None:
    s.human_inputs.append(str(d["text"]))
    if s.status is Status.WAITING:
        # The question is answered, so the task no longer waits on it: it goes on (at the
        # next advance) with the answer in every request.
        _carry_on(s)


def _resumed(s: TaskState, d: Mapping[str, Any]) -> None:
    s.iteration_cap += int(d.get("more_iterations", 0))
    if s.status is Status.WAITING:
        _carry_on(s)
    s.status, s.question = Status.RUNNING, None


def _carry_on(s: TaskState) -> None:
    """A person has spoken (or asks to try again): the work is redone with their input."""
    work = REVIEWS.get(s.current_stage)
    if work is not None:
        s.current_stage = work
        s.attempts[work] = 0
        if work == "execute":
            s.items_done = {}
    s.status, s.question = Status.RUNNING, None


def _status(value: Status) -> Any:
    def apply(s: TaskState, d: Mapping[str, Any]) -> None:
        s.status = value

    return apply


def _rejected(s: TaskState, d: Mapping[str, Any]) -> None:
    s.feedback.append(f"HUMAN_REJECTION of {d['stage']}: {d['reason']}")
    s.current_stage = REVIEWS.get(d["stage"], d["stage"])
    if s.current_stage == "execute":
        s.items_done = {}
    s.status, s.question = Status.RUNNING, None


_APPLY = {
    "task_created": _created,
    "agent_replied": _replied,
    "agent_failed": _failed,
    "stage_advanced": _advanced,
    "stage_sent_back": _sent_back,
    "arbitration": _arbitrate,
    "waiting_for_human": _waiting,
    "human_answer": _answered,
    "human_rejection": _rejected,
    "human_approval": lambda s, d: None,
    "item_done": lambda s, d: s.items_done.__setitem__(d["item_id"], dict(d)),
    "verification": lambda s, d: None,
    "publish_approved": lambda s, d: setattr(s, "publish_approved", True),
    "resumed": _resumed,
    "paused": _status(Status.PAUSED),
    "cancelled": _status(Status.CANCELLED),
    "completed": _status(Status.COMPLETED),
}


@dataclass(frozen=True, slots=True)
class Call:
    """Ask `role`'s agent to do (or review, or arbitrate) `stage`; in execute, one work item."""

    stage: str
    role: str
    item: str | None = None


def next_calls(state: TaskState) -> list[Call]:
    """The next agent calls (several only for independent work items), or none."""
    if state.status is not Status.RUNNING:
        return []
    if state.arbitrating:
        return [Call(state.current_stage, "arbiter")]
    role = STAGE_ROLES[state.current_stage]
    role = role if role in state.roles else FALLBACK_ROLES[role]
    if state.current_stage == "execute":
        batch = ready_batch(state.work_items, state.items_done)
        return [Call("execute", role, item.item_id) for item in batch]
    return [Call(state.current_stage, role)]


def idle_events(state: TaskState) -> list[tuple[str, dict[str, Any]]]:
    """Transitions that need no agent: every work item done, or none able to start."""
    if state.status is not Status.RUNNING or state.current_stage != "execute":
        return []
    if all(item.item_id in state.items_done for item in state.work_items):
        return [_advance(state, "execute")]
    waiting = [i.item_id for i in state.work_items if i.item_id not in state.items_done]
    question = f"The plan's work items {', '.join(waiting)} depend on each other in a cycle."
    return [("waiting_for_human", {"stage": "execute", "question": question})]


def after_reply(
    state: TaskState, call: Call, response: Mapping[str, Any], max_stage_retries: int
) -> list[tuple[str, dict[str, Any]]]:
    """The events that follow an agent's reply: advance, send back, arbitrate, or ask a person."""
    stage = call.stage
    if stage not in REVIEWS:
        return [_advance(state, stage)]
    decision = str(response.get("review_decision") or "").lower()
    findings = [str(f) for f in response.get("findings") or []]
    question = _question(response, findings)
    if call.role == "arbiter":
        if decision == "approve":
            return [_advance(state, stage)]
        # The arbiter could not (or would not) settle it: fail closed, ask a person.
        return [("waiting_for_human", {"stage": stage, "question": question})]
    if decision == "approve":
        return [_advance(state, stage)]
    if decision == "needs_human":
        return [("waiting_for_human", {"stage": stage, "question": question})]
    # revise, reject, or no decision at all (which never counts as approval).
    if not decision:
        findings = ["the reviewer gave no review_decision", *findings]
    work = REVIEWS[stage]
    if state.attempts.get(work, 0) < max_stage_retries:
        return [("stage_sent_back", {"from": work, "to": work, "feedback": findings})]
    # A failed verification is a fact, not a dispute: it goes to a person, never to the arbiter.
    if "arbiter" in state.roles and stage != "verify":
        return [("arbitration", {"stage": stage, "feedback": findings})]
    return [("waiting_for_human", {"stage": stage, "question": question})]


def after_failure(
    state: TaskState, call: Call, cause: str, detail: str, max_stage_retries: int
) -> list[tuple[str, dict[str, Any]]]:
    """A failed call is an attempt like any other; past the retries a person is asked."""
    failures = state.attempts.get(f"failed:{call.stage}", 0)
    if failures < max_stage_retries:
        return [
            (
                "stage_sent_back",
                {
                    "from": f"failed:{call.stage}",
                    "to": call.stage,
                    "feedback": [f"your previous reply failed: {cause}: {detail}"],
                },
            )
        ]
    question = (
        f"The {call.role} ({state.roles.get(call.role, '?')}) failed at {call.stage}: {cause}: "
        f"{detail}. Fix the agent, then resume; or answer with guidance."
    )
    return [("waiting_for_human", {"stage": call.stage, "question": question})]


def iteration_cap_reached(state: TaskState) -> tuple[str, dict[str, Any]] | None:
    if state.iterations < state.iteration_cap:
        return None
    question = (
        f"The task has used its {state.iteration_cap} agent calls at {state.current_stage}. "
        "Resume with --more-iterations N to go on, or cancel it."
    )
    return ("waiting_for_human", {"stage": state.current_stage, "question": question})


def approve_events(state: TaskState, stage: str) -> list[tuple[str, dict[str, Any]]]:
    """A person's approval of the current stage: recorded, and the task moves on."""
    return [("human_approval", {"stage": stage}), _advance(state, stage)]


def _advance(state: TaskState, stage: str) -> tuple[str, dict[str, Any]]:
    stages = state.stages
    index = stages.index(stage)
    if index + 1 == len(stages):
        return ("completed", {"stage": stage})
    return ("stage_advanced", {"from": stage, "to": stages[index + 1]})


def _question(response: Mapping[str, Any], findings: list[str]) -> str:
    text = str(response.get("content") or "").strip()
    for candidate in [*(f for f in findings if "?" in f), text, *findings]:
        if candidate.strip():
            return candidate.strip()
    return "The agents could not agree; what should they do?"
