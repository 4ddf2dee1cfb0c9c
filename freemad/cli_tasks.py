"""`freemad task ...`: start, steer and inspect autonomous tasks. Every command prints JSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from freemad.tasks.runtime import TaskRunner

_config_option = click.option(
    "--config",
    "-c",
    "config_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="YAML or JSON config; task.store_path names the store.",
)


@click.group("task")
def task_group() -> None:
    """Autonomous plan and code tasks: proposer, independent reviewer, arbiter, and you.

    \b
    Example:
      freemad task start --config configs/autonomous_smoke.yaml --task-type plan \\
        --workspace-root "$PWD" "Critique this architecture until the agents approve a plan."
      freemad task status TASK_ID --config configs/autonomous_smoke.yaml
      freemad task answer TASK_ID "Use SQLite." --config configs/autonomous_smoke.yaml
      freemad task resume TASK_ID --config configs/autonomous_smoke.yaml
    """


@contextmanager
def _runner(config_path: str | None, *, progress: bool = False) -> Iterator[TaskRunner]:
    from freemad.cli import _load
    from freemad.tasks.runtime import TaskRunner, open_store

    config = _load(config_path)
    store = open_store(config)
    try:
        yield TaskRunner(
            config, store, on_step=_progress if progress and sys.stderr.isatty() else None
        )
    finally:
        store.close()


def _progress(kind: str, data: dict[str, Any]) -> None:
    if kind == "agent_replied":
        decision = data["response"].get("review_decision")
        said = f" ({decision})" if decision else ""
        click.echo(f"  ✓ {data['stage']}: {data['role']} {data['agent']}{said}", err=True)
    elif kind == "agent_failed":
        click.echo(
            f"  ✗ {data['stage']}: {data['role']} {data['agent']}: {data['cause']}", err=True
        )
    elif kind == "waiting_for_human":
        click.echo(f"  ? waiting for you: {data['question']}", err=True)


def _print(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


@task_group.command("start")
@_config_option
@click.option("--task-type", type=click.Choice(["plan", "code"]), default="plan", show_default=True)
@click.option("--workspace-root", type=click.Path(file_okay=False), default=".", show_default=True)
@click.argument("goal")
def start(config_path: str | None, task_type: str, workspace_root: str, goal: str) -> None:
    """Start a task toward GOAL and run it until it finishes or needs you."""
    with _runner(config_path, progress=True) as runner:
        _print(runner.start(task_type, goal, workspace_root).view())


@task_group.command("status")
@_config_option
@click.argument("task_id")
def status(config_path: str | None, task_id: str) -> None:
    """Show a task: status, current stage, and the question it waits on (in `error`)."""
    with _runner(config_path) as runner:
        _print(runner.state(task_id).view())


@task_group.command("answer")
@_config_option
@click.argument("task_id")
@click.argument("text")
def answer(config_path: str | None, task_id: str, text: str) -> None:
    """Answer the question a waiting task asks; `resume` then carries it on."""
    with _runner(config_path) as runner:
        _print(runner.answer(task_id, text).view())


@task_group.command("resume")
@_config_option
@click.option("--more-iterations", type=click.IntRange(min=0), default=0, help="Raise the cap.")
@click.argument("task_id")
def resume(config_path: str | None, more_iterations: int, task_id: str) -> None:
    """Carry a waiting, paused or interrupted task on."""
    with _runner(config_path, progress=True) as runner:
        _print(runner.resume(task_id, more_iterations).view())


@task_group.command("approve")
@_config_option
@click.argument("task_id")
@click.argument("stage")
def approve(config_path: str | None, task_id: str, stage: str) -> None:
    """Approve the current STAGE yourself; the task moves on at the next resume."""
    with _runner(config_path) as runner:
        _print(runner.approve(task_id, stage).view())


@task_group.command("reject")
@_config_option
@click.argument("task_id")
@click.argument("stage")
@click.argument("reason")
def reject(config_path: str | None, task_id: str, stage: str, reason: str) -> None:
    """Send the current STAGE back with REASON as feedback."""
    with _runner(config_path) as runner:
        _print(runner.reject(task_id, stage, reason).view())


@task_group.command("pause")
@_config_option
@click.argument("task_id")
def pause(config_path: str | None, task_id: str) -> None:
    """Pause a task after the step in flight."""
    with _runner(config_path) as runner:
        _print(runner.pause(task_id).view())


@task_group.command("cancel")
@_config_option
@click.argument("task_id")
def cancel(config_path: str | None, task_id: str) -> None:
    """Cancel a task for good."""
    with _runner(config_path) as runner:
        _print(runner.cancel(task_id).view())


@task_group.command("inspect")
@_config_option
@click.argument("task_id")
def inspect(config_path: str | None, task_id: str) -> None:
    """The task with its full event log and artifacts."""
    with _runner(config_path) as runner:
        _print(runner.inspect(task_id))


@task_group.command("list")
@_config_option
def list_tasks(config_path: str | None) -> None:
    """Every task in the store, most recently active first."""
    with _runner(config_path) as runner:
        _print(
            [
                {"task_id": r.run_id, "status": r.status, **r.summary}
                for r in runner.store.runs(kind="task")
            ]
        )
