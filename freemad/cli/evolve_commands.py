"""`freemad evolve ...`: validate, start, steer and report evolve runs. Runs print as text for a
person on a terminal and as JSON for programs (freemad.cli.show); `report` prints markdown."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from freemad.cli.live_line import WorkLine
from freemad.cli.options import config_option, inspect_json_option, output_options, wants_json
from freemad.cli.show import note, print_json, show_evolve
from freemad.errors import FreemadError, UsageError

if TYPE_CHECKING:
    from freemad.evolve.evolve_runner import EvolveRunner

_config_option = config_option(
    "YAML or JSON config with an evolve: section (default: the freemad.yaml, .freemad.yaml, "
    "freemad.json or pyproject.toml found from the current folder upward); its paths resolve "
    "against its folder."
)


@click.group("evolve")
def evolve_group() -> None:
    """Measured progress toward a goal: agents propose, a deterministic judge admits, git keeps
    the lineage.

    \b
    Example (the toy, copied into a git repository of its own, its config found there):
      freemad example evolve-toy toy && cd toy
      freemad evolve validate
      freemad evolve start "make slow_sum as fast as possible"
      freemad evolve report RUN_ID
    """


@contextmanager
def _runner(
    config_path: str | None, *, progress: bool = False, store_kind: str = "existing"
) -> Iterator[EvolveRunner]:
    """The runner on the config's store: `existing` (a missing store is a one-line error and is
    not created), `create`, or `scratch` (a throwaway one, for commands that store nothing)."""
    from freemad.cli.loading import existing_store, load_config
    from freemad.cli.show import begin
    from freemad.evolve.evolve_runner import EvolveRunner
    from freemad.wiring import ADAPTERS, open_evolve_store, open_store

    loaded = load_config(config_path)
    config, source = loaded.config, loaded.source
    live = _Progress(sys.stderr) if progress and sys.stderr.isatty() else None
    begin(config, loaded.config_arg(), stream=live.stream if live else None)
    if config.evolve is None:
        hint = (
            "'freemad example evolve-toy DIR' copies a toy that has one"
            if source.path is None
            else "see docs/evolve.md"
        )
        raise UsageError(f"{source.shown} has no evolve: section ({hint})")
    evolve = config.evolve.resolved(source.base)
    with tempfile.TemporaryDirectory(prefix="freemad-evolve-") as scratch:
        if store_kind == "scratch":
            store = open_store(Path(scratch) / "evolve.db")
        else:
            if store_kind == "existing":
                existing_store(evolve.store_path)
            else:  # a repository evolve cannot use is one line, before any file is made
                ADAPTERS.repos.resolve_seed(Path(evolve.repo_path), evolve.seed_ref)
            store = open_evolve_store(evolve)
        try:
            with live or nullcontext():
                yield EvolveRunner(
                    config,
                    store,
                    config_dir=source.base,
                    on_step=live.step if live else None,
                    config_arg=loaded.config_arg(),
                    adapters=ADAPTERS,
                )
        finally:
            store.close()


class _Progress(WorkLine):
    """On a terminal: the iteration in flight with its elapsed time, then a line per verdict."""

    def step(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "run_created":
            self.print(f"evolve run {data['run_id']} on {data['branch']}")
        elif kind == "iteration_started":
            self.begin("iteration", f"iteration {data['iteration']}: proposing")
        elif kind == "generation_started":
            size, parallel = data["size"], data["parallel"]
            self.begin(
                "iteration",
                f"generation {data['iteration']}: {size} candidates, {parallel} at once",
            )
        elif kind == "candidate_proposed" and "candidate" not in data:
            self.begin("iteration", f"iteration {data['iteration']}: judging")
        elif kind in ("candidate_judged", "iteration_abandoned"):
            self.end("iteration")
        if kind == "candidate_judged":
            verdict = data["verdict"]
            mark = f"admitted v{data['version']}" if verdict["admitted"] else "rejected"
            self.print(f"  iteration {data['iteration']}: {mark}: {verdict['reason']}")
        elif kind == "candidate_measured":
            passed = "passes" if data["verdict"]["admitted"] else "rejected"
            where = f"iteration {data['iteration']} candidate {data['candidate']}"
            self.print(f"    {where}: {passed}: {data['verdict']['reason']}")
        elif kind == "intervention":
            shown = "; ".join(data["directions"]) or f"no directions ({data['error']})"
            self.print(f"  ! {data['detection']}: new directions: {shown}")
        elif kind == "waiting_for_human" and wants_json():  # text output shows it anyway
            self.print(f"  ? {data['question']}")
        elif kind == "stopped" and wants_json():
            self.print(f"stopped: {data['reason']}")


@evolve_group.command("validate")
@_config_option
def validate(config_path: str) -> None:
    """Check the config, the repository, the sandbox and the judge on the seed. Exit 1 on errors."""
    from freemad.evolve.validate import validate as check

    with _runner(config_path, store_kind="scratch") as runner:
        report = check(
            runner.evolve, runner.repos, runner.sandbox, runner.agent_box, config=runner.config
        )
    for line in report["isolation"]:
        click.echo(f"isolation: {line}")
    for health in report["agents"]:
        if health.ok:
            click.echo(f"agent {health.agent_id}: starts ({health.version})")
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
@output_options
@click.argument("goal")
def start(config_path: str, goal: str) -> None:
    """Start a run toward GOAL; it runs until it stops, fails, pauses or needs you. Prints the
    run: for a person, where it stands and what to do next; as JSON, with `run_id`."""
    with _runner(config_path, progress=True, store_kind="create") as runner:
        state = runner.start(goal)
    show_evolve(state)
    if state.stop_reason == "baseline_failed":  # the seed failed its own judge: nothing was tried
        raise FreemadError(f"the judge fails on the seed, so the run cannot begin: {state.error}")
    if state.stop_reason == "worker_failed":
        raise FreemadError(
            f"run {state.run_id} stopped: its worker failed the same way in a row (above)"
        )
    if state.stop_reason == "tampered":
        raise FreemadError(
            f"run {state.run_id} stopped: its lineage was tampered with; {state.error}"
        )


@evolve_group.command("status")
@_config_option
@output_options
@click.argument("run_id", required=False)
def status(config_path: str, run_id: str | None) -> None:
    """The run: status, incumbent version and its scores, the question it waits on (with the
    command that answers it). Without RUN_ID, every run as a table."""
    from freemad.cli.show import evolve_rows

    with _runner(config_path) as runner:
        if run_id is None:
            evolve_rows(runner.store.runs(kind="evolve"))
            return
        show_evolve(runner.state(run_id), row=runner.store.run(run_id))


@evolve_group.command("inspect")
@_config_option
@inspect_json_option
@click.argument("run_id")
def inspect(config_path: str, run_id: str) -> None:
    """The run with its full event log, as JSON (always)."""
    with _runner(config_path) as runner:
        print_json(runner.inspect(run_id))


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
    from freemad.evolve.run_report import render_report

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
@output_options
@click.argument("run_id")
def pause(config_path: str, run_id: str) -> None:
    """Pause the run after the step in flight; `resume` carries it on."""
    with _runner(config_path) as runner:
        show_evolve(runner.pause(run_id))


@evolve_group.command("resume")
@_config_option
@output_options
@click.argument("run_id")
def resume(config_path: str, run_id: str) -> None:
    """Carry a paused, stopped or interrupted run on (a raised stop.max_iterations is fine; a
    changed judge is refused)."""
    with _runner(config_path, progress=True) as runner:
        show_evolve(runner.resume(run_id))


@evolve_group.command("stop")
@_config_option
@output_options
@click.argument("run_id")
def stop(config_path: str, run_id: str) -> None:
    """End the run after the step in flight; its versions stay on the branch."""
    with _runner(config_path) as runner:
        show_evolve(runner.stop(run_id))


@evolve_group.command("answer")
@_config_option
@click.option("--decline", is_flag=True, help="Give no direction: the run ends cleanly.")
@output_options
@click.argument("run_id")
@click.argument("text", required=False)
def answer(config_path: str, decline: bool, run_id: str, text: str | None) -> None:
    """Answer the question a waiting run asks with a direction (TEXT), and carry it on."""
    if decline == (text is not None):
        raise UsageError("give either a direction (TEXT) or --decline")
    with _runner(config_path, progress=True) as runner:
        if decline:
            show_evolve(runner.decline(run_id))
            return
        runner.answer(run_id, text or "")
        note("answer recorded; the run goes on")
        show_evolve(runner.advance(run_id))


@evolve_group.command("list")
@_config_option
@output_options
def list_runs(config_path: str) -> None:
    """Every evolve run in the store, most recently active first, as a table."""
    from freemad.cli.show import evolve_rows

    with _runner(config_path) as runner:
        evolve_rows(runner.store.runs(kind="evolve"))
