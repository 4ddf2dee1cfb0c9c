"""WAL checkpoints off the acknowledgement path: a thread per process that folds a SQLite file's
write-ahead log back into it a moment after writes.

SQLite checkpoints inside the commit that takes the log past 1,000 pages (every ~120 deliveries
of 8 KB), and a checkpoint with synchronous=NORMAL waits for two fsyncs: 10-60 ms here, while
every other acknowledgement queued behind the one that paid for it. The web edge's connections
turn that off (`PRAGMA wal_autocheckpoint = 0`) and nudge a `Checkpointer` after each commit
instead; its PASSIVE checkpoint lets writers go on appending meanwhile. Connections that keep
SQLite's own checkpoints (the worker's) are unaffected, and a log left unfolded by a web process
that died is folded by the next connection that checkpoints.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger("freemad.bot.checkpoint")

DELAY = 0.2  # seconds after a nudge: one checkpoint for a burst of commits


def no_autocheckpoint(conn: sqlite3.Connection) -> None:
    """Leave checkpoints to a `Checkpointer` on this connection."""
    conn.execute("PRAGMA wal_autocheckpoint = 0")


class Checkpointer:
    """Checkpoints `path` from a thread of its own, DELAY seconds after the first nudge of a burst.

    The thread starts on the first nudge in each process (gunicorn forks its workers after
    building nothing, but a fork must not inherit a thread that is not there) and is a daemon:
    it holds nothing a process needs to finish.
    """

    def __init__(self, path: Path | str, delay: float = DELAY) -> None:
        self.path = Path(path)
        self.delay = delay
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pid = 0
        self.done = 0  # checkpoints run in this process: tests read it

    def nudge(self) -> None:
        if self._pid != os.getpid():
            self._start()
        self._wake.set()

    def stop(self) -> None:
        """End this process's thread; a later nudge starts another."""
        with self._lock:
            self._pid = 0
            self._stop.set()
            self._wake.set()

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._wake = threading.Event()
            self._stop = threading.Event()
            name = f"wal-checkpoint-{self.path.name}"
            threading.Thread(target=self._loop, name=name, daemon=True).start()

    def _loop(self) -> None:
        wake, stop = self._wake, self._stop
        conn: sqlite3.Connection | None = None
        try:
            while not stop.is_set():
                wake.wait()
                if stop.wait(self.delay):
                    break
                wake.clear()
                try:
                    if conn is None:
                        conn = sqlite3.connect(self.path, timeout=5, isolation_level=None)
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    self.done += 1
                except sqlite3.Error as exc:
                    # The next commit's nudge tries again; SQLite's own log is intact meanwhile.
                    log.warning("WAL checkpoint of %s failed: %s", self.path.name, exc)
        finally:
            if conn is not None:
                conn.close()
