"""What the tests read of other processes in /proc (Linux): whether one runs, its parent, its
children, and waiting for one to end."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

PROC = Path("/proc")


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (which may hold spaces)."""
    return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie does not)."""
    try:
        state = _stat(pid)[0]
    except OSError:
        return False
    return state not in {"Z", "X"}


def parent(pid: int) -> int | None:
    try:
        return int(_stat(pid)[1])
    except OSError:
        return None


def children(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (those of any of its threads)."""
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit() and parent(int(entry.name)) == pid and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def settles(done: Callable[[], bool], wait: float) -> bool:
    """Whether `done()` holds within `wait` seconds (a kill takes a moment)."""
    deadline = time.monotonic() + wait
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def gone(pid: int, wait: float = 10.0) -> bool:
    """Whether `pid` ends (or is a zombie) within `wait` seconds."""
    return settles(lambda: not alive(pid), wait)
