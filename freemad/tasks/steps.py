"""One step of a task: an agent call and its decision, a work item with its effects, or verification.

Each step returns the events it produced; the runtime appends them in one transaction, so a step
is recorded whole or not at all.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from freemad.adapters import Adapters, port_for
from freemad.agents.agent_port import AgentPort, CallRequest
from freemad.config.models import FreemadConfig, Mode
from freemad.core.task_machine import REVIEWS, Call, TaskState, after_failure, after_reply
from freemad.sandbox.sandbox_port import Sandbox, View
from freemad.store.store_port import Store
from freemad.tasks.task_protocol import (
    ResponseError,
    TaskRequest,
    TaskResponse,
    parse_response,
    render_prompt,
)
from freemad.workspace.policy import apply_writes, check_command
from freemad.workspace.repository_port import TaskWorktree

Step = tuple[str, dict[str, Any]]
# How much of an earlier stage's output, a diff, or a command's output a request carries.
_CONTEXT_CHARS = 8_000


class Stepper:
    def __init__(
        self,
        config: FreemadConfig,
        store: Store,
        ports: Mapping[str, AgentPort],
        adapters: Adapters,
        workspace: TaskWorktree | None,
    ) -> None:
        self.config = config
        self.store = store
        self.given_ports = dict(ports)
        self.adapters = adapters
        self.workspace = workspace
        self.policy = config.task.tool_policy
        mode = config.security.sandbox
        self.sandbox: Sandbox = adapters.sandboxes.code(mode, self.policy.command_network)
        self.agent_box = adapters.sandboxes.agent(mode)

    def agent_sandbox_for(self, state: TaskState) -> Sandbox | None:
        """A code task's agents edit files: they run in the sandbox, in a worktree or in place."""
        sandboxed = state.task_type == "code" or self.config.security.sandbox_agents
        return self.agent_box if sandboxed else None

    def view(self, state: TaskState) -> View:
        """What a task's agents and commands may touch: its workdir; never the repository's .git."""
        hidden = [self.workspace.git_dir] if self.workspace else []
        return View.of([self.workdir(state)], hidden=hidden)

    def workdir(self, state: TaskState) -> Path:
        return self.workspace.path if self.workspace else Path(state.workspace_root)

    async def agent_step(self, state: TaskState, call: Call) -> list[Step]:
        """A stage's work, review or arbitration."""
        reply = await self._ask(state, call)
        if isinstance(reply, list):
            return reply
        response, replied = reply
        body = response.model_dump(mode="json")
        return [replied, *after_reply(state, call, body, self.config.task.max_stage_retries)]

    async def item_step(self, state: TaskState, call: Call) -> list[Step]:
        """One work item: the implementer's reply, its writes and commands under the tool policy,
        and a commit on the task's branch."""
        reply = await self._ask(state, call)
        if isinstance(reply, list):
            return reply
        response, replied = reply
        item = next(i for i in state.work_items if i.item_id == call.item)
        workdir = self.workdir(state)
        written, violations = apply_writes(workdir, response.writes, self.policy, item.write_scope)
        commands: list[dict[str, Any]] = []
        for command in response.commands:
            argv = check_command(command, self.policy)
            if not isinstance(argv, list):
                violations.append(argv)
                continue
            commands.append(self._run(state, argv, workdir, f"{item.item_id}-command"))
        commit = self.workspace.commit(f"{item.item_id}: {item.title}") if self.workspace else None
        done = {
            "item_id": item.item_id,
            "written": written,
            "violations": [v.finding() for v in violations],
            "commands": commands,
            "commit": commit,
            "summary": response.content[:2000],
        }
        return [replied, ("item_done", done)]

    def verification_step(self, state: TaskState) -> list[Step]:
        """The configured verification commands; a failure is an attempt like a rejected review."""
        workdir = self.workdir(state)
        results = [
            self._run(state, shlex.split(command), workdir, "verify")
            for command in self.policy.verification_commands
        ]
        failed = [r for r in results if r["exit_code"] != 0]
        findings = [f"`{' '.join(r['argv'])}` exited {r['exit_code']}: {r['tail']}" for r in failed]
        verdict = {"review_decision": "revise" if failed else "approve", "findings": findings}
        retries = self.config.task.max_stage_retries
        return [
            ("verification", {"passed": not failed, "results": results}),
            *after_reply(state, Call("verify", "verifier"), verdict, retries),
        ]

    async def _ask(self, state: TaskState, call: Call) -> tuple[TaskResponse, Step] | list[Step]:
        """Call the agent; its parsed reply and the event recording it, or the failure's events."""
        agent_id = state.roles[call.role]
        agent = next(a for a in self.config.agents if a.id == agent_id)
        prompt = render_prompt(self._request(state, call, agent_id))
        limit = min(agent.timeout, self.config.security.cli_timeout_ms / 1000)
        port = self._port(agent_id, state)
        result = await port.call(CallRequest(Mode.TASK, prompt, limit))
        where = {"stage": call.stage, "role": call.role, "agent": agent_id, "item": call.item}
        retries = self.config.task.max_stage_retries
        if not result.ok:
            failed = (
                "agent_failed",
                {**where, "cause": result.status.value, "detail": result.detail},
            )
            return [
                failed,
                *after_failure(state, call, result.status.value, result.detail, retries),
            ]
        try:
            response = parse_response(result.text)
        except ResponseError as exc:
            failed = ("agent_failed", {**where, "cause": "unparseable", "detail": str(exc)})
            return [failed, *after_failure(state, call, "unparseable", str(exc), retries)]
        suffix = f"-{call.item}" if call.item else ""
        name = f"{call.stage}{suffix}-{call.role}-{state.iterations + 1}.md"
        artifact = self.store.put_artifact(state.task_id, name, response.content.encode())
        body = response.model_dump(mode="json")
        replied = (
            "agent_replied",
            {**where, "response": body, "artifact_ids": [artifact.artifact_id]},
        )
        return response, replied

    def _request(self, state: TaskState, call: Call, agent_id: str) -> TaskRequest:
        reviewed = REVIEWS.get(call.stage)
        earlier = state.stages[: state.stages.index(call.stage)]
        under_review: dict[str, Any] | None = None
        if reviewed == "execute":
            diff = self.workspace.diff() if self.workspace else ""
            under_review = {"diff": diff[-_CONTEXT_CHARS:], "work_items": state.items_done}
        elif reviewed:
            under_review = state.outputs.get(reviewed)
        item = next((i for i in state.work_items if i.item_id == call.item), None)
        return TaskRequest(
            task_id=state.task_id,
            task_type=state.task_type,
            goal=state.goal,
            stage=call.stage,
            role=call.role,
            agent_id=agent_id,
            workspace_root=str(self.workdir(state)),
            allowed_actions=self._allowed_actions(),
            artifact_refs=list(state.artifact_ids),
            feedback=state.request_feedback(),
            under_review=under_review,
            work_item=item.as_dict() if item else None,
            previous_outputs={
                s: str(state.outputs[s].get("content", ""))[:_CONTEXT_CHARS]
                for s in earlier
                if s in state.outputs
            },
        )

    def _allowed_actions(self) -> list[str]:
        actions = ["read_workspace", "propose"]
        if self.policy.allow_web_research:
            actions.append("web_research")
        if self.policy.allow_workspace_write:
            actions.append("write_workspace")
        if self.policy.allow_local_commands:
            actions.append("run_commands")
        return actions

    def _run(self, state: TaskState, argv: list[str], workdir: Path, label: str) -> dict[str, Any]:
        """Run a command under the policy's time limit; its output is kept as an artifact."""
        timeout = self.policy.command_timeout_sec
        result = self.sandbox.run(argv, workdir, timeout, self.view(state))
        output = (
            f"$ {shlex.join(argv)}\n[exit {result.exit_code}]\n{result.stdout}\n{result.stderr}"
        )
        artifact = self.store.put_artifact(state.task_id, f"{label}.log", output.encode())
        return {
            "argv": list(argv),
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "artifact_id": artifact.artifact_id,
            "tail": (result.stderr or result.stdout)[-500:].strip(),
        }

    def _port(self, agent_id: str, state: TaskState) -> AgentPort:
        return port_for(
            agent_id,
            self.given_ports,
            self.adapters,
            self.config,
            workdir=str(self.workdir(state)),
            sandbox=self.agent_sandbox_for(state),
            view=self.view(state),
        )
