"""The `freemad` command line: a thin surface over the runtimes. Known errors become one line."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from freemad import __version__
from freemad.errors import ConfigError, FreemadError, UsageError

if TYPE_CHECKING:
    from freemad.config.models import FreemadConfig

_DEFAULT_COMMAND = "debate"
# Options of the group itself; anything else in first place starts a debate.
_GROUP_OPTIONS = {"-h", "--help", "-V", "--version"}
_EXAMPLE = 'freemad "Write a function that returns Fibonacci(n)."'


class _DebateByDefault(click.Group):
    """`freemad "REQ" ...` and `freemad --health ...` mean `freemad debate ...`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or args[0] not in {*self.commands, *_GROUP_OPTIONS}:
            args = [_DEFAULT_COMMAND, *args]
        return super().parse_args(ctx, args)


@click.group(
    cls=_DebateByDefault,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "-V", "--version", message="%(prog)s %(version)s")
def cli() -> None:
    """Teams of agent CLIs (claude, codex, gemini, ...) that debate, work tasks and evolve code.

    `freemad "REQUIREMENT"` is short for `freemad debate "REQUIREMENT"`.

    \b
    Examples:
      freemad "Write a function that returns Fibonacci(n)." --rounds 1
      freemad - --json < requirement.txt
      freemad --health --config configs/mock_agents.yaml
      freemad config check my-config.yaml
    """


@cli.command(
    _DEFAULT_COMMAND, short_help="Debate a requirement and print the winner (the default)."
)
@click.argument("requirement", required=False)
@click.option(
    "--config",
    "-c",
    "config_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="YAML or JSON config (default: the built-in mock agents).",
)
@click.option(
    "--rounds",
    "-r",
    metavar="N",
    type=click.IntRange(0, 50),
    help="Critique rounds after the first proposals (default: debate.rounds).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines, even on a terminal.")
@click.option(
    "--health", is_flag=True, help="Check that each agent's program runs and answers --version."
)
def debate_command(
    *,
    requirement: str | None,
    config_path: str | None,
    rounds: int | None,
    as_json: bool,
    quiet: bool,
    health: bool,
) -> None:
    """Debate REQUIREMENT among the configured agents and print the winner.

    REQUIREMENT is the task in words; `-` reads it from stdin. Progress goes to
    stderr when it is a terminal; the result goes to stdout; the transcript is
    written into output.transcript_dir.

    \b
    Exit status: 0 a winner was chosen (or every agent is healthy);
                 1 the debate failed (or an agent is not healthy);
                 2 bad input: an option, the config or the requirement.
    """
    config = _load(config_path)
    if health:
        _health(config, as_json=as_json)
        return
    if requirement is None:
        raise UsageError(f"give a requirement, e.g. {_EXAMPLE}", hint="see 'freemad --help'")
    _debate(requirement, config, rounds=rounds, as_json=as_json, quiet=quiet)


def _health(config: FreemadConfig, *, as_json: bool) -> None:
    from freemad.agents.health import check_agents
    from freemad.cli_output import print_health

    reports = check_agents(config.enabled_agents)
    print_health(reports, as_json=as_json)
    failed = [r.agent_id for r in reports if not r.ok]
    if failed:
        raise FreemadError(
            f"{len(failed)} of {len(reports)} agent(s) failed the health check: {', '.join(failed)}"
        )


def _debate(
    requirement: str, config: FreemadConfig, *, rounds: int | None, as_json: bool, quiet: bool
) -> None:
    from freemad.cli_output import print_result, progress_printer
    from freemad.debate import check_requirement, run_debate, write_transcript
    from freemad.logs import configure_logging
    from freemad.redact import Redactor

    if requirement == "-":
        requirement = _read_stdin()
    # Before any agent starts: an empty or oversized requirement is the caller's mistake.
    requirement = check_requirement(requirement, config)
    redactor = Redactor(config.security.redact_patterns)
    try:
        configure_logging(config.logging, redactor)
    except OSError as exc:
        raise ConfigError(
            f"logging.file: cannot open {config.logging.file}: {exc.strerror or exc}"
        ) from None
    show_progress = not quiet and sys.stderr.isatty()
    result = run_debate(
        requirement,
        config,
        rounds=rounds,
        on_event=progress_printer(verbose=config.output.verbose) if show_progress else None,
    )
    unsaved = None
    if config.output.save_transcript:
        try:
            result.transcript_path = str(write_transcript(result, config.output, redactor))
        except OSError as exc:
            unsaved = (
                f"cannot write the transcript into output.transcript_dir "
                f"{config.output.transcript_dir!r}: {exc.strerror or exc}"
            )
    print_result(result, redactor, as_json=as_json)
    if unsaved:
        raise FreemadError(unsaved)
    if result.status != "completed":
        where = f"; transcript: {result.transcript_path}" if result.transcript_path else ""
        raise FreemadError(f"the debate failed: {result.error}{where}")


def _read_stdin() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("the requirement on stdin is not UTF-8 text") from None


def _register_groups() -> None:
    from freemad.cli_bot import bot_group
    from freemad.cli_evolve import evolve_group
    from freemad.cli_github import github_group
    from freemad.cli_site import site_group
    from freemad.cli_tasks import task_group

    cli.add_command(task_group)
    cli.add_command(evolve_group)
    cli.add_command(github_group)
    cli.add_command(bot_group)
    cli.add_command(site_group)


_register_groups()


@cli.group("config", invoke_without_command=True)
@click.pass_context
def config_group(ctx: click.Context) -> None:
    """Inspect and validate configuration files.

    \b
    Examples:
      freemad config check my-config.yaml
      freemad config schema > freemad.schema.json
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


@config_group.command("schema")
def config_schema() -> None:
    """Print the JSON Schema of a config file (for editors and CI)."""
    from freemad.config.models import FreemadConfig

    schema = FreemadConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "FREE-MAD configuration"
    click.echo(json.dumps(schema, indent=2))


@config_group.command("check")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False))
def config_check(path: str) -> None:
    """Validate FILE (YAML, or JSON if it ends in .json).

    Prints one line and exits 0 if it is valid; otherwise prints the first
    problem (file, line and key) on stderr and exits 2.
    """
    config = _load(path)
    enabled = ", ".join(a.id for a in config.enabled_agents)
    click.echo(f"{path}: ok ({len(config.enabled_agents)} enabled agent(s): {enabled})")


def _load(path: str | None) -> FreemadConfig:
    from freemad.config import default_config, load_config

    return load_config(path) if path else default_config()


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; errors become one line on stderr and an exit status (freemad.cli_run)."""
    from freemad.cli_run import run_command

    run_command(cli, sys.argv[1:] if argv is None else argv, "freemad")


__all__ = ["cli", "main"]
