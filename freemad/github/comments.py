"""The comments FREE-MAD posts on GitHub, rendered from Jinja2 templates. Pure: data in, markdown out.

Everything that came from agents, issues or comments is untrusted and goes through the markdown
escapes (`freemad.markdown`), so it renders as text: no HTML, images, links or mentions.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import jinja2

from freemad.core.task_machine import TaskState
from freemad.debate.debate_record import DebateResult
from freemad.markdown import escape_markdown, escape_markdown_block

_MARKS = {
    "done": "✅ done",
    "running": "⏳ in progress",
    "waiting": "❓ waiting for you",
    "todo": "·",
}


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("freemad", "templates/github"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # noqa: S701 - markdown; untrusted text goes through the md filters
        keep_trailing_newline=True,
        trim_blocks=False,
    )
    env.filters["md"] = lambda value: escape_markdown(value, 300)
    env.filters["quote"] = escape_markdown_block
    env.filters["fence"] = fence
    return env


def fence(text: Any, limit: int = 6000) -> str:
    """Text in a code block whose fence is longer than any backtick run inside it."""
    body = str(text)
    if len(body) > limit:
        body = body[:limit] + f"\n[... {len(body) - limit} more characters on the run's page ...]"
    longest = max((len(run) for run in re.findall(r"`{3,}", body)), default=2)
    marks = "`" * (longest + 1)
    return f"{marks}text\n{body.rstrip()}\n{marks}"


def render_debate(result: DebateResult, run_url: str | None, job_url: str | None = None) -> str:
    winner = result.final_answer_id or ""
    holders_now = result.holders_history[-1] if result.holders_history else {}
    holding: dict[str, list[str]] = {}
    for agent, answer in sorted(holders_now.items()):
        holding.setdefault(answer, []).append(agent)
    scores = [
        {"answer": answer, "score": score, "holders": holding.get(answer, [])}
        for answer, score in sorted(result.scores.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    rounds = [
        {
            "number": record.round,
            "kind": record.type,
            "turns": [
                {"agent": agent, "what": _turn(turn.status, turn.action, turn.answer_id)}
                for agent, turn in sorted(record.agents.items())
            ],
        }
        for record in result.transcript
    ]
    return (
        _environment()
        .get_template("debate.md.j2")
        .render(
            run_id=result.run_id,
            status=result.status,
            error=result.error or "",
            winner=winner,
            score=result.scores.get(winner, 0.0),
            holders=holding.get(winner, result.winning_agents),
            solution=result.final_solution or "",
            scores=scores,
            rounds=rounds,
            finalized=_finalized(result),
            warnings=[flag.message for flag in result.flags],
            tie_broken_by=result.tie_broken_by if result.tied_answers else None,
            run_url=run_url,
            job_url=job_url,
        )
    )


def _finalized(result: DebateResult) -> dict[str, Any] | None:
    """The finalizer's answer or failure, for the comment; None without a finalizer."""
    done = result.finalized
    if done is None:
        return None
    return {
        "agent": done.agent,
        "status": done.status,
        "text": done.text,
        "critiques": done.critiques,
        "error": done.problem(),
    }


def _turn(status: str, action: str, answer_id: str | None) -> str:
    if status != "ok":
        return f"failed ({status})"
    shown = f" `{answer_id}`" if answer_id else ""
    verbs = {
        "initial": "proposed",
        "keep": "kept",
        "revise": "revised to",
        "carried_forward": "kept (no answer)",
    }
    return f"{verbs.get(action, action)}{shown}"


def render_task(state: TaskState, run_url: str | None, job_url: str | None = None) -> str:
    view = state.view()
    stages = []
    current = state.stages.index(state.current_stage) if state.current_stage in state.stages else 0
    for index, name in enumerate(state.stages):
        if view["status"] == "completed" or index < current:
            mark = "done"
        elif index == current:
            mark = "waiting" if view["status"] == "waiting_for_human" else "running"
        else:
            mark = "todo"
        stages.append({"name": name, "mark": _MARKS[mark]})
    headline = {
        "running": "in progress",
        "waiting_for_human": "waiting for you",
        "paused": "paused",
        "completed": "done",
        "cancelled": "cancelled",
    }.get(view["status"], view["status"])
    return (
        _environment()
        .get_template("task.md.j2")
        .render(
            task=view,
            goal=view["goal"],
            stages=stages,
            headline=headline,
            run_url=run_url,
            job_url=job_url,
        )
    )


def render_reply(kind: str, **values: Any) -> str:
    defaults = {"login": "", "reason": "", "text": "", "thing": "issue", "verb": "", "url": ""}
    return _environment().get_template("reply.md.j2").render(kind=kind, **{**defaults, **values})


def render_evolve(run: Any, goal: str, run_url: str | None, job_url: str | None = None) -> str:
    headline = {
        "running": "in progress",
        "waiting_for_human": "waiting for you",
        "paused": "paused",
        "stopped": "finished",
        "failed": "failed",
    }.get(run.status, run.status)
    template = _environment().get_template("evolve.md.j2")
    return template.render(run=run, goal=goal, headline=headline, run_url=run_url, job_url=job_url)
