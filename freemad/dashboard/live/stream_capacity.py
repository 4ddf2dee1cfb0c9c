"""How many live streams (`/events`) the dashboard holds open at once, and the answer to one more.

An open stream holds one of its gunicorn worker's threads for as long as its page is open, so
streams left unchecked take every thread and `/health` and the pages wait behind them. Three
limits, checked when a stream is asked for:

- per client address (FREEMAD_DASHBOARD_MAX_STREAMS_PER_CLIENT, by default a quarter of the
  total): one browser, or one office behind one address, cannot take them all. Over it: 429.
- in all (FREEMAD_DASHBOARD_MAX_STREAMS, by default what the workers allow between them; 0 turns
  live updates off). Over it: 503.
- per worker: its threads less a quarter (at least one), which stay free for pages, the API and
  `/health`. Not a setting: it is what keeps them answering. Over it: 503, and soon, as another
  worker may have room.

Every refusal says why and carries Retry-After. The counts are shared by a server's workers
through file locks in one folder (FREEMAD_DASHBOARD_STREAMS_DIR, made by gunicorn's master): an
open stream holds an exclusive lock on one slot file of each pool (the server's, its client's)
and removes the file when it ends. The kernel lets go of a lock when its process ends however it
ends, so the streams of a worker that was killed stop counting at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import ipaddress
import os
import random
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from freemad.errors import UsageError

THREADS = "FREEMAD_DASHBOARD_THREADS"
WORKERS = "FREEMAD_WORKERS"
MAX_STREAMS = "FREEMAD_DASHBOARD_MAX_STREAMS"
MAX_PER_CLIENT = "FREEMAD_DASHBOARD_MAX_STREAMS_PER_CLIENT"
STREAMS_DIR = "FREEMAD_DASHBOARD_STREAMS_DIR"
TOP_WORKERS, TOP_THREADS = 64, 1024
TOP_STREAMS = TOP_WORKERS * TOP_THREADS
RETRY_LATER = 30  # seconds: Retry-After when the server or the client is at its cap
RETRY_SOON = 5  # seconds: Retry-After when only this worker is full (the next may land elsewhere)
N = TypeVar("N", int, float)
_RACES = 3  # times a slot is tried again when its holder removed it as it was opened


def count(env: Mapping[str, str], name: str, default: int, top: int) -> int:
    """A whole number from the environment for gunicorn's settings, which cannot say what is
    wrong: clamped to 1..top, the default when unset or not a number."""
    value = env.get(name, "").strip()
    if not value:
        return default
    try:
        return min(max(1, int(value)), top)
    except ValueError:
        return default


def workers(env: Mapping[str, str]) -> int:
    return count(env, WORKERS, 2, TOP_WORKERS)


def threads(env: Mapping[str, str]) -> int:
    return count(env, THREADS, 32, TOP_THREADS)


def per_worker(thread_count: int) -> int:
    """The streams one worker of `thread_count` threads holds at most: a quarter of its threads
    (at least one) stays for everything else."""
    return thread_count - max(1, thread_count // 4)


def number(
    env: Mapping[str, str],
    name: str,
    default: N,
    parse: Callable[[str], N],
    fits: Callable[[N], bool],
    what: str,
) -> N:
    """A number from the environment (`default` when unset), or a one-line error saying which
    variable must be `what`."""
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = parse(text)
    except ValueError:
        value = None
    if value is None or not fits(value):
        raise UsageError(f"{name} must be {what}, not {text!r}")
    return value


def setting(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """A whole number from `low` to `high` from the environment."""
    return number(
        env, name, default, int, lambda v: low <= v <= high, f"a whole number from {low} to {high}"
    )


@dataclass(frozen=True)
class Caps:
    total: int  # open streams of the whole server
    per_client: int  # of one client address
    per_worker: int  # of one worker process

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Caps:
        worker = per_worker(threads(env))
        total = setting(env, MAX_STREAMS, workers(env) * worker, 0, TOP_STREAMS)
        per_client = setting(env, MAX_PER_CLIENT, max(1, total // 4), 1, TOP_STREAMS)
        return cls(total, per_client, worker)

    def describe(self) -> str:
        if not self.total or not self.per_worker:
            return "live updates: off"
        return (
            f"live updates: at most {self.total} open pages, {self.per_client} per client "
            f"address, {self.per_worker} per worker"
        )


@dataclass(frozen=True)
class Refusal:
    status: int  # 429: this client has its share; 503: the server (or this worker) is full
    message: str
    retry_after: int  # seconds


def client_key(address: str | None) -> str:
    """Who a stream is counted against: the address, or for IPv6 its /64 (what one host or
    household is given; a client could otherwise pick a new address for every stream)."""
    try:
        ip = ipaddress.ip_address((address or "").strip())
    except ValueError:
        return address or "unknown"  # a Unix socket's peer: all one client (see --trusted-proxies)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class _Slot:
    """One slot file held with an exclusive lock; `release` removes it, then lets go."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    def release(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)  # still ours: the lock is held until the close
        os.close(self.fd)


def _take(folder: Path, pool: str, size: int) -> _Slot | None:
    """A free slot of `pool` (files `<pool>-0` to `<pool>-<size-1>`), or None if all are held."""
    start = random.randrange(size) if size else 0  # noqa: S311  # spreads takers, not a secret
    for n in range(size):
        path = folder / f"{pool}-{(start + n) % size}"
        for _ in range(_RACES):
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                break  # held by an open stream: the next slot
            try:
                current = os.stat(path, follow_symlinks=False).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fd).st_ino:
                return _Slot(fd, path)
            os.close(fd)  # its holder removed it as we opened it: open the file there now
    return None


class Ticket:
    """An open stream's places in the counts; `close` gives them back (once)."""

    def __init__(self, slots: list[_Slot], worker: threading.BoundedSemaphore) -> None:
        self._slots = slots
        self._worker = worker
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            slots, self._slots = self._slots, []
        if not slots:
            return
        for slot in slots:
            slot.release()
        self._worker.release()


class Streams:
    """The counts of open streams: this worker's in memory, the server's and each client's in
    `folder`, shared with the other workers (a private folder when none is given: one process)."""

    def __init__(self, caps: Caps, folder: Path | None = None) -> None:
        self.caps = caps
        self._folder = folder
        self._lock = threading.Lock()
        self._worker = threading.BoundedSemaphore(max(1, caps.per_worker))

    @property
    def folder(self) -> Path:
        """Made when a first stream is asked for: an app that never serves one (the one
        `freemad-dashboard` builds to check its settings) leaves nothing behind."""
        with self._lock:
            if self._folder is None:
                self._folder = Path(tempfile.mkdtemp(prefix="freemad-dashboard-streams-"))
                weakref.finalize(self, shutil.rmtree, self._folder, True)
            return self._folder

    def open(self, address: str | None) -> Ticket | Refusal:
        if not self.caps.total or not self.caps.per_worker:
            return Refusal(503, "live updates are off on this dashboard", RETRY_LATER)
        try:
            return self._open(address)
        except OSError as exc:  # the folder is gone or full: refuse rather than risk the threads
            return Refusal(503, f"open streams cannot be counted: {exc.strerror}", RETRY_LATER)

    def _open(self, address: str | None) -> Ticket | Refusal:
        caps, folder = self.caps, self.folder
        client = hashlib.sha256(client_key(address).encode()).hexdigest()[:32]
        held: list[_Slot] = []  # given back on the way out unless a ticket took them
        worker = False
        try:
            mine = _take(folder, f"client-{client}", caps.per_client)
            if mine is None:
                return Refusal(
                    429,
                    f"this address has {caps.per_client} live pages open, the most one client "
                    "may have (--max-streams-per-client): close one, or reload later",
                    RETRY_LATER,
                )
            held.append(mine)
            everyone = _take(folder, "all", caps.total)
            if everyone is None:
                return Refusal(
                    503,
                    f"the dashboard holds {caps.total} live pages open, its most "
                    "(--max-streams): pages still load, without live updates; try again later",
                    RETRY_LATER,
                )
            held.append(everyone)
            worker = self._worker.acquire(blocking=False)
            if not worker:
                return Refusal(
                    503,
                    f"this worker's {caps.per_worker} threads for live pages are in use (the "
                    "rest answer pages and /health): try again soon",
                    RETRY_SOON,
                )
            ticket = Ticket(held, self._worker)
            held, worker = [], False
            return ticket
        finally:
            for slot in held:
                slot.release()
            if worker:
                self._worker.release()
