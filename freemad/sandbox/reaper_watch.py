"""The reaper's watcher: a program of its own (run as `python -I -S reaper_watch.py TOKEN`, the
standard library only) that outlives FREE-MAD by a moment to kill what FREE-MAD started.

It reads lines from stdin, a pipe whose only writer is the FREE-MAD process that started it:
`+PID` when a command starts in a process group of its own, `-PID` once that group is killed and
before its leader is reaped (so a pid the system hands out again is never aimed at). End of file
means FREE-MAD is gone, however it went (`kill -9` included): the watcher kills every group it
was told of and every process whose starting environment carries `FREEMAD_REAPER=TOKEN`, which
each command gets (their children inherit it), then exits.

Nothing it reads is trusted: a process running as the same user could open the pipe through
/proc and write to it. A group is killed only when its leader carries the token, so a forged
line can aim only at processes that started with it, which the writer could kill itself anyway.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

NAME = "FREEMAD_REAPER"
_PROC = "/proc"
# A process may start children while its siblings are being killed: look again until none is left.
_SWEEPS = 20
_LINE = 32  # bytes: a longer line is read in pieces, none of them a pid


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isalnum():
        return 2
    mark = f"{NAME}={argv[1]}".encode()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_IGN)  # only the end of the pipe ends the watch
    live: set[int] = set()
    while line := sys.stdin.buffer.readline(_LINE):
        sign, digits = line[:1], line[1:].strip()
        if not digits.isdigit() or int(digits) <= 1:
            continue
        if sign == b"+":
            live.add(int(digits))
        elif sign == b"-":
            live.discard(int(digits))
    reap(live, mark)
    return 0


def reap(groups: set[int], mark: bytes) -> None:
    """Kill the groups whose leaders carry `mark`, then every process that carries it."""
    me = os.getpid()
    proc = os.path.isdir(_PROC)
    for pgid in sorted(groups):
        if pgid != me and (not proc or carries(pgid, mark)):
            _kill(os.killpg, pgid)
    if not proc:
        return
    for _ in range(_SWEEPS):
        marked = [pid for pid in _pids() if pid != me and carries(pid, mark)]
        if not marked:
            return
        for pid in marked:
            # Its group first, asked while it still lives: a leader killed first may be reaped
            # by then, and the members of its group that lack the mark would stay.
            with contextlib.suppress(OSError):
                if os.getpgid(pid) == pid:
                    _kill(os.killpg, pid)
            _kill(os.kill, pid)


def carries(pid: int, mark: bytes) -> bool:
    """Whether process `pid` started with `mark` in its environment."""
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as handle:
            return mark in handle.read().split(b"\0")
    except OSError:
        return False


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir(_PROC) if name.isdigit()]
    except OSError:
        return []


def _kill(kill: Callable[[int, int], None], target: int) -> None:
    with contextlib.suppress(OSError):
        kill(target, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
