"""The `freemad` console script. `--version` is answered before anything heavy is imported."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from freemad import __version__

        sys.stdout.write(f"freemad {__version__}\n")
        return
    from freemad.cli import main as cli_main

    cli_main()
