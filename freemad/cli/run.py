"""Running a click command as a console script: every failure is one line on stderr and an exit
status, never a traceback (`FREEMAD_DEBUG=1` shows one for an internal error)."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

from freemad.errors import FreemadError


def run_cli(command: click.Command, args: list[str], prog: str) -> NoReturn:
    try:
        code = command.main(args, prog_name=prog, standalone_mode=False)
    except click.exceptions.Abort:
        fail(prog, "interrupted", 130)
    except click.ClickException as exc:
        fail(prog, f"{exc.format_message()}{_see_help(exc)}", exc.exit_code)
    except FreemadError as exc:
        fail(prog, exc.one_line(), exc.exit_code)
    except KeyboardInterrupt:
        fail(prog, "interrupted", 130)
    except BrokenPipeError:
        # The reader went away (`freemad ... | head`): not an error worth a word. Point stdout
        # at /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except Exception as exc:
        if os.environ.get("FREEMAD_DEBUG"):
            raise
        fail(
            prog,
            f"internal error: {type(exc).__name__}: {exc} (set FREEMAD_DEBUG=1 for details)",
            1,
        )
    sys.exit(code if isinstance(code, int) else 0)


def _see_help(exc: click.ClickException) -> str:
    ctx = getattr(exc, "ctx", None)
    return f" (see '{ctx.command_path} --help')" if ctx is not None else ""


def fail(prog: str, message: str, code: int) -> NoReturn:
    # One line, whatever the message holds: scripts and CI logs read the first line only.
    click.echo(f"{prog}: error: {' '.join(message.split())}", err=True)
    sys.exit(code)
