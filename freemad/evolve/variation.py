"""The variation operator and the supervisor's debates: everything the agents do in an evolve run.

A worker edits the worktree and answers with a TaskResponse (single_agent); or a debate picks a
plan and the agent whose plan won implements it (debate). When the run is stuck, a debate
proposes new directions as schema-checked JSON. Nothing here decides what is kept: the judge does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freemad.adapters import Adapters, port_for
from freemad.agents.agent_port import AgentPort, CallRequest
from freemad.config.evolve_agents import debate_agents, intervention_agent
from freemad.config.evolve_section import EvolveConfig
from freemad.config.models import FreemadConfig, Mode
from freemad.config.task_section import ToolPolicy
from freemad.debate.debate_record import DebateResult
from freemad.debate.debate_runner import arun_debate
from freemad.errors import FreemadError
from freemad.evolve.call_costs import call_cost, debate_cost
from freemad.evolve.context_budget import fit
from freemad.evolve.debaters import scoped
from freemad.evolve.worker_protocol import (
    EvolveRequest,
    Incumbent,
    Rejection,
    parse_directions,
    render_directions_requirement,
    render_plan_requirement,
)
from freemad.sandbox.sandbox_port import Sandbox, View
from freemad.tasks.task_protocol import ResponseError, parse_response
from freemad.workspace.policy import apply_writes, check_command

# Writes a worker lists in its reply may go anywhere in the worktree but .git; protected paths
# are restored from the seed before judging anyway.
_WRITES = ToolPolicy(allow_workspace_write=True)


@dataclass(frozen=True, slots=True)
class Context:
    """What the agents are told about the run at this point."""

    run_id: str
    goal: str
    iteration: int
    incumbent: Incumbent
    best_ever: dict[str, float]
    objective: str
    directions: list[str]
    rejections: list[Rejection]
    candidate: int = 0  # the index within its generation


class Variation:
    def __init__(
        self,
        config: FreemadConfig,
        evolve: EvolveConfig,
        ports: Mapping[str, AgentPort],
        adapters: Adapters,
        sandbox: Sandbox,
        agent_box: Sandbox,
    ) -> None:
        self.config = config
        self.evolve = evolve
        self.given_ports = dict(ports)
        self.adapters = adapters
        self.sandbox = sandbox
        self.agent_box = agent_box

    async def propose(self, context: Context, worktree: Path, git_dir: Path) -> dict[str, Any]:
        """One candidate, made in `worktree`; the `candidate_proposed` event's data."""
        plan: str | None = None
        debate: dict[str, Any] = {}
        agent_id = self.evolve.variation.agent_id
        if self.evolve.variation.mode == "debate":
            requirement = render_plan_requirement(
                context.goal,
                context.incumbent.version,
                context.incumbent.components,
                context.objective,
                context.directions,
                context.rejections,
            )
            result = await self._debate(requirement, worktree)
            debate = {
                "debate_run_id": result.run_id,
                "debate_status": result.status,
                "debate_agents": debate_agents(self.config),
                "cost_usd": debate_cost(result),
            }
            if result.status != "completed" or not result.final_solution:
                return {
                    "iteration": context.iteration,
                    "agent": None,
                    "ok": False,
                    "cause": "debate_failed",
                    "summary": result.error or "the planning debate chose no plan",
                    **debate,
                }
            plan = result.final_solution
            agent_id = _author(result)
        assert agent_id is not None  # config validation: single_agent names its agent
        view = View.of([worktree], hidden=[git_dir])
        proposal = await self._work(context, agent_id, worktree, plan, view)
        cost = round(proposal.get("cost_usd", 0.0) + debate.get("cost_usd", 0.0), 6)
        return {**proposal, **debate, "plan": plan, "cost_usd": cost}

    async def directions(
        self, context: Context, problem: str, tried: Sequence[str], worktree: Path
    ) -> dict[str, Any]:
        """An intervention's directions: {directions, error, debate_run_id, intervention,
        agents, cost_usd}; found by a debate among the debate agents, or (intervention:
        single_agent) by one agent's answer, a debate of one agent and no critique round."""
        requirement = render_directions_requirement(
            context.goal,
            problem,
            context.incumbent.version,
            context.incumbent.components,
            context.objective,
            context.rejections,
            tried,
        )
        how = self.evolve.supervisor.intervention
        agents = debate_agents(self.config)
        rounds: int | None = None
        if how == "single_agent":
            agents, rounds = [intervention_agent(self.config)], 0
        said: dict[str, Any] = {"intervention": how, "agents": agents}
        try:
            result = await self._debate(requirement, worktree, agents, rounds)
        except FreemadError as exc:
            return {
                "directions": [],
                "error": exc.one_line(),
                "debate_run_id": None,
                **said,
                "cost_usd": 0.0,
            }
        found: list[str] = []
        error: str | None = None
        if result.status != "completed" or not result.final_solution:
            error = result.error or "the debate chose no answer"
        else:
            try:
                found = parse_directions(result.final_solution)
            except ValueError as exc:
                error = str(exc)
        return {
            "directions": found,
            "error": error,
            "debate_run_id": result.run_id,
            **said,
            "cost_usd": debate_cost(result),
        }

    async def _work(
        self, context: Context, agent_id: str, worktree: Path, plan: str | None, view: View
    ) -> dict[str, Any]:
        agent = next((a for a in self.config.agents if a.id == agent_id), None)
        base: dict[str, Any] = {"iteration": context.iteration, "agent": agent_id}
        if agent is None:
            return {**base, "ok": False, "cause": "unknown_agent", "summary": agent_id}
        request = EvolveRequest(
            run_id=context.run_id,
            goal=context.goal,
            agent_id=agent_id,
            iteration=context.iteration,
            generation=context.iteration,
            candidate=context.candidate,
            workspace_root=str(worktree),
            allowed_actions=self._allowed_actions(),
            knowledge_paths=list(self.evolve.knowledge_paths),
            protected_paths=list(self.evolve.judge.protected_paths),
            objective=context.objective,
            incumbent=context.incumbent,
            best_ever=context.best_ever,
            directions=context.directions,
            recent_rejections=context.rejections,
            plan=plan,
        )
        prompt, cut = fit(request, self.evolve.context_budget_chars)
        if cut:
            base["context_cut"] = cut
        budget = self.evolve.worker_budget.timeout_sec
        port = port_for(
            agent_id,
            self.given_ports,
            self.adapters,
            self.config,
            workdir=str(worktree),
            sandbox=self.agent_box,
            view=view,
        )
        result = await port.call(CallRequest(Mode.TASK, prompt, budget))
        base["cost_usd"] = call_cost(self.config, agent_id, prompt, result)
        if not result.ok:
            return {**base, "ok": False, "cause": result.status.value, "summary": result.detail}
        try:
            response = parse_response(result.text)
        except ResponseError as exc:
            return {**base, "ok": False, "cause": "unparseable", "summary": str(exc)}
        written, refused = apply_writes(worktree, response.writes, _WRITES, [])
        commands = [self._command(command, worktree, view) for command in response.commands]
        return {
            **base,
            "ok": True,
            "summary": response.content[:2000],
            "written": written,
            "refused": [v.finding() for v in refused],
            "commands": commands,
        }

    def _command(self, command: str, worktree: Path, view: View) -> dict[str, Any]:
        """A command the worker asked for: allowed by the task tool policy, run in the sandbox."""
        policy = self.config.task.tool_policy
        argv = check_command(command, policy)
        if not isinstance(argv, list):
            return {"command": command, "refused": argv.reason}
        ran = self.sandbox.run(argv, worktree, policy.command_timeout_sec, view)
        return {"command": command, "exit_code": ran.exit_code, "timed_out": ran.timed_out}

    def _allowed_actions(self) -> list[str]:
        actions = ["read_workspace", "write_workspace"]
        if self.config.task.tool_policy.allow_local_commands:
            actions.append("run_commands")
        return actions

    async def _debate(
        self,
        requirement: str,
        worktree: Path,
        agents: Sequence[str] | None = None,
        rounds: int | None = None,
    ) -> DebateResult:
        """A planning or directions debate among `agents` (the debate agents when None), the
        same agents that work as the worker, so sandboxed like the worker wherever bubblewrap
        runs."""
        if rounds is None:
            rounds = self.evolve.variation.debate_rounds
        config = scoped(self.config, debate_agents(self.config) if agents is None else agents)
        if self.agent_box.kind == "bubblewrap" and not config.security.sandbox_agents:
            security = config.security.model_copy(update={"sandbox_agents": True})
            config = config.model_copy(update={"security": security})
        return await arun_debate(
            requirement,
            config,
            rounds=rounds,
            agents=self.given_ports,
            adapters=self.adapters,
        )


def _author(result: DebateResult) -> str:
    """The agent whose answer won: the first to propose it, else the first holding it."""
    winner = result.final_answer_id or ""
    origins = result.origin_agents.get(winner) or result.winning_agents
    return sorted(origins)[0] if origins else ""
