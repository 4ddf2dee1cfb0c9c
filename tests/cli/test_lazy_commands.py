"""The `freemad` group imports a command's module only when that command is used (or listed by
help): a debate does not pay for importing every other command before its first agent starts."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from freemad.cli import root


@pytest.mark.parametrize("name", sorted(root._LAZY))
def test_each_lazy_name_loads_the_command_of_that_name(name: str) -> None:
    with click.Context(root.cli) as ctx:
        command = root.cli.get_command(ctx, name)
    assert command is not None and command.name == name


def test_help_lists_the_lazy_commands_beside_the_others() -> None:
    with click.Context(root.cli) as ctx:
        listed = root.cli.list_commands(ctx)
    assert listed == sorted(listed)
    assert {"debate", "config", "help", *root._LAZY} == set(listed)


def test_starting_imports_no_lazy_command_module() -> None:
    modules = sorted({module for module, _ in root._LAZY.values()})
    probe = (
        f"import sys, freemad.cli.root\nprint(','.join(m for m in {modules!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
