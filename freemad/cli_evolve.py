"""`freemad evolve ...`: validate, start, steer and report evolve runs. Commands print JSON,
`report` prints markdown."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from freemad.errors import FreemadError, UsageError

if TYPE_CHECKING:
    from freemad.evolve.runtime import EvolveRunner

_config_option = click.option(
    "--config",
    "-c",
    "config_path",
    metavar="FILE",
    required=True,
    type=click.Path(dir_okay=False),
    help="YAML or JSON config with an evolve: section; its paths resolve against its folder.",
)


@click.group("evolve")
def evolve_group() -> None:
    """Measured progress toward a goal: agents propose, a deterministic judge admits, git keeps
    the lineage.

    \b
    Example (on a copy of examples/evolve_toy, committed to a git repository of its own):
      freemad evolve validate --config evolve.yaml
      freemad evolve start --config evolve.yaml "make slow_sum as fast as possible"
      freemad evolve report RUN_ID --config evolve.yaml
    """


@contextmanager
def _runner(config_path: str, *, progress: bool = False) -> Iterator[EvolveRunner]:
    from freemad.cli import _load
    from freemad.evolve.runtime import EvolveRunner, config_dir_of, open_store

    config = _load(config_path)
    if config.evolve is None:
        raise UsageError(f"{config_path} has no evolve: section (see docs/evolve.md)")
    config_dir = config_dir_of(config_path)
    store = open_store(config.evolve.resolved(config_dir))
    try:
        yield EvolveRunner(
            config,
            store,
            config_dir=config_dir,
            on_step=_progress if progress and sys.stderr.isatty() else None,
        )
    finally:
        store.close()


def _say(text: str) -> None:
    click.echo(text, err=True)


def _progress(kind: str, data: dict[str, Any]) -> None:
    if kind == "run_created":
        _say(f"evolve run {data['run_id']} on {data['branch']}")
    elif kind == "candidate_judged":
        verdict = data["verdict"]
        mark = f"admitted v{data['version']}" if verdict["admitted"] else "rejected"
        _say(f"  iteration {data['iteration']}: {mark}: {verdict['reason']}")
    elif kind == "intervention":
        shown = "; ".join(data["directions"]) or f"no directions ({data['error']})"
        _say(f"  ! {data['detection']}: new directions: {shown}")
    elif kind == "waiting_for_human":
        _say(f"  ? {data['question']}")
    elif kind == "stopped":
        _say(f"stopped: {data['reason']}")


def _print(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


@evolve_group.command("validate")
@_config_option
def validate(config_path: str) -> None:
    """Check the config, the repository, the sandbox and the judge on the seed. Exit 1 on errors."""
    from freemad.evolve.validate import validate as check

    with _runner(config_path) as runner:
        report = check(runner.evolve, runner.sandbox, runner.agent_box)
    for line in report["isolation"]:
        click.echo(f"isolation: {line}")
    baseline = report["baseline"]
    if baseline and baseline["measurement"]["ok"]:
        shown = ", ".join(f"{k}={v:g}" for k, v in baseline["measurement"]["components"].items())
        click.echo(f"seed {str(report['seed_commit'])[:12]} measures: {shown}")
    for line in report["warnings"]:
        click.echo(f"warning: {line}")
    for line in report["errors"]:
        click.echo(f"error: {line}")
    if not report["ok"]:
        raise FreemadError(f"{len(report['errors'])} problem(s); no run can start until fixed")
    click.echo("ok: a run can start")


@evolve_group.command("start")
@_config_option
@click.argument("goal")
def start(config_path: str, goal: str) -> None:
    """Start a run toward GOAL; it runs until it stops, fails, pauses or needs you."""
    with _runner(config_path, progress=True) as runner:
        state = runner.start(goal)
    _print(state.view())
    if state.stop_reason == "baseline_failed":  # the seed failed its own judge: nothing was tried
        raise FreemadError(f"the judge fails on the seed, so the run cannot begin: {state.error}")
    if state.stop_reason == "tampered":
        raise FreemadError(
            f"run {state.run_id} stopped: its lineage was tampered with; {state.error}"
        )


@evolve_group.command("status")
@_config_option
@click.argument("run_id")
def status(config_path: str, run_id: str) -> None:
    """The run: status, incumbent version and its scores, the question it waits on."""
    with _runner(config_path) as runner:
        _print(runner.state(run_id).view())


@evolve_group.command("inspect")
@_config_option
@click.argument("run_id")
def inspect(config_path: str, run_id: str) -> None:
    """The run with its full event log."""
    with _runner(config_path) as runner:
        _print(runner.inspect(run_id))


@evolve_group.command("report")
@_config_option
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Write report.md and score.svg into this folder instead of printing the markdown.",
)
@click.argument("run_id")
def report(config_path: str, out: str | None, run_id: str) -> None:
    """The trajectory as markdown with an SVG score chart (byte-identical on re-run)."""
    from freemad.evolve.report import render_report

    with _runner(config_path) as runner:
        runner.state(run_id)  # an unknown run is a clear error
        events = [(e.kind, e.data) for e in runner.store.events(run_id)]
    markdown, svg = render_report(run_id, events, svg_name="score.svg")
    if out is None:
        click.echo(markdown, nl=False)
        return
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.md").write_text(markdown, encoding="utf-8")
    (folder / "score.svg").write_text(svg, encoding="utf-8")
    click.echo(str(folder / "report.md"))


@evolve_group.command("pause")
@_config_option
@click.argument("run_id")
def pause(config_path: str, run_id: str) -> None:
    """Pause the run after the step in flight; `resume` carries it on."""
    with _runner(config_path) as runner:
        _print(runner.pause(run_id).view())


@evolve_group.command("resume")
@_config_option
@click.argument("run_id")
def resume(config_path: str, run_id: str) -> None:
    """Carry a paused, stopped or interrupted run on (a raised stop.max_iterations is fine; a
    changed judge is refused)."""
    with _runner(config_path, progress=True) as runner:
        _print(runner.resume(run_id).view())


@evolve_group.command("stop")
@_config_option
@click.argument("run_id")
def stop(config_path: str, run_id: str) -> None:
    """End the run after the step in flight; its versions stay on the branch."""
    with _runner(config_path) as runner:
        _print(runner.stop(run_id).view())


@evolve_group.command("answer")
@_config_option
@click.option("--decline", is_flag=True, help="Give no direction: the run ends cleanly.")
@click.argument("run_id")
@click.argument("text", required=False)
def answer(config_path: str, decline: bool, run_id: str, text: str | None) -> None:
    """Answer the question a waiting run asks with a direction (TEXT), and carry it on."""
    if decline == (text is not None):
        raise UsageError("give either a direction (TEXT) or --decline")
    with _runner(config_path, progress=True) as runner:
        if decline:
            _print(runner.decline(run_id).view())
            return
        runner.answer(run_id, text or "")
        _print(runner.advance(run_id).view())


@evolve_group.command("list")
@_config_option
def list_runs(config_path: str) -> None:
    """Every evolve run in the store, most recently active first."""
    with _runner(config_path) as runner:
        _print(
            [
                {"run_id": r.run_id, "status": r.status, "goal": r.summary.get("goal")}
                for r in runner.store.runs(kind="evolve")
            ]
        )
