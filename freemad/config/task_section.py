"""The `task:` section: where tasks are stored, how far they may go, and what agents may touch."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from freemad.config.strict import PositiveInt, StrictModel
from freemad.config.strict import doc as _doc

ROLES = ("researcher", "planner", "reviewer", "implementer", "verifier", "arbiter")


class ToolPolicy(StrictModel):
    """Enforced, not advisory: a violation becomes a finding the reviewer sees."""

    allow_web_research: bool = _doc("Agents may use their own web research tools.", False)
    allow_workspace_write: bool = _doc(
        "Agents' proposed writes may be applied to the workspace.", False
    )
    allowed_write_roots: list[str] = _doc(
        "Workspace-relative folders writes may touch; empty means the whole workspace.", list
    )
    allow_local_commands: bool = _doc("Agents' proposed commands may be run.", False)
    allowed_local_commands: list[str] = _doc(
        "Programs (first word) agents' commands may run.", list
    )
    verification_commands: list[str] = _doc("Commands the verify stage always runs.", list)
    command_timeout_sec: Annotated[float, Field(gt=0)] = _doc(
        "Seconds one local command may take.", 300.0
    )
    command_network: bool = _doc(
        "Commands may use the network (false: each in a network namespace of its own).", False
    )

    @field_validator("allowed_write_roots")
    @classmethod
    def _relative(cls, value: list[str]) -> list[str]:
        for root in value:
            if root.startswith("/") or ".." in root.split("/"):
                raise ValueError(f"{root!r} must be a relative path inside the workspace")
        return value


class TaskConfig(StrictModel):
    """Autonomous plan and code tasks."""

    store_path: str = _doc(
        "SQLite store of tasks and their events, relative to the config file's folder.",
        ".freemad/tasks/tasks.db",
    )
    artifacts_dir: str = _doc(
        "Folder of task artifacts (content-addressed).", ".freemad/tasks/artifacts"
    )
    max_stage_retries: Annotated[int, Field(ge=0)] = _doc(
        "Rejected attempts of a stage before the arbiter decides.", 1
    )
    max_total_iterations: PositiveInt = _doc(
        "Agent calls before the task asks a person whether to go on.", 30
    )
    worktrees_dir: str | None = _doc(
        "Where code tasks' git worktrees go (outside the repository); null: the system's temp folder.",
        None,
    )
    tool_policy: ToolPolicy = _doc("What agents may write and run.", ToolPolicy)
