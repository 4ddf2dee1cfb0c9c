"""The debate runtime: rounds under deadlines and budgets, then the Free-MAD decision over the trajectory."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path

from freemad import runner
from freemad.adapters import Adapters, port_for
from freemad.agents.agent_port import AgentPort
from freemad.agents.presets import context_window
from freemad.config.load import config_digest
from freemad.config.models import AgentConfig, FreemadConfig, Mode
from freemad.core.run_events import EventLog, EventSink
from freemad.core.scoring import ScoreBoard, Weights
from freemad.core.topology import assign_peers, peer_labels
from freemad.debate.budgets import (
    BUDGET_CUT,
    Deadlines,
    budget_exhausted,
    early_stop_note,
    round_deadlines,
)
from freemad.debate.cache import ResponseCache
from freemad.debate.debate_record import AgentTurn, DebateResult, Failure, RoundRecord
from freemad.debate.finalizer import finalize, scan_finalized
from freemad.debate.folders import agent_folders
from freemad.debate.logbook import log_event
from freemad.debate.outcome import Holding, Tally
from freemad.debate.prompts import PromptBook, ShownAnswer
from freemad.debate.team import waves_note
from freemad.debate.turns import TurnContext, take_turn
from freemad.errors import UsageError
from freemad.sandbox.sandbox_port import View

log = logging.getLogger(__name__)


def run_debate(
    requirement: str,
    config: FreemadConfig,
    *,
    rounds: int | None = None,
    agents: Mapping[str, AgentPort] | None = None,
    on_event: EventSink | None = None,
    run_id: str | None = None,
    adapters: Adapters | None = None,
    check: Callable[[str], object] | None = None,
) -> DebateResult:
    """Run a whole debate and return its transcript. The one entry point for CLI, Action and bot.

    An agent with a port in `agents` answers through it. Any other agent answers through a port
    that the agent factory of `adapters` makes (inside the agent sandbox, when
    `security.sandbox_agents` is set). Validation runs in the sandbox of `adapters` too."""
    return runner.run(
        arun_debate(
            requirement,
            config,
            rounds=rounds,
            agents=agents,
            on_event=on_event,
            run_id=run_id,
            adapters=adapters,
            check=check,
        )
    )


async def arun_debate(
    requirement: str,
    config: FreemadConfig,
    *,
    rounds: int | None = None,
    agents: Mapping[str, AgentPort] | None = None,
    on_event: EventSink | None = None,
    run_id: str | None = None,
    adapters: Adapters | None = None,
    check: Callable[[str], object] | None = None,
) -> DebateResult:
    requirement = check_requirement(requirement, config)
    debate = _Debate(config, requirement, rounds, agents, adapters, on_event, run_id)
    debate.check = check
    return await debate.run()


def check_requirement(requirement: str, config: FreemadConfig) -> str:
    text = requirement.replace("\x00", "").strip()
    if not text:
        raise UsageError("the requirement is empty")
    limit = config.security.max_requirement_size
    if len(text) > limit:
        raise UsageError(
            f"the requirement has {len(text)} characters; security.max_requirement_size is {limit}"
        )
    return text


class _Debate:
    def __init__(
        self,
        config: FreemadConfig,
        requirement: str,
        rounds: int | None,
        ports: Mapping[str, AgentPort] | None,
        adapters: Adapters | None,
        on_event: EventSink | None,
        run_id: str | None,
    ) -> None:
        self.config = config
        self.requirement = requirement
        self.rounds = config.debate.rounds if rounds is None else rounds
        if self.rounds < 0:
            raise UsageError(f"--rounds must be 0 or more, got {self.rounds}")
        self.agents = {a.id: a for a in config.enabled_agents}
        self.given_ports = dict(ports or {})
        self.adapters = adapters
        self.ports: dict[str, AgentPort] = {}
        self.run_id = run_id or uuid.uuid4().hex
        self.check: Callable[[str], object] | None = None
        self.loop_clock = time.monotonic
        sinks: list[EventSink] = [log_event, *([on_event] if on_event else [])]
        self.events = EventLog(self.run_id, time.time, sinks)
        self.prompts = PromptBook(config.debate.prompt_mode, config.debate.templates_dir)
        topo = config.topology
        self.peers = assign_peers(
            list(self.agents), topo.type, k=topo.k, hub=topo.hub, seed=topo.seed
        )
        # Labels go by position among the peers shown (peer_labels), so one list serves every
        # agent: computing them per prompt was a third of a 128-agent critique prompt's cost.
        self.labels = list(peer_labels(list(self.agents)).values())
        self.board = ScoreBoard(Weights.from_sequence(config.scoring.weights))
        self.outcome = Tally(config, self.board, adapters.sandboxes if adapters else None)

    async def run(self) -> DebateResult:
        # Each agent works in an empty folder of its own for the whole run.
        with agent_folders(self.agents) as folders:
            security, adapters = self.config.security, self.adapters
            # No adapters, no agent factory: every port was given, and no box is needed.
            box = (
                adapters.sandboxes.agent(security.sandbox)
                if adapters and security.sandbox_agents
                else None
            )
            for agent_id, folder in folders.items():
                self.ports[agent_id] = port_for(
                    agent_id,
                    self.given_ports,
                    adapters,
                    self.config,
                    workdir=folder,
                    sandbox=box,
                    view=View.of([Path(folder)]),
                )
            return await self._run()

    async def _run(self) -> DebateResult:
        started_at = _now()
        self.run_started = self.loop_clock()
        warn_waves(len(self.agents), self.config.budget.max_concurrent_agents)
        self.events.emit(
            "run_started",
            requirement=self.requirement,
            agents=list(self.agents),
            rounds=self.rounds,
        )
        cache = self.config.cache
        ctx = TurnContext(
            config=self.config,
            prompts=self.prompts,
            cache=ResponseCache(cache.dir, cache.max_entries) if cache.enabled else None,
            limiter=asyncio.Semaphore(self.config.budget.max_concurrent_agents),
            events=self.events,
            clock=self.loop_clock,
            check=self.check,
        )
        error = early_stop = note = None
        for round_no in range(self.rounds + 1):
            if round_no > 0:
                early_stop = budget_exhausted(
                    self.config, self.loop_clock() - self.run_started, self.outcome.tokens_used()
                )
                if early_stop:
                    note = early_stop_note(
                        self.config,
                        early_stop,
                        f"before round {round_no}",
                        len(self.outcome.rounds),
                    )
                    self.events.emit(
                        "early_stop", reason=early_stop, before_round=round_no, note=note
                    )
                    break
            record, budget_cut = await self._round(ctx, round_no)
            if record is None or budget_cut:
                # The total time budget ran out in this round: what was decided stands, and the
                # winner is chosen over the rounds that happened (an emptied round did not).
                early_stop = "max_total_time_sec"
                note = early_stop_note(
                    self.config, early_stop, f"during round {round_no}", len(self.outcome.rounds)
                )
                self.events.emit("early_stop", reason=early_stop, during_round=round_no, note=note)
                if not self.outcome.holdings:
                    note = None
                    error = (
                        f"budget.max_total_time_sec ({self.config.budget.max_total_time_sec:g}s) "
                        "ran out before any agent answered"
                    )
                break
            answered = sum(1 for t in record.agents.values() if t.status == "ok")
            if answered < self.config.deadlines.min_agents:
                short = (
                    f"only {answered} of {len(record.agents)} agents answered in round {round_no}"
                    f"; deadlines.min_agents is {self.config.deadlines.min_agents}"
                )
                if round_no == 0:
                    error = short
                    break
                # A critique round without a quorum: each agent kept its answer (carried
                # forward), and what the rounds before decided stands; another round would
                # most likely end the same way.
                early_stop = "quorum"
                note = f"{short}: the winner is chosen over the {round_no + 1} round(s) so far"
                self.events.emit("early_stop", reason=early_stop, during_round=round_no, note=note)
                break
        result = await self.outcome.build(
            run_id=self.run_id,
            requirement=self.requirement,
            digest=config_digest(self.config),
            started_at=started_at,
            wall_time=self.loop_clock() - self.run_started,
            rounds_requested=self.rounds,
            error=error,
            early_stop=early_stop,
        )
        result.early_stop_note = note
        finalizer = self.config.debate.finalizer
        if finalizer is not None and result.final_answer_id is not None:
            budget = self.config.budget.max_total_time_sec
            result.finalized = await finalize(
                ctx,
                self.ports[finalizer],
                self.agents[finalizer],
                result,
                math.inf if budget is None else self.run_started + budget,
            )
            if self.config.validation.secret_scan:
                result.flags += scan_finalized(result.finalized)
        self.events.emit(
            "run_finished",
            status=result.status,
            error=result.error,
            final_answer_id=result.final_answer_id,
            score=result.scores.get(result.final_answer_id or "", None),
            winning_agents=result.winning_agents,
            scores=dict(result.scores),
        )
        return result

    async def _round(self, ctx: TurnContext, round_no: int) -> tuple[RoundRecord | None, bool]:
        """Run one round and score it. True when the total time budget ended the round with
        answers missing; no record when it ended a critique round before any agent answered
        (a round that did not happen is not scored)."""
        kind = "generation" if round_no == 0 else "critique"
        mode = Mode.GENERATE if round_no == 0 else Mode.CRITIQUE
        participants = list(self.agents) if round_no == 0 else list(self.outcome.holdings)
        started = self.loop_clock()
        deadlines = round_deadlines(self.config, self.run_started, started)
        self.events.emit(
            "round_started",
            round=round_no,
            type=kind,
            agents=participants,
            soft_deadline_sec=round(deadlines.soft_at - started, 3),
            hard_deadline_sec=round(deadlines.hard_at - started, 3),
        )
        prompts: dict[str, tuple[str, bool]] = {}
        seen: dict[str, list[str]] = {}
        if round_no == 0:
            prompts = dict.fromkeys(participants, (self.prompts.generate(self.requirement), False))
        else:
            for agent_id in participants:
                prompts[agent_id], seen[agent_id] = self._critique_prompt(agent_id, round_no)
        tasks = {
            agent_id: asyncio.create_task(
                take_turn(
                    ctx,
                    self.ports[agent_id],
                    self.agents[agent_id],
                    round_no,
                    mode,
                    prompts[agent_id][0],
                    deadlines.hard_at,
                    self.outcome.holdings[agent_id].solution if round_no else "",
                    functools.partial(self._refit, agent_id, round_no) if round_no else None,
                )
            )
            for agent_id in participants
        }
        cut = await self._wait(tasks, deadlines)
        turns: dict[str, AgentTurn] = {}
        for agent_id, task in tasks.items():
            turn = self._collect(agent_id, round_no, task, cut, started)
            turn.peers_assigned = list(self.peers[agent_id]) if round_no else []
            turn.peers_seen = seen.get(agent_id, [])
            turn.truncated_prompt = turn.truncated_prompt or prompts[agent_id][1]
            turns[agent_id] = turn
        # An agent stopped by its own time limit at the budget's end was cut by the budget too.
        budget_cut = cut == BUDGET_CUT or (
            deadlines.budget_at is not None
            and self.loop_clock() >= deadlines.budget_at
            and any(t.status != "ok" for t in turns.values())
        )
        if budget_cut and round_no and all(t.status != "ok" for t in turns.values()):
            self.events.emit("round_dropped", round=round_no, reason="max_total_time_sec")
            return None, True
        record = RoundRecord(
            round=round_no,
            type=kind,
            agents=turns,
            deadline_hit_soft=cut == "soft",
            deadline_hit_hard=cut in ("hard", BUDGET_CUT),
            duration_ms=int((self.loop_clock() - started) * 1000),
            topology_info=(
                {a: list(self.peers[a]) for a in participants}
                if round_no and self.config.output.include_topology_info
                else None
            ),
        )
        self.outcome.apply_round(record)
        self.events.emit(
            "round_finished",
            round=round_no,
            scores=record.scores,
            deadline_hit_soft=record.deadline_hit_soft,
            deadline_hit_hard=record.deadline_hit_hard,
            # What each agent did, now that the round is scored: what a live page shows.
            turns={
                a: {"action": t.action, "answer_id": t.answer_id} for a, t in record.agents.items()
            },
        )
        return record, budget_cut

    def _refit(self, agent_id: str, round_no: int, cap: int) -> str:
        return self._critique_prompt(agent_id, round_no, cap)[0][0]

    def _critique_prompt(
        self, agent_id: str, round_no: int, tighter: int | None = None
    ) -> tuple[tuple[str, bool], list[str]]:
        """The agent's critique prompt, cut to the least of its model's window, the budget's
        cap and `tighter` (a retry after the model said the prompt was past its context)."""
        holdings = self.outcome.holdings
        visible = [p for p in self.peers[agent_id] if p in holdings]
        labels = dict(zip(visible, self.labels, strict=False))
        shown = [
            ShownAnswer(labels[p], holdings[p].solution, holdings[p].reasoning) for p in visible
        ]
        own = holdings[agent_id]
        budget = self.config.budget
        caps = [
            self.prompts.window_cap(context_window(self.agents[agent_id])),
            self.prompts.prompt_cap(
                budget.max_tokens_per_agent_per_round if budget.enable_token_truncation else None
            ),
            tighter,
        ]
        known = [cap for cap in caps if cap is not None]
        prompt = self.prompts.critique(
            self.requirement,
            round_no,
            ShownAnswer("you", own.solution, own.reasoning),
            shown,
            min(known) if known else None,
            self.config.debate.max_prompt_chars,
        )
        return prompt, visible

    async def _wait(
        self, tasks: dict[str, asyncio.Task[AgentTurn]], deadlines: Deadlines
    ) -> str | None:
        """Wait for the round's turns; return "soft", "hard" or "budget" when a deadline or the
        total time budget cut some short. With deadlines.accept_late_until_hard the soft
        deadline ends nothing: every agent has until the hard deadline."""
        quorum = self.config.deadlines.min_agents
        # Accepting late answers, the soft deadline ends nothing: the hard one is the next wake.
        soft_at = math.inf if self.config.deadlines.accept_late_until_hard else deadlines.soft_at
        pending: set[asyncio.Task[AgentTurn]] = set(tasks.values())
        answered = sum(1 for t in pending if t.done() and _answered(t))
        cut = None
        try:
            while pending:
                now = self.loop_clock()
                if now >= soft_at and answered >= quorum:
                    cut = "soft"
                elif now >= deadlines.hard_at:
                    cut = "hard"
                if cut is not None:
                    if deadlines.budget_at is not None and now >= deadlines.budget_at:
                        cut = BUDGET_CUT
                    break
                until = min(soft_at, deadlines.hard_at) if now < soft_at else deadlines.hard_at
                done, pending = await asyncio.wait(
                    pending, timeout=until - now, return_when=asyncio.FIRST_COMPLETED
                )
                # Counted as they finish: recounting every turn at each wake is n^2 a round.
                answered += sum(1 for t in done if _answered(t))
        finally:
            # Cancelling a turn kills its agent's process group before the gather returns.
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        return cut

    def _collect(
        self,
        agent_id: str,
        round_no: int,
        task: asyncio.Task[AgentTurn],
        cut: str | None,
        started: float,
    ) -> AgentTurn:
        elapsed = int((self.loop_clock() - started) * 1000)
        if task.cancelled():
            self.events.emit(
                "agent_finished", round=round_no, agent=agent_id, status="cut", deadline=cut
            )
            detail = (
                "still running when budget.max_total_time_sec ran out; stopped"
                if cut == BUDGET_CUT
                else "still running at the deadline; killed"
            )
            return AgentTurn(
                agent_id=agent_id,
                round=round_no,
                status="cut",
                deadline="soft" if cut == "soft" else "hard",
                error=Failure(cause=f"deadline_{cut}", detail=detail),
                duration_ms=elapsed,
            )
        exc = task.exception()
        if exc is not None:
            log.error("agent %s round %d: internal error", agent_id, round_no, exc_info=exc)
            return AgentTurn(
                agent_id=agent_id,
                round=round_no,
                status="failed",
                error=Failure(cause="internal_error", detail=f"{type(exc).__name__}: {exc}"),
                duration_ms=elapsed,
            )
        return task.result()


def warn_waves(agents: int, limit: int) -> None:
    """Say at the start when a round cannot start every agent at once: it runs in waves."""
    note = waves_note(agents, limit)
    if note:
        log.warning("%s", note)


def _answered(task: asyncio.Task[AgentTurn]) -> bool:
    if task.cancelled():
        return False
    with contextlib.suppress(Exception):
        return task.result().status == "ok"
    return False


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


__all__ = ["AgentConfig", "Holding", "arun_debate", "check_requirement", "run_debate"]
