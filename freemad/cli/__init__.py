"""The `freemad` and `freemad-dashboard` commands: `root.py` is the `freemad` group (the debate
command, `help`, `config`) and registers the sub-command groups, one module each (`task_commands.py`,
`evolve_commands.py`, `github_commands.py`, `bot.py`, `site_command.py`, `init.py`,
`agents_command.py`, `review_command.py`, `eval.py` with `eval_simulate.py`); `dashboard.py` is
`freemad-dashboard`. Commands declare their shared options with `options.py` and load their
config with `loading.py`; `run.py` turns every failure into one line and an exit status.

`from freemad.cli import cli, main` still works, without importing a command before it is asked
for: importing a module of this package (as `freemad-dashboard` does) stays as cheap as the
module itself.
"""

from __future__ import annotations

from typing import Any

__all__ = ["cli", "main"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from freemad.cli import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
