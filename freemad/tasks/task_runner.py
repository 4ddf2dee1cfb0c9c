"""The tasks runtime: drives the stage machine with agents, one durable step at a time.

Every step (one agent call and the decisions that follow from its reply) is appended to the store
in one transaction, and the next step is decided from the store again. So a task killed at any
point resumes where it stopped, repeats at most the call that was in flight, and can be steered
by another process (answer, approve, pause, cancel) between any two steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from freemad import runner
from freemad.adapters import Adapters, required
from freemad.agents.agent_port import AgentPort
from freemad.config.load import config_digest
from freemad.config.models import FreemadConfig
from freemad.core.task_machine import (
    WORKFLOWS,
    Call,
    RoleError,
    Status,
    TaskState,
    approve_events,
    assign_roles,
    fold,
    idle_events,
    iteration_cap_reached,
    next_calls,
)
from freemad.errors import ConfigError, UsageError
from freemad.logs import step_line
from freemad.store.store_port import Store
from freemad.tasks.steps import Stepper
from freemad.workspace.repository_port import Repositories, TaskWorktree

Step = tuple[str, dict[str, Any]]
StepSink = Callable[[str, dict[str, Any]], None]
log = logging.getLogger(__name__)


class TaskRunner:
    def __init__(
        self,
        config: FreemadConfig,
        store: Store,
        *,
        ports: Mapping[str, AgentPort] | None = None,
        on_step: StepSink | None = None,
        config_arg: str = "",
        on_call: StepSink | None = None,
        adapters: Adapters | None = None,
    ) -> None:
        self.config = config
        self.store = store
        # An agent with a port in `ports` works through it; any other gets a port from the agent
        # factory of `adapters`. Running a task needs the adapters (for its sandboxes and a code
        # task's worktree); reading and steering a task does not.
        self.given_ports = dict(ports or {})
        self.adapters = adapters
        self.on_step = on_step
        # Told as each agent call begins (not a stored step): live progress shows the agent at
        # work; its reply or failure comes to `on_step` as a stored step.
        self.on_call = on_call
        # What a command printed for a person needs to find this config again (` --config F`).
        self.config_arg = config_arg

    # --- commands -----------------------------------------------------------------------------

    def start(
        self, task_type: str, goal: str, workspace_root: str | Path, *, task_id: str | None = None
    ) -> TaskState:
        """Create a task (with `task_id`, or a new one) and run it until it waits or ends."""
        if task_type not in WORKFLOWS:
            raise UsageError(
                f"unknown task type {task_type!r}; choose one of {', '.join(WORKFLOWS)}"
            )
        goal = goal.replace("\x00", "").strip()
        if not goal:
            raise UsageError("the goal is empty")
        root = Path(workspace_root).resolve()
        if not root.is_dir():
            raise UsageError(f"the workspace root {workspace_root} is not a folder")
        try:
            roles = assign_roles(task_type, {a.id: a.roles for a in self.config.enabled_agents})
        except RoleError as exc:
            raise ConfigError(f"agents: {exc}") from None
        task_id = task_id or uuid.uuid4().hex[:16]
        workspace = (
            self._repos().task_worktree(root, task_id, self._worktrees_dir())
            if task_type == "code"
            else None
        )
        created: dict[str, Any] = {
            "branch": workspace.branch if workspace else None,
            "task_type": task_type,
            "goal": goal,
            "workspace_root": str(root),
            "roles": roles,
            "max_total_iterations": self.config.task.max_total_iterations,
            "config_digest": config_digest(self.config),
            "config_arg": self.config_arg,
        }
        self.store.create_run(task_id, "task", {"task_type": task_type, "goal": goal[:200]})
        self._append(task_id, [("task_created", created)])
        return self.advance(task_id)

    def state(self, task_id: str) -> TaskState:
        events = self.store.events(task_id)
        if not events:
            raise UsageError(f"no task {task_id!r} in {self.config.task.store_path}")
        return fold(task_id, ((e.kind, e.data) for e in events))

    def answer(self, task_id: str, text: str) -> TaskState:
        state = self.state(task_id)
        if state.status is not Status.WAITING:
            raise UsageError(
                f"task {task_id} is not waiting for an answer (status: {state.status.value})"
            )
        if not text.strip():
            raise UsageError("the answer is empty")
        return self._append(task_id, [("human_answer", {"text": text.strip()})])

    def approve(self, task_id: str, stage: str) -> TaskState:
        if stage == "publish":
            return self._approve_publish(task_id)
        state = self._at_stage(task_id, stage)
        return self._append(task_id, approve_events(state, stage))

    def _approve_publish(self, task_id: str) -> TaskState:
        """Publishing (push, pull request) happens only after this; the GitHub layer does it."""
        state = self.state(task_id)
        if state.task_type != "code" or state.status is not Status.COMPLETED or not state.branch:
            raise UsageError(
                f"only a completed code task with a branch can be published; task {task_id} is a "
                f"{state.status.value} {state.task_type} task"
            )
        return self._append(task_id, [("publish_approved", {"branch": state.branch})])

    def reject(self, task_id: str, stage: str, reason: str) -> TaskState:
        self._at_stage(task_id, stage)
        if not reason.strip():
            raise UsageError("say why the stage is rejected")
        return self._append(task_id, [("human_rejection", {"stage": stage, "reason": reason})])

    def pause(self, task_id: str) -> TaskState:
        self._live(task_id)
        return self._append(task_id, [("paused", {})])

    def cancel(self, task_id: str) -> TaskState:
        self._live(task_id)
        return self._append(task_id, [("cancelled", {})])

    def resume(self, task_id: str, more_iterations: int = 0) -> TaskState:
        self._live(task_id)
        if more_iterations < 0:
            raise UsageError("--more-iterations must be 0 or more")
        with self._exclusive(task_id):
            self._append(task_id, [("resumed", {"more_iterations": more_iterations})])
            return runner.run(self._advance(task_id))

    def inspect(self, task_id: str) -> dict[str, Any]:
        state = self.state(task_id)
        return {
            "task": state.view(),
            "events": [
                {"seq": e.seq, "time": e.time, "kind": e.kind, "data": e.data}
                for e in self.store.events(task_id)
            ],
            "artifacts": [
                {"artifact_id": a.artifact_id, "name": a.name, "sha256": a.sha256, "size": a.size}
                for a in self.store.artifacts(task_id)
            ],
        }

    # --- the loop -----------------------------------------------------------------------------

    def advance(self, task_id: str) -> TaskState:
        """Run steps until the task waits, pauses, finishes or is cancelled."""
        with self._exclusive(task_id):
            return runner.run(self._advance(task_id))

    @contextlib.contextmanager
    def _exclusive(self, task_id: str) -> Iterator[None]:
        """One process runs a task at a time, so a resume never starts a second implementer
        beside a live one; the lock dies with its process (kill -9 included)."""
        folder = self._worktrees_dir()
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f"{task_id}.lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UsageError(
                    f"task {task_id} is being run by another process; wait for it, or pause it"
                ) from None
            yield

    async def _advance(self, task_id: str) -> TaskState:
        state = self.state(task_id)
        adapters = required(self.adapters, "running a task")
        stepper = Stepper(
            self.config, self.store, self.given_ports, adapters, self._workspace(state)
        )
        while True:
            state = self.state(task_id)
            calls = next_calls(state)
            if not calls:
                idle = idle_events(state)
                if not idle:
                    return state
                self._append(task_id, idle)
                continue
            capped = iteration_cap_reached(state)
            if capped is not None:
                self._append(task_id, [capped])
            elif (
                state.current_stage == "verify"
                and self.config.task.tool_policy.verification_commands
            ):
                self._append(task_id, stepper.verification_step(state))
            elif calls[0].item is None:
                self._calling(state, calls[:1])
                self._append(task_id, await stepper.agent_step(state, calls[0]))
            else:
                # Independent work items run at once; each is recorded as soon as it is done.
                self._calling(state, calls)
                pending = [asyncio.ensure_future(stepper.item_step(state, c)) for c in calls]
                try:
                    for finished in asyncio.as_completed(pending):
                        self._append(task_id, await finished)
                finally:
                    for task in pending:
                        task.cancel()

    def _calling(self, state: TaskState, calls: list[Call]) -> None:
        for call in calls:
            where = {"stage": call.stage, "role": call.role, "agent": state.roles.get(call.role)}
            where["item"] = call.item
            log.debug("task %s: %s", state.task_id, step_line("agent_called", where))
            if self.on_call is not None:
                self.on_call("agent_called", where)

    def _workspace(self, state: TaskState) -> TaskWorktree | None:
        """Code tasks in a git repository work on a branch in a worktree of their own."""
        if state.task_type != "code":
            return None
        worktrees = self._worktrees_dir()
        return self._repos().task_worktree(Path(state.workspace_root), state.task_id, worktrees)

    def _repos(self) -> Repositories:
        return required(self.adapters, "a code task's worktree").repos

    def _worktrees_dir(self) -> Path:
        configured = self.config.task.worktrees_dir
        return Path(configured) if configured else Path(tempfile.gettempdir()) / "freemad-worktrees"

    # --- helpers ------------------------------------------------------------------------------

    def _append(self, task_id: str, steps: list[Step]) -> TaskState:
        self.store.append_many(task_id, steps)
        state = self.state(task_id)
        self.store.update_run(task_id, status=state.status.value, summary=state.view())
        for kind, data in steps:
            log.info("task %s: %s", task_id, step_line(kind, data))
            if self.on_step is not None:
                self.on_step(kind, data)
        return state

    def _live(self, task_id: str) -> TaskState:
        state = self.state(task_id)
        if state.status in (Status.COMPLETED, Status.CANCELLED):
            raise UsageError(f"task {task_id} is {state.status.value}")
        return state

    def _at_stage(self, task_id: str, stage: str) -> TaskState:
        state = self._live(task_id)
        if stage not in state.stages:
            raise UsageError(
                f"a {state.task_type} task has no stage {stage!r}; its stages: "
                f"{', '.join(state.stages)}"
            )
        if stage != state.current_stage:
            raise UsageError(f"task {task_id} is at {state.current_stage}, not {stage}")
        return state
