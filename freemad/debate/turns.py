"""One agent's turn in one round: the cache, the call, the parse, and one retry with a clarification."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from freemad.agents.port import AgentPort, CallRequest, CallResult, CallStatus
from freemad.config.models import AgentConfig, FreemadConfig, Mode
from freemad.core.events import EventLog
from freemad.core.replies import (
    Critique,
    Generation,
    ReplyFormatError,
    parse_critique,
    parse_generation,
)
from freemad.debate.cache import ResponseCache, cache_key
from freemad.debate.prompts import PromptBook, estimate_tokens, truncate
from freemad.debate.records import AgentTurn, Failure, Response, Tokens

log = logging.getLogger(__name__)


@dataclass
class TurnContext:
    """What every turn of a run shares."""

    config: FreemadConfig
    prompts: PromptBook
    cache: ResponseCache | None
    limiter: asyncio.Semaphore
    events: EventLog
    clock: Callable[[], float]


@dataclass
class Usage:
    """Tokens a turn used: as the CLI reported them, else estimated from the texts."""

    input: int = 0
    output: int = 0
    estimated: bool = False

    def add(self, prompt: str, result: CallResult) -> None:
        if result.input_tokens is None or result.output_tokens is None:
            self.estimated = True
        self.input += max(
            result.input_tokens if result.input_tokens is not None else estimate_tokens(prompt), 0
        )
        self.output += max(  # a negative count an agent reports takes nothing off the totals
            result.output_tokens
            if result.output_tokens is not None
            else estimate_tokens(result.text),
            0,
        )


def call_time_limit(ctx: TurnContext, agent: AgentConfig, hard_at: float) -> float:
    """The smallest limit that applies: the agent's, the security ceiling, the budget, the deadline."""
    limits = [agent.timeout, ctx.config.security.cli_timeout_ms / 1000, hard_at - ctx.clock()]
    if ctx.config.budget.max_agent_time_sec is not None:
        limits.append(ctx.config.budget.max_agent_time_sec)
    return min(limits)


async def take_turn(
    ctx: TurnContext,
    port: AgentPort,
    agent: AgentConfig,
    round_no: int,
    mode: Mode,
    prompt: str,
    hard_at: float,
) -> AgentTurn:
    async with ctx.limiter:
        started = ctx.clock()
        ctx.events.emit("agent_started", round=round_no, agent=agent.id, mode=mode.value)
        turn = await _attempts(ctx, port, agent, round_no, mode, prompt, hard_at)
        turn.duration_ms = int((ctx.clock() - started) * 1000)
    ctx.events.emit(
        "agent_finished",
        round=round_no,
        agent=agent.id,
        status=turn.status,
        duration_ms=turn.duration_ms,
        cause=turn.error.cause if turn.error else None,
        detail=turn.error.detail if turn.error else None,
    )
    return turn


async def _attempts(
    ctx: TurnContext,
    port: AgentPort,
    agent: AgentConfig,
    round_no: int,
    mode: Mode,
    prompt: str,
    hard_at: float,
) -> AgentTurn:
    usage = Usage()
    turn = AgentTurn(agent_id=agent.id, round=round_no, status="failed")
    problem = ""
    for attempt in (1, 2):
        sent = prompt if attempt == 1 else ctx.prompts.clarify(prompt, problem)
        key = (
            cache_key(agent=agent.model_dump(mode="json"), mode=mode.value, prompt=sent)
            if ctx.cache
            else ""
        )
        cached = ctx.cache.get(key) if ctx.cache else None
        if cached is not None and isinstance(cached.get("text"), str):
            result = CallResult(CallStatus.OK, cached["text"])
            turn.cached = True
        else:
            limit = call_time_limit(ctx, agent, hard_at)
            if limit <= 0:
                turn.error = Failure(
                    cause="deadline_hard", detail="no time left before the deadline"
                )
                break
            result = await port.call(CallRequest(mode, sent, limit))
            usage.add(sent, result)
        turn.attempts = attempt
        turn.exit_status = result.exit_code
        if not result.ok:
            turn.error = Failure(cause=result.status.value, detail=result.detail)
            log.warning(
                "agent %s round %d: %s: %s", agent.id, round_no, result.status.value, result.detail
            )
            break
        try:
            response = parse_reply(mode, result.text, ctx.config)
        except ReplyFormatError as exc:
            problem = str(exc)
            turn.error = Failure(cause="unparseable", detail=problem)
            log.warning("agent %s round %d: unparseable reply: %s", agent.id, round_no, problem)
            continue
        turn.status, turn.response, turn.error = "ok", response, None
        if ctx.cache is not None and not turn.cached:
            ctx.cache.put(key, {"text": result.text})
        break
    turn.tokens = Tokens(input=usage.input, output=usage.output, estimated=usage.estimated)
    return turn


def parse_reply(mode: Mode, text: str, config: FreemadConfig) -> Response:
    """A reply in the debate contract, held to the size limits; ReplyFormatError otherwise."""
    limits = config.security
    parsed: Generation | Critique
    if mode is Mode.CRITIQUE:
        parsed = parse_critique(text)
        solution = parsed.revised_solution or ""
        decision = parsed.decision.value
    else:
        parsed = parse_generation(text)
        solution, decision = parsed.solution, None
    if len(solution) > limits.max_solution_size:
        raise ReplyFormatError(
            f"the solution has {len(solution)} characters, over security.max_solution_size "
            f"({limits.max_solution_size})"
        )
    reasoning = truncate(parsed.reasoning, limits.max_critique_size)
    return Response(solution=solution, reasoning=reasoning, decision=decision)
