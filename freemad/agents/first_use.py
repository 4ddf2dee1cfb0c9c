"""A CLI's first call on a machine, alone. Some CLIs make their state on first use without a
lock: three `llm prompt` calls started at once in a new home race to create llm's logs
database, and two die (`sqlite3.IntegrityError: UNIQUE constraint failed: _llm_migrations.name`,
`TypeError: 'NoneType' object is not subscriptable`). Where a preset names the file such a
first call makes (`Preset.first_use_file`) and it is not there yet, one call runs alone and the
others wait for it; once the file exists, calls run side by side as always."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

from freemad.agents.presets import Preset

# One lock per event loop and state file: a debate's agents share their loop.
_LOCKS: dict[tuple[int, str], asyncio.Lock] = {}


def first_use_file(preset: Preset, env: Mapping[str, str]) -> Path | None:
    """The file `preset`'s CLI makes on its first call, for the home in `env`; None when it
    makes none that matters (or the home is unknown)."""
    if not preset.first_use_file:
        return None
    moved = env.get(preset.first_use_dir_env) if preset.first_use_dir_env else None
    if moved:
        return Path(moved) / Path(preset.first_use_file).name
    home = env.get("HOME")
    return Path(home) / preset.first_use_file if home else None


@contextlib.asynccontextmanager
async def alone_on_first_use(marker: Path | None) -> AsyncIterator[None]:
    """Hold the call alone while `marker` does not exist yet; else let it run at once."""
    if marker is None or marker.exists():
        yield
        return
    key = (id(asyncio.get_running_loop()), str(marker))
    lock = _LOCKS.setdefault(key, asyncio.Lock())
    await lock.acquire()
    if marker.exists():  # made by the call this one waited for
        lock.release()
        yield
        return
    try:
        yield
    finally:
        lock.release()
        if marker.exists():
            _LOCKS.pop(key, None)
