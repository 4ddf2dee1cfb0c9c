"""The `freemad` console script. `--version` is answered before anything heavy is imported."""

from __future__ import annotations

import os
import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from freemad import __version__

        sys.stdout.write(f"freemad {__version__}\n")
        return
    from freemad.cli.root import main as cli_main

    try:
        cli_main()
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    _exit_now(code)


def _exit_code(code: object) -> int:
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1


def _exit_now(code: int) -> None:
    """Flush what we wrote, then skip the interpreter's teardown.

    Tearing down the modules a debate imported costs tens of milliseconds at the end of every
    run (docs/benchmarks-history.md); everything that matters (the transcript, the output, the log
    file) is written and flushed by now.
    """
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            code = code or 1
    os._exit(code)
