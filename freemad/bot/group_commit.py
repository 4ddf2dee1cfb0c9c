"""How acknowledgements reach the disk: one writer at a time across processes, and the writes
of one process's threads committed together.

`WriteGate` lines up writers on a file lock shared by gunicorn's worker processes: SQLite
serialises writers anyway, but a writer that finds the database locked sleeps in steps of up to
100 ms before it looks again, and under 16 concurrent senders that put the 99th percentile past
200 ms. Queueing on a file lock wakes the next writer the moment the last one is done.

`GroupCommit` is the group commit of a database server: a thread that finds another of its
process already writing leaves its delivery and waits; the writer, once it holds the gate,
commits every delivery left by then in one transaction, and afterwards hands the writing to one
of the threads that came meanwhile, which does the same for the next batch. Each thread still
returns only after the transaction holding its delivery has committed, so a 202 still means the
delivery is on disk. What it saves is a transaction per delivery (each writes 9 to 10 pages to
the write-ahead log, several of them the same index leaves as the last one's) and a turn of the
file lock: up to a sixth of the CPU per acknowledgement when the workers are busy, nothing when
they are not (docs/benchmarks.md, "Webhook bot").
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Generic, TypeVar

Entry = TypeVar("Entry")


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


class _Slot(Generic[Entry]):
    """One thread's entry, and what became of it."""

    __slots__ = ("done", "entry", "error", "lead", "new")

    def __init__(self, entry: Entry) -> None:
        self.entry = entry
        self.done = threading.Event()
        self.lead = False  # woken to write the batch, not with its answer
        self.new = False
        self.error: BaseException | None = None


class GroupCommit(Generic[Entry]):
    """Entries of this process's threads written by `write` (one transaction per call, returning
    whether each entry is new) under `gate`, as many at a time as are waiting."""

    def __init__(self, gate: WriteGate, write: Callable[[Sequence[Entry]], list[bool]]) -> None:
        self.gate = gate
        self.write = write
        self._mutex = threading.Lock()
        self._waiting: list[_Slot[Entry]] = []
        self._writing = False
        self._pid = os.getpid()

    def submit(self, entry: Entry) -> bool:
        """Write `entry` (with whatever else is waiting) and return whether it was new; raises
        what `write` or the gate raised for its batch."""
        slot = _Slot(entry)
        with self._mutex:
            if self._pid != os.getpid():  # forked: nobody here is writing
                self._pid, self._waiting, self._writing = os.getpid(), [], False
            self._waiting.append(slot)
            lead = not self._writing
            self._writing = True
        if not lead:
            slot.done.wait()
            lead = slot.lead
        if lead:
            self._write_waiting()
        if slot.error is not None:
            raise slot.error
        return slot.new

    def _write_waiting(self) -> None:
        """Under the gate, write every entry waiting by then in one batch and answer each; then
        hand the writing to a thread that came meanwhile."""
        batch: list[_Slot[Entry]] = []
        try:
            with self.gate.held():
                # Taken once the gate is ours: whatever came while it was not joins this batch.
                with self._mutex:
                    batch, self._waiting = self._waiting, []
                answers = self.write([slot.entry for slot in batch])
            if len(answers) != len(batch):
                raise RuntimeError(f"{len(answers)} answers for a batch of {len(batch)}")
            for slot, new in zip(batch, answers, strict=True):
                slot.new = new
        except BaseException as exc:  # each thread of the batch raises it, as if alone
            if not batch:  # the gate failed: this thread's own entry is still waiting
                with self._mutex:
                    batch, self._waiting = self._waiting, []
            for slot in batch:
                slot.error = exc
        finally:
            with self._mutex:
                following = self._waiting[0] if self._waiting else None
                self._writing = following is not None
            if following is not None:
                following.lead = True
                following.done.set()
            for slot in batch:
                slot.done.set()
