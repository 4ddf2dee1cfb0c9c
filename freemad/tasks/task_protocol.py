"""The task protocol: a request as JSON at the end of the prompt, a TaskResponse JSON object back."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from freemad.core.task_machine import DECISIONS

MARKER = "Task request JSON:"

_INSTRUCTIONS = """\
You are the {role} of a FREE-MAD {task_type} task, at its {stage} stage.
{duty}
Reply with one JSON object, a TaskResponse, and nothing else:
{{"agent_id": "...", "stage": "{stage}", "role": "{role}", "content": "your work, in markdown",
  "review_decision": "approve | revise | reject | needs_human (reviewers and arbiters only)",
  "findings": ["concrete problems, or the question for a person"], "work_items": [], "sources": []}}
"""

_DUTIES = {
    "planner": "Do the stage's work for the goal below; take every feedback item into account.",
    "researcher": "Gather what the planner needs to know: facts, constraints, prior art, sources.",
    "reviewer": (
        "Judge the work under review independently. Approve only what is ready; otherwise list "
        "concrete findings. When only a person can decide, say needs_human and ask the question."
    ),
    "arbiter": (
        "The proposer and the reviewer disagree. Approve if the work is ready despite the findings; "
        "say needs_human with a concrete question when a person must decide."
    ),
    "implementer": "Carry out the plan's work items within your write scope.",
    "verifier": "Check that the work meets the goal; report what you ran and saw.",
}


class TaskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str
    task_type: str
    goal: str
    stage: str
    role: str
    agent_id: str
    workspace_root: str
    allowed_actions: list[str]
    artifact_refs: list[str] = Field(default_factory=list)
    feedback: list[str] = Field(default_factory=list)
    under_review: dict[str, Any] | None = None
    work_item: dict[str, Any] | None = None
    previous_outputs: dict[str, str] = Field(default_factory=dict)


class TaskResponse(BaseModel):
    """What an agent answers. Fields we do not know are kept, never an error."""

    model_config = ConfigDict(extra="allow")

    agent_id: str = ""
    stage: str = ""
    role: str = ""
    content: str = ""
    review_decision: Literal["approve", "revise", "reject", "needs_human"] | None = None
    findings: list[str] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)
    artifact_ids: list[str] = Field(default_factory=list)
    work_items: list[dict[str, Any]] = Field(default_factory=list)
    writes: list[dict[str, Any]] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)

    @field_validator("review_decision", mode="before")
    @classmethod
    def _decision(cls, value: Any) -> Any:
        if isinstance(value, str):
            word = value.strip().lower().replace("-", "_").replace(" ", "_")
            return word if word in DECISIONS else value
        return value

    @field_validator("findings", "sources", "commands", mode="before")
    @classmethod
    def _strings(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value]
        if isinstance(value, list):
            return [v if isinstance(v, str) else json.dumps(v) for v in value]
        return value


class ResponseError(ValueError):
    """The agent's reply holds no usable TaskResponse."""


def render_prompt(request: TaskRequest) -> str:
    intro = _INSTRUCTIONS.format(
        role=request.role,
        task_type=request.task_type,
        stage=request.stage,
        duty=_DUTIES.get(request.role, ""),
    )
    return f"{intro}\n{MARKER}\n{request.model_dump_json(indent=2)}\n"


def parse_response(text: str) -> TaskResponse:
    """The last JSON object in the reply that is a valid TaskResponse (fences and prose around it
    are tolerated)."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    index = text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except ValueError:
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        index = text.find("{", end)
    if not found:
        raise ResponseError("no JSON object in the reply")
    problem = ""
    for candidate in reversed(found):
        try:
            return TaskResponse.model_validate(candidate)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            problem = f"{where}: {first['msg']}"
    raise ResponseError(f"the reply's JSON is not a TaskResponse ({problem})")
