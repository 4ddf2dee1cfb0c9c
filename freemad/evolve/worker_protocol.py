"""What an evolve worker is told and what a directions debate must answer.

The worker speaks the task protocol: its prompt ends with `Task request JSON:` and an
`EvolveRequest`; it edits its worktree (or lists `writes`) and answers with a TaskResponse.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from freemad.core.evolve import ComparatorSpec
from freemad.debate.prompts import template_environment
from freemad.tasks.task_protocol import MARKER

MAX_DIRECTIONS = 3
MAX_DIRECTION_CHARS = 400


class Incumbent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    commit: str
    components: dict[str, float]


class Rejection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    iteration: int
    reason: str


class EvolveRequest(BaseModel):
    """The JSON after `Task request JSON:` in a worker's prompt."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    task_type: str = "evolve"
    stage: str = "variation"
    role: str = "implementer"
    goal: str
    agent_id: str
    iteration: int
    # The generation (the iteration) and this candidate's 0-based index within it: workers told
    # apart by it can diversify (evolve.population.size > 1).
    generation: int = 0
    candidate: int = 0
    workspace_root: str
    allowed_actions: list[str]
    knowledge_paths: list[str] = Field(default_factory=list)
    protected_paths: list[str] = Field(default_factory=list)
    objective: str
    incumbent: Incumbent
    best_ever: dict[str, float] = Field(default_factory=dict)
    directions: list[str] = Field(default_factory=list)
    recent_rejections: list[Rejection] = Field(default_factory=list)
    plan: str | None = None
    # What evolve.context_budget_chars left out of this request, in words; None when nothing.
    context_note: str | None = None


def render_worker_prompt(request: EvolveRequest) -> str:
    return (
        template_environment(None)
        .get_template("evolve_worker.j2")
        .render(
            request=request,
            marker=MARKER,
            # No context_note when nothing was cut: the request is what it was before the cap.
            request_json=request.model_dump_json(
                indent=2, exclude={"context_note"} if request.context_note is None else None
            ),
        )
    )


def objective(gate: Sequence[str], comparator: Sequence[ComparatorSpec]) -> str:
    """The admission rule in one sentence, for prompts and reports."""
    rungs = [
        f"{entry.component} ({'lower' if entry.direction == 'minimize' else 'higher'} is better"
        + (f", by more than {entry.epsilon:g}" if entry.epsilon else "")
        + ")"
        for entry in comparator
    ]
    rule = "every judge stage succeeds"
    if gate:
        rule += ", " + " and ".join(gate) + " holds"
    return f"{rule}, and it beats the current version on {', then '.join(rungs)}"


def components_text(components: Mapping[str, float]) -> str:
    return ", ".join(f"{name}={value:g}" for name, value in components.items()) or "nothing"


def render_plan_requirement(
    goal: str,
    version: int,
    components: Mapping[str, float],
    objective_text: str,
    directions: Sequence[str],
    rejections: Sequence[Rejection],
) -> str:
    return (
        template_environment(None)
        .get_template("evolve_plan.j2")
        .render(
            goal=goal,
            version=version,
            components=components_text(components),
            objective=objective_text,
            directions=directions,
            rejections=rejections,
        )
    )


def render_directions_requirement(
    goal: str,
    problem: str,
    version: int,
    components: Mapping[str, float],
    objective_text: str,
    rejections: Sequence[Rejection],
    tried: Sequence[str],
) -> str:
    return (
        template_environment(None)
        .get_template("evolve_directions.j2")
        .render(
            goal=goal,
            problem=problem,
            version=version,
            components=components_text(components),
            objective=objective_text,
            rejections=rejections,
            tried=tried,
            max_directions=MAX_DIRECTIONS,
            max_chars=MAX_DIRECTION_CHARS,
        )
    )


class Directions(BaseModel):
    """What a directions debate's winning solution must be: this object and nothing else."""

    model_config = ConfigDict(extra="forbid")

    directions: list[str] = Field(min_length=1, max_length=MAX_DIRECTIONS)

    @field_validator("directions")
    @classmethod
    def _sentences(cls, value: list[str]) -> list[str]:
        cleaned = [" ".join(text.split()) for text in value]
        for text in cleaned:
            if not text:
                raise ValueError("a direction is empty")
            if len(text) > MAX_DIRECTION_CHARS:
                raise ValueError(f"a direction is longer than {MAX_DIRECTION_CHARS} characters")
        return cleaned


def parse_directions(solution: str) -> list[str]:
    """The directions in a debate's winning solution; ValueError says why there are none.

    The solution must be one JSON object (a fenced code block around it is tolerated, since
    agents add one out of habit); anything else fails closed."""
    text = solution.strip()
    if text.startswith("```"):
        lines = text.splitlines()
        if len(lines) >= 2 and lines[-1].strip().startswith("```"):
            text = "\n".join(lines[1:-1]).strip()
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the winning solution is not JSON ({exc.msg})") from None
    try:
        return Directions.model_validate(data).directions
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "the object"
        raise ValueError(
            f"the directions do not fit the schema ({where}: {first['msg']})"
        ) from None
