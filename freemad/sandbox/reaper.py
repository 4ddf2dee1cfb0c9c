"""Agents and stages die with FREE-MAD, `kill -9` included, without an extra program per call.

Each process that starts commands starts one watcher (`reaper_watch.py`, a small stdlib-only
Python program in a session of its own) and holds the only write end of a pipe to it. Every
command starts in a process group of its own, carries `FREEMAD_REAPER=<token>` in its
environment, and is announced to the watcher by its group's id; once FREE-MAD has killed that
group, and before it reaps the leader, it says so. When FREE-MAD dies, however it dies, the pipe
closes and the watcher kills what is left: the announced groups and every process started with
the token (a command's children inherit it, so a daemon that left the group goes too).

This replaces `setpriv --pdeathsig KILL` before every command, an extra exec per agent call
that cost 3 to 7% of a 128-agent debate's wall time (docs/benchmarks-history.md), and reaches
further: `setpriv` only ever killed the command's own process. Where the watcher cannot start,
`enabled()` says so and callers fall back to `setpriv`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

from freemad.sandbox.reaper_watch import NAME

log = logging.getLogger(__name__)
_PROGRAM = Path(__file__).with_name("reaper_watch.py")


class Reaper:
    """This process's watcher: started on first use, again if it dies, anew in a forked child."""

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self._lock = threading.Lock()
        self._token = ""
        self._fd = -1
        self._watcher: subprocess.Popen[bytes] | None = None
        self._live: set[int] = set()
        self._failed = False

    def enabled(self) -> bool:
        """Whether a watcher runs for this process (started now if need be)."""
        with self._lock:
            return self._ensure()

    def mark(self) -> tuple[str, str]:
        """The environment entry every command started from this process carries."""
        with self._lock:
            self._ensure()
            return NAME, self._token

    def watch(self, pgid: int) -> None:
        """A command started in process group `pgid`."""
        with self._lock:
            if self._ensure():
                self._live.add(pgid)
                self._send(b"+%d\n" % pgid)

    def forget(self, pgid: int) -> None:
        """Group `pgid` was killed and its leader is not yet reaped."""
        with self._lock:
            if pgid in self._live:
                self._live.discard(pgid)
                self._send(b"-%d\n" % pgid)

    def watcher_pid(self) -> int | None:
        """The running watcher's pid, if one runs."""
        with self._lock:
            return self._watcher.pid if self._watcher is not None and self._fd >= 0 else None

    def announced(self) -> frozenset[int]:
        """The process groups announced and not yet forgotten: commands still running."""
        with self._lock:
            return frozenset(self._live)

    def after_fork(self) -> None:
        """In a forked child the pipe, the watcher and the groups are the parent's, not ours."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._clear()

    def _ensure(self) -> bool:
        if self._fd < 0 and not self._failed:
            self._start()
        return self._fd >= 0

    def _start(self) -> None:
        self._token = self._token or secrets.token_hex(16)
        if not sys.executable:
            self._failed = True
            return
        read, write = os.pipe()  # neither end is inherited by the commands we start
        try:
            self._watcher = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_PROGRAM), self._token],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env={},
                start_new_session=True,  # Ctrl-C and a killed process group spare it
            )
        except OSError as exc:
            os.close(write)
            self._give_up(f"cannot start the reaper ({exc})")
            return
        finally:
            os.close(read)
        os.set_blocking(write, False)
        self._fd = write
        if not all(self._write(b"+%d\n" % pgid) for pgid in self._live):
            self._give_up("the new reaper does not read")

    def _send(self, line: bytes) -> None:
        if self._write(line):
            return
        # The watcher died, or stopped reading: a new one takes over, told of every live group.
        log.warning("the reaper stopped; starting another")
        self._close()
        self._start()
        if self._fd >= 0 and not self._write(line):
            self._give_up("the new reaper does not read")

    def _write(self, line: bytes) -> bool:
        try:
            os.write(self._fd, line)  # shorter than PIPE_BUF: never split, never interleaved
        except OSError:
            return False
        return True

    def _close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = -1
        if self._watcher is not None:
            self._watcher.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._watcher.wait(timeout=1)
            self._watcher = None

    def _give_up(self, why: str) -> None:
        self._close()
        self._failed = True
        log.warning("%s; commands run under setpriv instead", why)


_REAPER = Reaper()
os.register_at_fork(after_in_child=_REAPER.after_fork)

enabled = _REAPER.enabled
mark = _REAPER.mark
watch = _REAPER.watch
forget = _REAPER.forget
watcher_pid = _REAPER.watcher_pid
announced = _REAPER.announced
