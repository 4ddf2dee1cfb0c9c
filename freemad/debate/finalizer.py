"""The finalizer (`debate.finalizer`): after the decision, one agent reads the winning answer and
the critiques it received and writes the final answer. Its text is kept apart (`finalized` in the
transcript); the decision, the winner and the scores never change, and a finalizer that fails,
runs out of time or replies garbage leaves the debate's result as it was, the failure recorded.
"""

from __future__ import annotations

import logging

from freemad.agents.agent_port import AgentPort, CallRequest
from freemad.config.models import AgentConfig, Mode
from freemad.core.replies import ReplyFormatError
from freemad.debate.debate_record import DebateResult, Failure, Finalized, Flag, Tokens
from freemad.debate.prompts import ShownAnswer
from freemad.debate.turns import TurnContext, Usage, call_time_limit, parse_reply
from freemad.redact import find_secrets, redact_secrets

log = logging.getLogger(__name__)

_VERDICTS = {
    "keep": "it kept its own answer",
    "revise": "it revised its answer to another one",
    "adopted": "it adopted the winning answer",
}


def winning_answer(result: DebateResult) -> ShownAnswer:
    """The winner's text and the reasoning its holder gave last (in the latest round it held it)."""
    winner = result.final_answer_id
    reasoning = ""
    for record in result.transcript:
        for turn in record.agents.values():
            if turn.status == "ok" and turn.answer_id == winner and turn.response is not None:
                reasoning = turn.response.reasoning or reasoning
    return ShownAnswer("winner", result.final_solution or "", reasoning)


def winner_critiques(result: DebateResult) -> list[ShownAnswer]:
    """What peers wrote about the winning answer: each critique-round reply of an agent that did
    not hold the winner and was shown it as a peer's answer, by round, then agent. Labels are
    anonymous (which agent wrote it does not matter to the finalizer)."""
    winner = result.final_answer_id
    critiques: list[ShownAnswer] = []
    for index, record in enumerate(result.transcript):
        if record.type != "critique" or index == 0 or index > len(result.holders_history):
            continue
        # Who held what when this round's prompts were written: after the round before.
        before = result.holders_history[index - 1]
        holders = {agent for agent, held in before.items() if held == winner}
        for agent_id in sorted(record.agents):
            turn = record.agents[agent_id]
            if (
                agent_id in holders
                or not holders.intersection(turn.peers_seen)
                or turn.status != "ok"
                or turn.response is None
            ):
                continue
            verdict = "adopted" if turn.answer_id == winner else turn.action
            label = (
                f"critique {len(critiques) + 1}, round {record.round}: "
                f"{_VERDICTS.get(verdict, verdict)}"
            )
            critiques.append(ShownAnswer(label, "", turn.response.reasoning))
    return critiques


async def finalize(
    ctx: TurnContext,
    port: AgentPort,
    agent: AgentConfig,
    result: DebateResult,
    hard_at: float,
) -> Finalized:
    """Call the finalizer once on a decided debate; what it wrote, or why it wrote nothing."""
    critiques = winner_critiques(result)
    prompt, _ = ctx.prompts.finalize(
        result.requirement,
        winning_answer(result),
        critiques,
        ctx.config.debate.max_prompt_chars,
    )
    done = Finalized(agent=agent.id, status="failed", critiques=len(critiques))
    started = ctx.clock()
    ctx.events.emit("finalizer_started", agent=agent.id, critiques=len(critiques))
    usage = Usage()
    limit = call_time_limit(ctx, agent, hard_at)
    if limit <= 0:
        done.error = Failure(
            cause="deadline_hard",
            detail="budget.max_total_time_sec ran out before the finalizer could run",
        )
    else:
        try:
            reply = await port.call(CallRequest(Mode.GENERATE, prompt, limit))
        except Exception as exc:  # a port's bug must not fail a decided debate
            log.error("finalizer %s: internal error", agent.id, exc_info=exc)
            done.error = Failure(cause="internal_error", detail=f"{type(exc).__name__}: {exc}")
        else:
            usage.add(prompt, reply)
            done.exit_status = reply.exit_code
            if not reply.ok:
                done.error = Failure(cause=reply.status.value, detail=reply.detail)
            else:
                try:
                    response = parse_reply(Mode.GENERATE, reply.text, ctx.config)
                except ReplyFormatError as exc:
                    done.error = Failure(cause="unparseable", detail=str(exc))
                else:
                    done.status, done.text = "ok", response.solution
                    done.reasoning = response.reasoning
    if done.error is not None:
        log.warning("finalizer %s: %s: %s", agent.id, done.error.cause, done.error.detail)
    done.duration_ms = int((ctx.clock() - started) * 1000)
    done.tokens = Tokens(input=usage.input, output=usage.output, estimated=usage.estimated)
    ctx.events.emit(
        "finalizer_finished",
        agent=agent.id,
        status=done.status,
        duration_ms=done.duration_ms,
        cause=done.error.cause if done.error else None,
        detail=done.error.detail if done.error else None,
    )
    return done


def scan_finalized(done: Finalized) -> list[Flag]:
    """With `validation.secret_scan`: the finalized text redacted as the answers are (the
    finalizer may write a credential itself), and the warning to show when it held one."""
    kinds: set[str] = set()
    for field in ("text", "reasoning"):
        found = find_secrets(getattr(done, field))
        if found:
            kinds.update(secret.kind for secret in found)
            setattr(done, field, redact_secrets(getattr(done, field), found))
    if done.error is not None and done.error.detail:
        done.error.detail = redact_secrets(done.error.detail)
    if not kinds:
        return []
    return [Flag.secret("finalized", sorted(kinds), "the finalized answer")]
