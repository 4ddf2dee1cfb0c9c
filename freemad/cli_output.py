"""What the CLI prints: the result, the health table, and live progress on a terminal."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict

import click

from freemad.agents.health import Health
from freemad.core.events import Event, EventSink
from freemad.debate.records import DebateResult
from freemad.redact import Redactor

_SYMBOL = {"ok": "✓", "failed": "✗", "cut": "⏱"}


def print_result(result: DebateResult, redactor: Redactor, *, as_json: bool) -> None:
    if as_json:
        data = redactor.data(result.model_dump(mode="json"))
        click.echo(json.dumps(data, indent=2))
        return
    text = redactor.text
    if result.final_answer_id is None:
        click.echo(f"No winner: {result.error or 'no answers'}")
    else:
        score = result.scores[result.final_answer_id]
        click.secho(
            f"Winner {result.final_answer_id}  score {score:.2f}  "
            f"held by {', '.join(result.winning_agents)}",
            bold=True,
        )
        if result.tied_answers:
            others = ", ".join(result.tied_answers[1:])
            click.echo(f"(tied with {others}; broken {result.settings['tie_break']})")
        click.echo()
        click.echo(text(result.final_solution or ""))
        click.echo()
        click.secho("Scores", bold=True)
        ranked = sorted(result.scores.items(), key=lambda item: -item[1])
        for ident, value in ranked:
            origin = ", ".join(result.origin_agents.get(ident, []))
            click.echo(f"  {ident}  {value:8.2f}  first proposed by {origin}")
    click.secho("Rounds", bold=True)
    for record in result.transcript:
        flags = " (soft deadline)" if record.deadline_hit_soft else ""
        flags += " (hard deadline)" if record.deadline_hit_hard else ""
        click.echo(f"  round {record.round} {record.type}{flags}:")
        for agent_id, turn in record.agents.items():
            what = (
                turn.action
                if turn.status == "ok"
                else f"{turn.status}: {turn.error.cause if turn.error else ''}"
            )
            answer = f" -> {turn.answer_id}" if turn.answer_id else ""
            seconds = turn.duration_ms / 1000
            click.echo(f"    {_SYMBOL[turn.status]} {agent_id:<16} {what}{answer}  {seconds:.1f}s")
    if result.early_stop_reason:
        click.echo(f"Stopped early: {result.early_stop_reason}")
    if result.transcript_path:
        click.echo(f"Transcript: {result.transcript_path}")


def print_health(reports: Sequence[Health], *, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([asdict(r) for r in reports], indent=2))
        return
    for report in reports:
        if report.ok:
            click.echo(f"✓ {report.agent_id:<16} {report.version}  ({report.path})")
        else:
            click.echo(f"✗ {report.agent_id:<16} {report.program}: {report.problem}")


def progress_printer(*, verbose: bool = False) -> EventSink:
    """Lines on stderr as agents start and finish; stdout stays for the result."""

    def show(event: Event) -> None:
        data = event.data
        if event.kind == "round_started":
            agents = len(data["agents"])
            click.secho(
                f"round {data['round']} ({data['type']}): {agents} agent(s)", err=True, bold=True
            )
        elif event.kind == "agent_started" and verbose:
            click.echo(f"  … {data['agent']} started", err=True)
        elif event.kind == "agent_finished":
            status = data["status"]
            seconds = data.get("duration_ms", 0) / 1000
            cause = f" ({data.get('cause')}: {data.get('detail')})" if status != "ok" else ""
            click.echo(
                f"  {_SYMBOL.get(status, '?')} {data['agent']} {seconds:.1f}s{cause}", err=True
            )
        elif event.kind == "early_stop":
            click.echo(f"stopping early: {data['reason']}", err=True)
        sys.stderr.flush()

    return show
