"""The click options more than one command declares, declared once: `--config`, `--json/--text`
with `--verbose` (and what they chose: `wants_json`, `verbose`), inspect's `--json`, the stores a
dashboard reads, and where a server listens. Only click is imported here: the root group and
every sub-command import this module before `--help` prints."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])
_JSON, _VERBOSE = "freemad.json", "freemad.verbose"

CONFIG_HELP = (
    "YAML or JSON config, or builtin:NAME (default: found from the current folder upward, "
    "else the built-in mock agents)."
)


def config_option(help: str = CONFIG_HELP, *, short: bool = True) -> Callable[[F], F]:
    """`--config FILE` (and `-c` unless `short` is false), passed as `config_path`; what the
    command does with it (and its default) is said in `help`. Load it with
    `freemad.cli.loading.load_config`."""
    return click.option(
        "--config",
        *(["-c"] if short else []),
        "config_path",
        metavar="FILE",
        type=click.Path(dir_okay=False),
        help=help,
    )


def _together(*options: Callable[[Any], Any]) -> Callable[[F], F]:
    """One decorator for `options`, listed in `--help` in the order given (as stacked)."""

    def add(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return add


def _remember(key: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def store(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if value is not None:
            ctx.meta[key] = value

    return store


# `--json/--text` and `--verbose`, kept in the context (see `wants_json`, `verbose`).
output_options = _together(
    click.option(
        "--json/--text",
        default=None,
        expose_value=False,
        callback=_remember(_JSON),
        help="JSON for programs, or text for people (default: text on a terminal, else JSON).",
    ),
    click.option(
        "--verbose",
        "-v",
        is_flag=True,
        default=None,
        expose_value=False,
        callback=_remember(_VERBOSE),
        help="Log at DEBUG (agent commands, steps) to stderr and logging.file.",
    ),
)


def wants_json() -> bool:
    """What `--json/--text` chose; without either, JSON unless stdout is a terminal."""
    ctx = click.get_current_context(silent=True)
    chosen = ctx.meta.get(_JSON) if ctx is not None else None
    return not sys.stdout.isatty() if chosen is None else bool(chosen)


def verbose() -> bool:
    """Whether `--verbose` was given."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx.meta.get(_VERBOSE)) if ctx is not None else False


# A debate's critique rounds, where a command runs debates (`freemad`, `freemad eval run`).
rounds_option = click.option(
    "--rounds",
    "-r",
    metavar="N",
    type=click.IntRange(0, 50),
    help="Critique rounds after the first proposals (default: debate.rounds).",
)

# `inspect` always prints JSON; `--json` is accepted so scripts may pass it as to the others.
inspect_json_option = click.option(
    "--json", is_flag=True, expose_value=False, help="Accepted: inspect prints JSON."
)

# The stores of runs a dashboard reads.
store_options = _together(
    click.option("--task-store", metavar="DB", help="Task store (task.store_path)."),
    click.option("--evolve-store", metavar="DB", help="Evolve store (evolve.store_path)."),
)


def listen_options(*, port: int, workers: str) -> Callable[[F], F]:
    """`--host`, `--port` (`port` by default) and `--workers` (`workers` says its default) of a
    server that runs on gunicorn."""
    return _together(
        click.option(
            "--host", default="127.0.0.1", show_default=True, help="Address to listen on."
        ),
        click.option(
            "--port",
            type=click.IntRange(1, 65535),
            default=port,
            show_default=True,
            help="TCP port.",
        ),
        click.option("--workers", type=click.IntRange(1, 64), default=None, help=workers),
    )
