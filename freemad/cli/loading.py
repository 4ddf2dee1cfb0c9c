"""What every command loads before it works: its config, and the store of the runs it is about.
Nothing heavy is imported until a command calls in (`--help` stays quick)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from freemad.errors import UsageError

if TYPE_CHECKING:
    from freemad.config.discover import LoadedConfig


def load_config(path: str | None) -> LoadedConfig:
    """The config of a command: `path` (its --config), else FREEMAD_CONFIG, else the first
    freemad.yaml, .freemad.yaml, freemad.json or pyproject.toml [tool.freemad] found from the
    current folder upward, else the built-in mock agents; its relative paths resolved against its
    folder. `.config` is the config, `.source` where it came from (freemad.config.discover).
    A config that does not load is a one-line `ConfigError` naming the file, line and key."""
    from freemad.config.discover import load

    return load(path)


def existing_store(path: str) -> None:
    """Commands about runs that exist never create a store: a missing one is a one-line error."""
    from pathlib import Path

    if not Path(path).is_file():
        raise UsageError(f"no runs yet in {path}")
