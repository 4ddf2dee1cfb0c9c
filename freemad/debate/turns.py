"""One agent's turn in one round: the cache, the call, the parse, and one retry with a clarification."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from freemad.agents.agent_port import AgentPort, CallRequest, CallResult, CallStatus
from freemad.config.models import AgentConfig, FreemadConfig, Mode
from freemad.core.replies import (
    Critique,
    Decision,
    Generation,
    ReplyFormatError,
    degenerate,
    echo_tail,
    echoes,
    parse_critique,
    parse_generation,
    recover,
)
from freemad.core.run_events import EventLog
from freemad.debate.cache import ResponseCache, cache_key
from freemad.debate.debate_record import (
    PARSED_REPLY_END,
    STDERR_TAIL,
    AgentTurn,
    Failure,
    Response,
    Tokens,
    kept_reply,
)
from freemad.debate.prompts import PromptBook, estimate_tokens, truncate

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
    # A check of a solution beyond the contract (a review's findings): ReplyFormatError when the
    # solution is not what the run asks for, so the agent is asked once more, as for any reply.
    check: Callable[[str], object] | None = None


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
    own_solution: str = "",
    refit: Callable[[int], str] | None = None,
) -> AgentTurn:
    """One agent's call (and its one retry) in a round; `own_solution`, in a critique round,
    is the answer it holds; `refit(cap)` renders its prompt again within `cap` estimated
    tokens, for a model that said the prompt was past its context."""
    async with ctx.limiter:
        started = ctx.clock()
        ctx.events.emit("agent_started", round=round_no, agent=agent.id, mode=mode.value)
        turn = await _attempts(
            ctx, port, agent, round_no, mode, prompt, hard_at, own_solution, refit
        )
        turn.duration_ms = int((ctx.clock() - started) * 1000)
    ctx.events.emit(
        "agent_finished",
        round=round_no,
        agent=agent.id,
        status=turn.status,
        duration_ms=turn.duration_ms,
        cause=turn.error.cause if turn.error else None,
        detail=turn.error.detail if turn.error else None,
        **({"stderr_tail": turn.stderr_tail} if turn.stderr_tail else {}),
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
    own_solution: str,
    refit: Callable[[int], str] | None,
) -> AgentTurn:
    usage = Usage()
    turn = AgentTurn(agent_id=agent.id, round=round_no, status="failed")
    problem, shorter = "", ""
    for attempt in (1, 2):
        sent = prompt if attempt == 1 else shorter or ctx.prompts.clarify(prompt, problem)
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
        if result.text:
            turn.replies.append(kept_reply(result.text))
        if not result.ok:
            turn.error = Failure(cause=result.status.value, detail=result.detail)
            turn.stderr_tail = result.stderr_tail[-STDERR_TAIL:]
            log.warning(
                "agent %s round %d: %s: %s", agent.id, round_no, result.status.value, result.detail
            )
            if result.status is CallStatus.CONTEXT_EXCEEDED and attempt == 1 and refit:
                cap = tighter_cap(ctx.prompts, result.detail, sent)
                shorter = refit(cap)
                if estimate_tokens(shorter) < estimate_tokens(sent):
                    turn.truncated_prompt = True
                    log.warning(
                        "agent %s round %d: again, cut to %d tokens", agent.id, round_no, cap
                    )
                    continue
            break
        try:
            own_text = ctx.prompts.own_text(mode.value)
            response = parse_reply(
                mode,
                result.text,
                ctx.config,
                own_text,
                own_solution,
                free_form=agent.free_form_replies,
            )
            if ctx.check is not None and response.solution:
                ctx.check(response.solution)
        except ReplyFormatError as exc:
            problem = str(exc)
            turn.error = Failure(cause="unparseable", detail=problem)
            log.warning("agent %s round %d: unparseable reply: %s", agent.id, round_no, problem)
            continue
        turn.status, turn.response, turn.error = "ok", response, None
        if result.text:  # this attempt's reply, appended above: read, so kept shorter
            turn.replies[-1] = kept_reply(result.text, PARSED_REPLY_END)
        if ctx.cache is not None and not turn.cached:
            ctx.cache.put(key, {"text": result.text})
        break
    turn.tokens = Tokens(input=usage.input, output=usage.output, estimated=usage.estimated)
    return turn


def parse_reply(
    mode: Mode,
    text: str,
    config: FreemadConfig,
    own_text: frozenset[str] = frozenset(),
    own_solution: str = "",
    *,
    free_form: bool = False,
) -> Response:
    """Read one agent's reply as a `Response`, or raise ReplyFormatError.

    The reply must be in the debate contract. With `free_form`, a reply with no marker at all is
    accepted too (`recover`); in a critique it then keeps `own_solution` when it repeats that
    answer, and revises to it otherwise. Every reply is held to the size limits, and must be an
    answer: not the prompt's own text again (`own_text`, from `PromptBook.own_text`), and not
    one line repeated. A reply that answers and then runs on into the prompt's own text is cut
    where the echo begins (`echo_tail`); `recovered` says so."""
    limits = config.security
    parsed: Generation | Critique
    recovered = None
    free = recover(text) if free_form else None
    if free is not None and mode is Mode.CRITIQUE:
        keep = " ".join(free.split()) == " ".join(own_solution.split())
        parsed = Critique(Decision.KEEP, None, "") if keep else Critique(Decision.REVISE, free, "")
        recovered = (
            f"no DECISION: line; the whole reply {'is' if keep else 'revises to'} its answer"
        )
    elif free is not None:
        parsed, recovered = (
            Generation(free, ""),
            "no SOLUTION: line; the whole reply is the solution",
        )
    elif mode is Mode.CRITIQUE:
        parsed = parse_critique(text)
    else:
        parsed = parse_generation(text)
    if isinstance(parsed, Critique):
        solution, decision = parsed.revised_solution or "", parsed.decision.value
    else:
        solution, decision = parsed.solution, None
    repeated = degenerate(solution) if solution else None  # whatever follows, no answer
    if repeated is not None:
        raise ReplyFormatError(repeated)
    before = (solution, parsed.reasoning)
    solution, reasoning = echo_tail(solution, own_text), echo_tail(parsed.reasoning, own_text)
    if (solution, reasoning) != before:
        cut = "the reply ran on into the prompt's own text; cut where that began"
        recovered = f"{recovered}; {cut}" if recovered else cut
    sections = [solution, reasoning] if solution else [reasoning]
    problem = echoes(sections, own_text) or (degenerate(solution) if solution else None)
    if problem is not None:
        raise ReplyFormatError(problem)
    if len(solution) > limits.max_solution_size:
        raise ReplyFormatError(
            f"the solution has {len(solution)} characters, over security.max_solution_size "
            f"({limits.max_solution_size})"
        )
    reasoning = truncate(reasoning, limits.max_critique_size)
    return Response(solution=solution, reasoning=reasoning, decision=decision, recovered=recovered)


_WINDOW = re.compile(r"context (?:window|length)\D{0,12}?(\d+)", re.IGNORECASE)
_REQUESTED = re.compile(r"requested\D{0,12}?(\d+)|(\d+) tokens?\b", re.IGNORECASE)


def tighter_cap(prompts: PromptBook, detail: str, sent: str) -> int:
    """A cap, in estimated tokens, for a prompt the model refused as past its context: its
    window as the error gives it (`window_cap`), scaled by how far the estimate of `sent`
    fell short of the tokens the model counted; half of `sent` when the error says neither."""
    estimated = estimate_tokens(sent)
    window = _WINDOW.search(detail)
    cap = prompts.window_cap(int(window.group(1))) if window else None
    requested = next((int(n) for m in _REQUESTED.finditer(detail) for n in m.groups() if n), None)
    if cap is not None and requested and window and requested != int(window.group(1)):
        cap = cap * estimated // requested
    return max(min(cap if cap is not None else estimated // 2, estimated - 1), 1)
