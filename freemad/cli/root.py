"""The `freemad` command line: a thin surface over the runtimes. Known errors become one line."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from freemad import __version__
from freemad.cli.loading import load_config
from freemad.cli.options import config_option, rounds_option
from freemad.errors import FreemadError, UsageError

if TYPE_CHECKING:
    from freemad.config.models import FreemadConfig

_DEFAULT_COMMAND = "debate"
# Options of the group itself; any other option in first place starts a debate.
_GROUP_OPTIONS = {"-h", "--help", "-V", "--version"}
_EXAMPLE = 'freemad "Write a function that returns Fibonacci(n)."'
# Words people try that are spelt otherwise here.
_OTHER_SPELLINGS = {
    "health": "freemad --health",
    "version": "freemad --version",
    "dashboard": "freemad-dashboard",
}


# The commands whose modules are imported when one is used (or help lists them), so that a
# debate does not import them all before its first agent starts.
_LAZY: dict[str, tuple[str, str]] = {
    "agents": ("freemad.cli.agents_command", "agents_command"),
    "bot": ("freemad.cli.bot", "bot_group"),
    "eval": ("freemad.cli.eval", "eval_group"),
    "evolve": ("freemad.cli.evolve_commands", "evolve_group"),
    "example": ("freemad.cli.init", "example_group"),
    "github": ("freemad.cli.github_commands", "github_group"),
    "init": ("freemad.cli.init", "init_command"),
    "review": ("freemad.cli.review_command", "review_command"),
    "site": ("freemad.cli.site_command", "site_group"),
    "task": ("freemad.cli.task_commands", "task_group"),
    "transcript": ("freemad.cli.transcripts", "transcript_group"),
}


class _DebateByDefault(click.Group):
    """`freemad "REQ" ...`, `freemad - < file` and `freemad --health ...` mean
    `freemad debate ...`; a lone word that is no command is an error, never a debate."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _LAZY:
            from importlib import import_module

            module, name = _LAZY[cmd_name]
            self.add_command(getattr(import_module(module), name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and ctx.resilient_parsing:  # shell completion of the first word
            return super().parse_args(ctx, args)
        args = _flags_after_command(args, self.list_commands(ctx))
        if not args or args[0] not in {*self.list_commands(ctx), *_GROUP_OPTIONS}:
            if args and not _is_requirement(args[0]) and not ctx.resilient_parsing:
                raise UsageError(_unknown_command(args[0], self.list_commands(ctx)))
            args = [_DEFAULT_COMMAND, *args]
        return super().parse_args(ctx, args)


# The options most commands share, as people put them before the command (`freemad -v evolve
# start ...`): moved after it, where the command reads them, or refuses them naming itself.
_SHARED_FLAGS = {"-v", "--verbose", "-q", "--quiet", "--json", "--text"}
_SHARED_VALUED = {"-c", "--config"}


def _flags_after_command(args: list[str], commands: list[str]) -> list[str]:
    """`args` with shared options that come before a command word moved behind the rest (before
    a `--`); unchanged when anything else comes first (a requirement: a debate)."""
    at = 0
    while at < len(args):
        word = args[at]
        if word in _SHARED_FLAGS or word.startswith(("--config=", "-c=")):
            at += 1
        elif word in _SHARED_VALUED and at + 1 < len(args):
            at += 2
        else:
            break
    if at == 0 or at == len(args) or args[at] not in commands or args[at] == _DEFAULT_COMMAND:
        return args
    leading, rest = args[:at], args[at:]
    end = rest.index("--") if "--" in rest else len(rest)
    return [*rest[:end], *leading, *rest[end:]]


def _is_requirement(first: str) -> bool:
    """An option, `-` (stdin), or a sentence (words with spaces between); not a lone word."""
    return first.startswith("-") or not first.strip() or any(c.isspace() for c in first)


def _unknown_command(word: str, commands: list[str], prefix: str = "freemad") -> str:
    import difflib

    spelt = {name: f"{prefix} {name}" for name in commands}
    if prefix == "freemad":
        spelt |= _OTHER_SPELLINGS
    close = difflib.get_close_matches(word.lower(), list(spelt), n=1, cutoff=0.6)
    guess = f" (did you mean '{spelt[close[0]]}'?)" if close else ""
    return (
        f"'{word}' is not a command{guess}; see 'freemad help'. To debate a one-word "
        f"requirement, write 'freemad debate {word}'"
    )


@click.group(
    cls=_DebateByDefault,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "-V", "--version", message="%(prog)s %(version)s")
def cli() -> None:
    """Teams of agent CLIs (claude, codex, gemini, ...) that debate, work tasks and evolve code.

    `freemad "REQUIREMENT"` is short for `freemad debate "REQUIREMENT"`. Every command
    finds its config as ruff and pytest do: --config FILE, else FREEMAD_CONFIG, else
    freemad.yaml, .freemad.yaml, freemad.json or [tool.freemad] in pyproject.toml from the
    current folder upward, else the built-in mock agents.

    \b
    Examples:
      freemad init                          # a starter freemad.yaml for this folder
      freemad "Write a function that returns Fibonacci(n)." --rounds 1
      freemad - --json < requirement.txt
      freemad --health
      freemad task start "Plan a key-value store with a small HTTP API."
      freemad example evolve-toy toy        # then: cd toy && freemad evolve start "..."
      freemad config check freemad.yaml
      freemad help task start
    """


@cli.command(
    _DEFAULT_COMMAND, short_help="Debate a requirement and print the winner (the default)."
)
@click.argument("requirement", required=False)
@config_option()
@rounds_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines, even on a terminal.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Log at DEBUG (each agent command, round, deadline and the decision) to stderr and "
    "logging.file.",
)
@click.option(
    "--save-transcript/--no-save-transcript",
    default=None,
    help="Write the transcript, or not (default: output.save_transcript).",
)
@click.option(
    "--format",
    "transcript_format",
    type=click.Choice(["json", "markdown"]),
    help="The transcript's format (default: output.format); --json is the result's.",
)
@click.option(
    "--transcript-dir",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Write the transcript into DIR (default: output.transcript_dir).",
)
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
    verbose: bool,
    save_transcript: bool | None,
    transcript_format: str | None,
    transcript_dir: str | None,
    health: bool,
) -> None:
    """Debate REQUIREMENT among the configured agents and print the winner.

    REQUIREMENT is the task in words; `-` reads it from stdin. Progress goes to
    stderr when it is a terminal; the result goes to stdout; the transcript is
    written into output.transcript_dir.

    \b
    Exit status: 0 a winner was chosen, also when a budget stopped the debate
                   early (or every agent is healthy);
                 1 the debate failed (or an agent is not healthy);
                 2 bad input: an option, the config or the requirement.
    """
    config = load_config(config_path).config
    if health:
        _health(config, as_json=as_json)
        return
    if requirement is None:
        raise UsageError(f"give a requirement, e.g. {_EXAMPLE}", hint="see 'freemad --help'")
    # The reference implementation's three transcript flags override the output section.
    given = {
        "save_transcript": save_transcript,
        "format": transcript_format,
        "transcript_dir": transcript_dir,
    }
    output = {key: value for key, value in given.items() if value is not None}
    if output:
        config = config.model_copy(update={"output": config.output.model_copy(update=output)})
    _debate(requirement, config, rounds=rounds, as_json=as_json, quiet=quiet, verbose=verbose)


def _health(config: FreemadConfig, *, as_json: bool) -> None:
    from freemad.agents.health import check_agents
    from freemad.cli.output import print_health
    from freemad.wiring import ADAPTERS

    # Where the debate's calls run: in the agents' sandbox with security.sandbox_agents.
    security = config.security
    sandbox = ADAPTERS.sandboxes.agent(security.sandbox) if security.sandbox_agents else None
    reports = check_agents(config.enabled_agents, sandbox)
    print_health(reports, as_json=as_json)
    failed = [r.agent_id for r in reports if not r.ok]
    if failed:
        raise FreemadError(
            f"{len(failed)} of {len(reports)} agent(s) failed the health check: {', '.join(failed)}"
        )


def _debate(
    requirement: str,
    config: FreemadConfig,
    *,
    rounds: int | None,
    as_json: bool,
    quiet: bool,
    verbose: bool = False,
) -> None:
    from contextlib import nullcontext

    from freemad.cli.output import print_result, progress_printer
    from freemad.core.run_events import fan_out
    from freemad.debate import check_requirement, run_debate, write_transcript
    from freemad.debate.live_journal import LiveJournal
    from freemad.logs import start_logging
    from freemad.redact import Redactor
    from freemad.wiring import ADAPTERS

    if requirement == "-":
        requirement = _read_stdin()
    # Before any agent starts: an empty or oversized requirement is the caller's mistake.
    requirement = check_requirement(requirement, config)
    redactor = Redactor(config.security.redact_patterns)
    # On a terminal a live line shows each agent at work; log lines print above it.
    progress = (
        progress_printer(verbose=config.output.verbose or verbose, redactor=redactor)
        if not quiet and sys.stderr.isatty()
        else None
    )
    start_logging(config, verbose=verbose, stream=progress.stream if progress else None)
    # With transcripts kept, the debate in flight is kept too, for the dashboard to show live;
    # the journal goes once the transcript is written.
    saving = config.output.save_transcript
    journal = LiveJournal(config.output.transcript_dir, redactor) if saving else None
    with journal or nullcontext(), progress or nullcontext():
        result = run_debate(
            requirement,
            config,
            rounds=rounds,
            on_event=fan_out(progress, journal),
            adapters=ADAPTERS,
        )
        unsaved = None
        if saving:
            try:
                result.transcript_path = str(write_transcript(result, config.output, redactor))
            except OSError as exc:
                unsaved = (
                    f"cannot write the transcript into output.transcript_dir "
                    f"{config.output.transcript_dir!r}: {exc.strerror or exc}"
                )
    print_result(result, redactor, as_json=as_json)
    if result.early_stop_note:  # a budget ended it: said on stderr too, where scripts look
        click.echo(f"freemad: note: stopped early: {result.early_stop_note}", err=True)
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


@cli.command("help")
@click.argument("words", nargs=-1, metavar="[COMMAND]...")
@click.pass_context
def help_command(ctx: click.Context, words: tuple[str, ...]) -> None:
    """Show the help of FREE-MAD, or of COMMAND: `freemad help task start`."""
    command: click.Command = cli
    current = ctx.find_root()
    for word in words:
        found = command.get_command(current, word) if isinstance(command, click.Group) else None
        if found is None:
            names = command.list_commands(current) if isinstance(command, click.Group) else []
            prefix = current.command_path
            raise UsageError(_unknown_command(word, names, prefix).split(";")[0])
        command = found
        current = click.Context(command, info_name=word, parent=current)
    click.echo(current.get_help())


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
    from freemad.config.models import json_schema

    click.echo(json.dumps(json_schema(), indent=2))


@config_group.command("check")
@click.argument("path", metavar="[FILE]", required=False, type=click.Path(dir_okay=False))
def config_check(path: str | None) -> None:
    """Validate FILE (YAML, or JSON if it ends in .json), or the config found from here.

    Prints one line and exits 0 if it is valid; otherwise prints the first
    problem (file, line and key) on stderr and exits 2.
    """
    loaded = load_config(path)
    config = loaded.config
    enabled = ", ".join(a.id for a in config.enabled_agents)
    shown = path or loaded.source.shown
    click.echo(f"{shown}: ok ({len(config.enabled_agents)} enabled agent(s): {enabled})")
    from pathlib import Path

    from freemad.config.agents_section import PRESET_COMMANDS
    from freemad.debate.team import team_notes

    for note in team_notes(config):
        click.echo(f"freemad: note: {note}", err=True)

    for agent in config.enabled_agents:
        preset_program = PRESET_COMMANDS.get(agent.type, "").split(" ")[0]
        program = Path(agent.command_words[0]).name
        if preset_program and program != preset_program:
            click.echo(
                f"freemad: note: agent {agent.id}: type {agent.type.value}, but its command runs "
                f"{program}, not {preset_program}: it is called exactly as configured, without "
                f"{preset_program}'s flags, output format and login folder (docs/agents.md)",
                err=True,
            )


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; errors become one line on stderr and an exit status (freemad.cli.run)."""
    from freemad.cli.run import run_cli

    run_cli(cli, sys.argv[1:] if argv is None else argv, "freemad")


__all__ = ["cli", "main"]
