"""What `freemad task ...` and `freemad evolve ...` print: text for a person on a terminal, JSON for
programs (`--json`, or whenever stdout is not a terminal; the options that choose are
`output_options` in freemad.cli.options)."""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from freemad.cli.options import verbose, wants_json
from freemad.markdown import one_line

if TYPE_CHECKING:
    from freemad.config.models import FreemadConfig
    from freemad.core.evolve.fold import EvolveState
    from freemad.core.task_machine import TaskState
    from freemad.logs import Console
    from freemad.redact import Redactor
    from freemad.store import RunRow

_CONFIG_ARG = "freemad.config_arg"
# Agents' text reaches a terminal: no escape sequences or other controls, but lines and tabs.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_WAITS_CHARS = 70


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


def note(text: str) -> None:
    """A line for the person (an acknowledgement): on stdout with text, on stderr with JSON."""
    click.echo(text, err=wants_json())


def begin(
    config: FreemadConfig, config_arg: str | None = None, *, stream: Console | None = None
) -> None:
    """Before a task or evolve command runs: its logging (DEBUG with `--verbose`; console lines
    to `stream`, a terminal's live line, when given), and the ` --config ...` that the commands
    it prints for copying need (see `command_line`)."""
    from freemad.logs import start_logging

    start_logging(config, verbose=verbose(), stream=stream)
    ctx = click.get_current_context(silent=True)
    if ctx is not None and config_arg is not None:
        ctx.meta[_CONFIG_ARG] = config_arg


def command_line(*words: str) -> str:
    """A `freemad` command to copy: with the config this one used when it would not be found
    again without `--config` (else the `--config` it was given, if any)."""
    ctx = click.get_current_context(silent=True)
    line = shlex.join(["freemad", *words])
    if ctx is None:
        return line
    if _CONFIG_ARG in ctx.meta:
        return line + str(ctx.meta[_CONFIG_ARG])
    given = ctx.params.get("config_path")
    return f"{line} --config {shlex.quote(str(given))}" if given else line


def _clean(text: str) -> str:
    return _CONTROLS.sub("", text).strip()


def _line(text: Any, limit: int) -> str:
    """Untrusted text on one line of a terminal, shortened to `limit` characters."""
    return one_line(_CONTROLS.sub(" ", str(text)), limit)


def _indented(text: str) -> str:
    return "\n".join(f"  {line}" for line in _clean(text).splitlines())


def _when(seconds: float | None) -> str:
    return "-" if seconds is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        click.echo("  ".join([*cells, row[-1]]).rstrip())


# --- tasks ----------------------------------------------------------------------------------


def _task_state(view: dict[str, Any]) -> str:
    status, stage = str(view.get("status")), view.get("current_stage")
    return status if status in ("completed", "cancelled") or not stage else f"{status} ({stage})"


def _waits_for(status: str, question: Any) -> str:
    if status == "waiting_for_human":
        return f"your answer: {_line(question or '', _WAITS_CHARS)}"
    return {"paused": "a resume", "running": "its agents"}.get(status, "-")


def task_rows(rows: Sequence[RunRow]) -> None:
    """Tasks as a short table, or as JSON (the rows `task list` has always printed)."""
    if wants_json():
        print_json([{"task_id": r.run_id, "status": r.status, **r.summary} for r in rows])
        return
    if not rows:
        click.echo("No tasks yet. Start one with: " + command_line("task", "start", "GOAL"))
        return
    table = [
        [
            r.run_id,
            str(r.summary.get("task_type", "task")),
            _task_state({**r.summary, "status": r.status}),
            _when(r.updated_at),
            # Rows written before the rename keep the question as "error".
            _waits_for(r.status, r.summary.get("question", r.summary.get("error"))),
        ]
        for r in rows
    ]
    _table(["ID", "KIND", "STATE", "UPDATED", "WAITS FOR"], table)


def show_task(state: TaskState, redactor: Redactor, *, row: RunRow | None = None) -> None:
    """The task as JSON (its view), or for a person: where it is, and what to do next."""
    view = state.view()
    if wants_json():
        print_json(view)
        return
    if row is not None:
        task_rows([row])
        click.echo()
    calls = f"{state.iterations} of {state.iteration_cap} agent calls"
    click.secho(
        f"task {state.task_id} ({state.task_type}): {_task_state(view)}, {calls}", bold=True
    )
    click.echo(f"goal: {_line(redactor.text(state.goal), 200)}")
    status = view["status"]
    if status == "waiting_for_human":
        click.echo("\nThe task asks:")
        click.echo(_indented(redactor.text(state.question or "")))
        click.echo("Answer with:")
        click.echo("  " + command_line("task", "answer", state.task_id, "YOUR ANSWER"))
    elif status == "completed":
        _show_result(state, redactor)
    elif status in {"paused", "running"}:
        why = "" if status == "paused" else " (if no process runs it any more)"
        click.echo(f"\nCarry it on{why} with:")
        click.echo("  " + command_line("task", "resume", state.task_id))


def _show_result(state: TaskState, redactor: Redactor) -> None:
    if state.branch:
        click.echo(f"branch: {state.branch}")
    if state.task_type == "code" and state.work_items:
        done = sum(1 for item in state.work_items if item.item_id in state.items_done)
        click.echo(f"work items: {done} of {len(state.work_items)} done")
    title = "Final plan" if state.task_type == "plan" else "Summary"
    for stage in ("finalize", "verify", "code_review", "execute"):
        content = str(state.outputs.get(stage, {}).get("content") or "").strip()
        if content:
            click.secho(f"\n{title}:\n", bold=True)
            click.echo(_clean(redactor.text(content)))
            return


# --- evolve ---------------------------------------------------------------------------------


def _evolve_state(view: dict[str, Any]) -> str:
    status, reason = str(view.get("status")), view.get("stop_reason")
    return f"{status} ({reason})" if reason else status


def evolve_rows(rows: Sequence[RunRow]) -> None:
    """Evolve runs as a short table, or as JSON (the rows `evolve list` has always printed)."""
    if wants_json():
        print_json(
            [{"run_id": r.run_id, "status": r.status, "goal": r.summary.get("goal")} for r in rows]
        )
        return
    if not rows:
        click.echo("No evolve runs yet. Start one with: " + command_line("evolve", "start", "GOAL"))
        return
    table = [
        [
            r.run_id,
            "evolve",
            _evolve_state({**r.summary, "status": r.status}),
            _when(r.updated_at),
            _waits_for(r.status, r.summary.get("question")),
        ]
        for r in rows
    ]
    _table(["ID", "KIND", "STATE", "UPDATED", "WAITS FOR"], table)


def show_evolve(state: EvolveState, *, row: RunRow | None = None) -> None:
    """The run as JSON (its view), or for a person: where it stands, and what to do next."""
    view = state.view()
    if wants_json():
        print_json(view)
        return
    if row is not None:
        evolve_rows([row])
        click.echo()
    run_id = state.run_id
    counted = f"{state.iterations} iteration(s), {len(state.versions)} version(s)"
    click.secho(f"evolve run {run_id}: {_evolve_state(view)}, {counted}", bold=True)
    click.echo(f"goal: {_line(state.goal, 200)}")
    incumbent = state.incumbent
    if incumbent is not None:
        scores = ", ".join(f"{k}={v:g}" for k, v in incumbent.components.items())
        click.echo(
            f"incumbent: v{incumbent.version} from iteration {incumbent.iteration} "
            f"({incumbent.commit[:12]}): {scores}"
        )
    if state.branch:
        click.echo(f"branch: {state.branch}")
    if state.error:
        click.echo(f"error: {_line(state.error, 600)}")
    if state.status.value == "waiting_for_human":
        click.echo("\nThe run asks:")
        click.echo(_indented(state.question or ""))
        click.echo("Answer with a direction:")
        click.echo("  " + command_line("evolve", "answer", run_id, "DIRECTION"))
        click.echo("or end the run:")
        click.echo("  " + command_line("evolve", "answer", run_id, "--decline"))
    elif state.status.value in ("paused", "running"):
        why = "" if state.status.value == "paused" else " (if no process runs it any more)"
        click.echo(f"\nCarry it on{why} with:")
        click.echo("  " + command_line("evolve", "resume", run_id))
    elif state.versions:
        click.echo("\nThe trajectory: " + command_line("evolve", "report", run_id))
