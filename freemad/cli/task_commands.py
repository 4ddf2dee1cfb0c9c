"""`freemad task ...`: start, steer and inspect autonomous tasks. Text for a person on a terminal,
JSON for programs (freemad.cli.show)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import click

from freemad.cli.live_line import WorkLine
from freemad.cli.options import (
    CONFIG_HELP,
    config_option,
    inspect_json_option,
    output_options,
    wants_json,
)
from freemad.cli.show import note, print_json

if TYPE_CHECKING:
    from freemad.core.task_machine import TaskState
    from freemad.tasks.task_runner import TaskRunner

_config_option = config_option(CONFIG_HELP.removesuffix(".") + "; task.store_path names the store.")


@click.group("task")
def task_group() -> None:
    """Autonomous plan and code tasks: proposer, independent reviewer, arbiter, and you.

    \b
    Example (with the built-in mock agents, or the agents of the freemad.yaml found here):
      freemad task start "Critique this architecture until the agents approve a plan."
      freemad task status TASK_ID          # its question, and the command that answers it
      freemad task answer TASK_ID "Use SQLite."     # the task goes on to its final plan
      freemad task status                  # every task, as a table

    On a terminal the commands print text; piped (or with --json) they print JSON.
    """


@contextmanager
def _runner(
    config_path: str | None, *, progress: bool = False, create: bool = False
) -> Iterator[TaskRunner]:
    """The runner on the config's store; unless `create`, a missing store is a one-line error
    (and is not created)."""
    from freemad.cli.loading import existing_store, load_config
    from freemad.cli.show import begin
    from freemad.tasks.task_runner import TaskRunner
    from freemad.wiring import ADAPTERS, open_task_store

    loaded = load_config(config_path)
    config = loaded.config
    if not create:
        existing_store(config.task.store_path)
    live = _Progress(sys.stderr) if progress and sys.stderr.isatty() else None
    begin(config, loaded.config_arg(), stream=live.stream if live else None)
    store = open_task_store(config)
    try:
        with live or nullcontext():
            yield TaskRunner(
                config,
                store,
                on_step=live.step if live else None,
                config_arg=loaded.config_arg(),
                on_call=live.call if live else None,
                adapters=ADAPTERS,
            )
    finally:
        store.close()


class _Progress(WorkLine):
    """On a terminal: each agent at work with its elapsed time, then a line as it answers."""

    def call(self, kind: str, data: dict[str, Any]) -> None:
        self.begin(_call_key(data), f"{data['stage']}: {data['role']} {data['agent']}")

    def step(self, kind: str, data: dict[str, Any]) -> None:
        took = self.end(_call_key(data)) if kind in ("agent_replied", "agent_failed") else ""
        if kind == "agent_replied":
            decision = data["response"].get("review_decision")
            said = f" ({decision})" if decision else ""
            self.print(f"  ✓ {data['stage']}: {data['role']} {data['agent']}{took}{said}")
        elif kind == "agent_failed":
            cause = data["cause"]
            self.print(f"  ✗ {data['stage']}: {data['role']} {data['agent']}{took}: {cause}")
        elif kind == "waiting_for_human" and wants_json():  # text output shows it anyway
            self.print(f"  ? waiting for you: {data['question']}")


def _call_key(data: dict[str, Any]) -> str:
    return f"{data['stage']}/{data['role']}/{data.get('item')}"


def _show(runner: TaskRunner, state: TaskState, *, with_row: bool = False) -> None:
    from freemad.cli.show import show_task
    from freemad.redact import Redactor

    redactor = Redactor(runner.config.security.redact_patterns)
    show_task(state, redactor, row=runner.store.run(state.task_id) if with_row else None)


@task_group.command("start")
@_config_option
@click.option("--task-type", type=click.Choice(["plan", "code"]), default="plan", show_default=True)
@click.option("--workspace-root", type=click.Path(file_okay=False), default=".", show_default=True)
@output_options
@click.argument("goal")
def start(config_path: str | None, task_type: str, workspace_root: str, goal: str) -> None:
    """Start a task toward GOAL and run it until it finishes or needs you.

    Prints the task: for a person, its question (with the command that answers it) or its
    final plan; as JSON (with `task_id`), its state.
    """
    with _runner(config_path, progress=True, create=True) as runner:
        _show(runner, runner.start(task_type, goal, workspace_root))


@task_group.command("status")
@_config_option
@output_options
@click.argument("task_id", required=False)
def status(config_path: str | None, task_id: str | None) -> None:
    """Show a task: its state, stage and what it waits for, then its question or final plan.
    Without TASK_ID, every task as a table. (JSON: the question is in `error`.)"""
    with _runner(config_path) as runner:
        if task_id is None:
            from freemad.cli.show import task_rows

            task_rows(runner.store.runs(kind="task"))
            return
        _show(runner, runner.state(task_id), with_row=True)


@task_group.command("answer")
@_config_option
@output_options
@click.argument("task_id")
@click.argument("text")
def answer(config_path: str | None, task_id: str, text: str) -> None:
    """Answer the question a waiting task asks, and carry the task on with the answer until it
    finishes or asks again."""
    with _runner(config_path, progress=True) as runner:
        runner.answer(task_id, text)
        note("answer recorded; the task goes on")
        _show(runner, runner.advance(task_id))


@task_group.command("resume")
@_config_option
@click.option("--more-iterations", type=click.IntRange(min=0), default=0, help="Raise the cap.")
@output_options
@click.argument("task_id")
def resume(config_path: str | None, more_iterations: int, task_id: str) -> None:
    """Carry a waiting, paused or interrupted task on. A completed task is shown as it is."""
    from freemad.core.task_machine import Status

    with _runner(config_path, progress=True) as runner:
        state = runner.state(task_id)
        if state.status is Status.COMPLETED and not more_iterations:
            # `task answer` already carried it to the end: nothing is left to resume.
            click.echo(f"task {task_id} is already completed", err=True)
        else:
            state = runner.resume(task_id, more_iterations)
        _show(runner, state)


@task_group.command("approve")
@_config_option
@output_options
@click.argument("task_id")
@click.argument("stage")
def approve(config_path: str | None, task_id: str, stage: str) -> None:
    """Approve the current STAGE yourself; the task moves on at the next resume."""
    with _runner(config_path) as runner:
        _show(runner, runner.approve(task_id, stage))


@task_group.command("reject")
@_config_option
@output_options
@click.argument("task_id")
@click.argument("stage")
@click.argument("reason")
def reject(config_path: str | None, task_id: str, stage: str, reason: str) -> None:
    """Send the current STAGE back with REASON as feedback."""
    with _runner(config_path) as runner:
        _show(runner, runner.reject(task_id, stage, reason))


@task_group.command("pause")
@_config_option
@output_options
@click.argument("task_id")
def pause(config_path: str | None, task_id: str) -> None:
    """Pause a task after the step in flight."""
    with _runner(config_path) as runner:
        _show(runner, runner.pause(task_id))


@task_group.command("cancel")
@_config_option
@output_options
@click.argument("task_id")
def cancel(config_path: str | None, task_id: str) -> None:
    """Cancel a task for good."""
    with _runner(config_path) as runner:
        _show(runner, runner.cancel(task_id))


@task_group.command("inspect")
@_config_option
@inspect_json_option
@click.argument("task_id")
def inspect(config_path: str | None, task_id: str) -> None:
    """The task with its full event log and artifacts, as JSON (always)."""
    with _runner(config_path) as runner:
        print_json(runner.inspect(task_id))


@task_group.command("list")
@_config_option
@output_options
def list_tasks(config_path: str | None) -> None:
    """Every task in the store, most recently active first, as a table."""
    from freemad.cli.show import task_rows

    with _runner(config_path) as runner:
        task_rows(runner.store.runs(kind="task"))
