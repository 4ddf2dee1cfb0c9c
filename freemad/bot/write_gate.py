"""One writer of the delivery log at a time across gunicorn's worker processes: a file lock.

SQLite serialises writers anyway, but a writer that finds the database locked sleeps in steps of
up to 100 ms before it looks again, and under 16 concurrent senders that put the 99th percentile
past 200 ms. Queueing on a file lock wakes the next writer the moment the last one is done.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path


class GateUnavailable(Exception):
    """The lock file cannot be opened (the state directory is gone or read-only)."""


class WriteGate:
    """One writer at a time, across threads and gunicorn's worker processes (a file lock)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._pid = 0

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            if self._fd is None or self._pid != os.getpid():  # a fork has a file of its own
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
                except OSError as exc:
                    raise GateUnavailable(str(exc)) from exc
                self._pid = os.getpid()
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
