"""What the debate command prints: the result, the health table, and live progress on a terminal."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any, TextIO

import click

from freemad.agents.health import Health
from freemad.cli.live_line import LiveLine
from freemad.core.run_events import Event
from freemad.debate.debate_record import DebateResult
from freemad.redact import Redactor

_SYMBOL = {"ok": "✓", "failed": "✗", "cut": "⏱"}
_STDERR_LINES = 12  # of a failed agent's stderr, shown with -v (the transcript keeps 4 KiB)


def print_result(result: DebateResult, redactor: Redactor, *, as_json: bool) -> None:
    if as_json:
        data = redactor.data(result.model_dump(mode="json"))
        click.echo(json.dumps(data, indent=2))
        _print_flags(result, err=True)  # stdout stays one JSON document
        return
    text = redactor.text
    _print_flags(result, err=False)
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
            others = ", ".join(a for a in result.tied_answers if a != result.final_answer_id)
            broken = result.tie_broken_by or result.settings["tie_break"]
            click.echo(f"(tied with {others}; broken by {broken})")
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
    _print_finalized(result, text)
    if result.early_stop_reason:
        click.echo(f"Stopped early: {result.early_stop_reason}")
    if result.transcript_path:
        click.echo(f"Transcript: {result.transcript_path}")


def _print_flags(result: DebateResult, *, err: bool) -> None:
    """A warning line per flag on the winning answer (a credential-looking string in it)."""
    for flag in result.flags:
        click.secho(f"Warning: {flag.message}", fg="yellow", bold=True, err=err)


def _print_finalized(result: DebateResult, text: Callable[[str], str]) -> None:
    """The finalizer's answer, apart from the winner's: it is not the decision."""
    done = result.finalized
    if done is None:
        return
    click.echo()
    if done.status == "ok":
        click.secho(
            f"Finalized by {done.agent} from the winner and {done.critiques} critique(s) "
            "(not scored; the winner above is the decision)",
            bold=True,
        )
        click.echo(text(done.text))
    else:
        click.echo(
            f"Finalizer {done.agent} failed ({text(done.problem())}); the winner above stands"
        )
    click.echo()


def print_health(reports: Sequence[Health], *, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([asdict(r) for r in reports], indent=2))
        return
    for report in reports:
        if report.ok:
            click.echo(f"✓ {report.agent_id:<16} {report.version}  ({report.path})")
            if report.warning:
                click.echo(f"  {'':<16} ! {report.warning}")
        else:
            click.echo(f"✗ {report.agent_id:<16} {report.program}: {report.problem}")


class DebateProgress:
    """Progress on a terminal (stderr): per round, one live line with each agent's elapsed time,
    redrawn in place while they work, then kept with how each did. An EventSink; use it as a
    context manager around the debate. `stream` is for a logging handler (lines go above)."""

    def __init__(
        self, out: TextIO, *, verbose: bool = False, redact: Callable[[str], str] = str
    ) -> None:
        self.verbose = verbose
        self.redact = redact  # what an agent printed may quote a credential
        self.live = LiveLine(out, self._line)
        self.stream = self.live.stream
        self._label = ""
        self._agents: list[str] = []
        self._started: dict[str, float] = {}
        self._finished: dict[str, tuple[str, float]] = {}

    def __enter__(self) -> DebateProgress:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(*exc)

    def __call__(self, event: Event) -> None:
        data = event.data
        with self.live.lock:
            if event.kind == "round_started":
                self._label = (
                    f"round {data['round']} ({data['type']}): {len(data['agents'])} agent(s)"
                )
                self._agents = list(data["agents"])
                self._started, self._finished = {}, {}
            elif event.kind == "agent_started":
                self._started[data["agent"]] = time.monotonic()
            elif event.kind == "agent_finished":
                self._agent_finished(data)
            elif event.kind == "round_finished":
                line = self._line()
                self._agents = []
                if line:
                    self.live.print(line)
            elif event.kind == "round_dropped":
                self._agents = []
                self.live.print(f"round {data['round']} dropped: {data.get('reason')}")
            elif event.kind == "early_stop":
                self.live.print(f"stopping early: {data['reason']}")
            elif event.kind == "finalizer_started":
                self.live.print(
                    f"finalizer {data['agent']}: writing the final answer from the winner "
                    f"and {data['critiques']} critique(s)"
                )
            elif event.kind == "finalizer_finished":
                seconds = data["duration_ms"] / 1000
                cause = (
                    f": {data.get('cause')}: {data.get('detail')}" if data["status"] != "ok" else ""
                )
                self.live.print(
                    f"  {_SYMBOL.get(data['status'], '?')} finalizer {data['agent']} "
                    f"{seconds:.1f}s{cause}"
                )
        # No redraw here: the live line's own clock redraws it, a few times a second at most.

    def _agent_finished(self, data: dict[str, Any]) -> None:
        agent, status = data["agent"], data["status"]
        seconds = data["duration_ms"] / 1000 if "duration_ms" in data else self._elapsed(agent)
        self._finished[agent] = (status, seconds)
        if status != "ok" or self.verbose:
            cause = f": {data.get('cause')}: {data.get('detail')}" if status != "ok" else ""
            self.live.print(
                f"  {_SYMBOL.get(status, '?')} {agent} {seconds:.1f}s{self.redact(cause)}"
            )
        if self.verbose and data.get("stderr_tail"):
            # -v: what the failed CLI printed last, where its cause usually is.
            tail = self.redact(str(data["stderr_tail"])).splitlines()[-_STDERR_LINES:]
            self.live.print("\n".join(f"      stderr| {line}" for line in tail))

    def _elapsed(self, agent: str) -> float:
        started = self._started.get(agent)
        return 0.0 if started is None else time.monotonic() - started

    def _line(self) -> str | None:
        if not self._agents:
            return None
        shown = []
        for agent in self._agents:
            if agent in self._finished:
                status, seconds = self._finished[agent]
                shown.append(f"{_SYMBOL.get(status, '?')} {agent} {seconds:.1f}s")
            elif agent in self._started:
                shown.append(f"{agent} {self._elapsed(agent):.1f}s")
            else:
                shown.append(f"{agent} (queued)")
        return f"{self._label}: {', '.join(shown)}"


def progress_printer(*, verbose: bool = False, redactor: Redactor | None = None) -> DebateProgress:
    """Live progress on stderr (a terminal); stdout stays for the result."""
    from freemad.redact import redact_secrets

    def redact(text: str) -> str:
        return redact_secrets(redactor.text(text) if redactor else text)

    return DebateProgress(sys.stderr, verbose=verbose, redact=redact)
