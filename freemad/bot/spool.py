"""The acknowledgement spool: a delivery is appended to a file of its worker process before its
202, and a thread of that process commits what the file holds to the delivery log afterwards.

A 202 used to wait for a SQLite transaction (the delivery row, its four index entries, the job
row: nine or ten pages of write-ahead log) behind a file lock shared by every worker process.
That write, not the signature check or Flask, is what kept the bot at about half the throughput
of Flask and gunicorn answering an empty 202 (docs/benchmarks.md, "Webhook bot"). An append to
a file this process alone writes is one `write` system call, and its bytes are then as safe as a
SQLite commit in WAL mode with `synchronous=NORMAL` is: in the kernel's page cache, kept if the
process dies, lost only if the machine does.

The drain is the spool's own thread (`Spool.drain` is also called on a graceful exit): it reads
the frames appended since its last pass and hands them to `sink` (one transaction for all of
them: the delivery log's `record_many` with each job, under the web edge's write gate), then
empties the file once it has caught up. A frame is `length, CRC-32, payload`. A frame that
cannot be read back (only a `write` cut short leaves one, and no 202 answered it) stops the
reading there: the frames before it are committed, and the file is renamed `.bad` for a person.
A delivery the log refuses while the others of its batch go in (not an outage: a value it
cannot store) is written to a `.rejected` file for a person, so that it holds back no other.

A file outlives a process that dies (SIGKILL, out of memory). Each process holds an exclusive
`flock` on its own file for as long as it lives, and every drain thread adopts the files whose
lock it can take: it drains them into the log and removes them. A file is created under a name
that no adopter looks at, locked, and only then renamed into place, so no adopter can take a
file its owner is about to write. A frame drained twice (its process died after the commit and
before emptying its file) is harmless: the log records a delivery id once and a body once.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import logging
import os
import secrets
import struct
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

from freemad.bot import fast_json
from freemad.bot.ports import Delivery

log = logging.getLogger("freemad.bot.spool")

_FRAME = struct.Struct(">II")  # the payload's length, its CRC-32
_SUFFIX = ".spool"  # a process's file, named by its pid and a random part
_HIDDEN = ".new"  # the same before it is locked: no adopter looks at it
_BAD = ".bad"  # a file with frames that cannot be read, set aside for a person
_REJECTED = ".rejected"  # deliveries the log refused alone while others went in, for a person
LINGER = 0.05  # seconds from an append to the drain that commits it with those that followed
ADOPT_EVERY = 1.0  # seconds between looks for files left by processes that died
RETRY_FIRST, RETRY_MAX = 0.1, 5.0  # seconds, after a sink that failed: doubling up to the max

Sink = Callable[[Sequence[Delivery]], object]


class SpoolUnavailable(Exception):
    """The spool's file cannot be created or written (the state directory is gone, full or
    read-only): nothing was kept."""


def encode(delivery: Delivery) -> bytes:
    """One frame: the delivery's fields as a JSON line, then its body as sent."""
    head = fast_json.dumps(
        [
            delivery.delivery_id,
            delivery.event,
            delivery.action,
            delivery.installation_id,
            delivery.repo,
        ]
    )
    head += b"\n"  # JSON escapes every control character in a string: the head is one line
    checksum = zlib.crc32(delivery.body, zlib.crc32(head))
    return b"".join((_FRAME.pack(len(head) + len(delivery.body), checksum), head, delivery.body))


def decode(data: bytes) -> tuple[list[Delivery], int]:
    """The whole, intact frames at the start of `data`, and how many bytes they take. Reading
    stops at the first frame that is cut short or whose checksum fails: nothing after it was
    acknowledged (a frame is written whole before its 202)."""
    deliveries: list[Delivery] = []
    at = 0
    while len(data) - at >= _FRAME.size:
        length, crc = _FRAME.unpack_from(data, at)
        start, end = at + _FRAME.size, at + _FRAME.size + length
        if end > len(data):
            break
        payload = data[start:end]
        if zlib.crc32(payload) != crc:
            log.error("spool frame at byte %d fails its checksum; the rest is skipped", at)
            break
        head, _, body = payload.partition(b"\n")
        delivery_id, event, action, installation_id, repo = fast_json.loads(head)
        deliveries.append(Delivery(delivery_id, event, action, installation_id, repo, body))
        at = end
    return deliveries, at


class Spool:
    """Deliveries appended to this process's file in `directory`, committed by `sink` from a
    thread of this process (started with the first append after each fork)."""

    def __init__(
        self,
        directory: Path,
        sink: Sink,
        *,
        outage: tuple[type[BaseException], ...] = (Exception,),
    ) -> None:
        """`outage`: what `sink` raises when the log is out of reach (every frame is tried again
        later). Anything else it raises may be one frame's doing: see `_commit`."""
        self.directory = directory
        self.sink = sink
        self.outage = outage
        self._lock = threading.Lock()  # the file, its size and the drained offset
        self._drain_lock = threading.Lock()  # one drain at a time in this process
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._pid = 0
        self._fd = -1
        self._path: Path | None = None
        self._size = 0  # bytes appended to the file (this process alone appends)
        self._drained = 0  # bytes committed by the sink
        self._last_adopt = 0.0
        self._exit_hooked = False
        # A fork copies the locks as they are, perhaps held by a thread the child does not have.
        os.register_at_fork(after_in_child=functools.partial(_forked, weakref.ref(self)))

    # The request's side

    def append(self, delivery: Delivery) -> None:
        """Keep `delivery` in this process's file: when this returns, it is in the kernel and
        will reach the log even if this process dies now. Raises SpoolUnavailable."""
        frame = encode(delivery)
        with self._lock:
            if self._pid != os.getpid():
                self._open()
            try:
                view = memoryview(frame)
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError as exc:
                # A part written is a torn frame: cut it off so the next frame starts clean.
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self._size)
                raise SpoolUnavailable(str(exc)) from exc
            self._size += len(frame)
        self._wake.set()

    def start(self) -> None:
        """Open this process's file and start its thread now, which first adopts what dead
        processes left (the web edge calls it as each worker starts). Raises SpoolUnavailable."""
        with self._lock:
            if self._pid != os.getpid():
                self._open()

    def _open(self) -> None:
        """This process's file (after a fork, a file of its own), locked for its life, and the
        thread that drains it."""
        if self._fd >= 0:  # the parent's, inherited by a fork: the parent keeps its lock
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd, self._path = -1, None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            name = f"{os.getpid()}-{secrets.token_hex(6)}"
            hidden = self.directory / f".{name}{_HIDDEN}"
            fd = os.open(hidden, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                path = self.directory / f"{name}{_SUFFIX}"
                os.rename(hidden, path)
            except OSError:
                os.close(fd)
                raise
        except OSError as exc:
            raise SpoolUnavailable(str(exc)) from exc
        if not self._exit_hooked:  # once: a forked child inherits the hook
            atexit.register(self.close)  # gunicorn's graceful exit runs it (gunicorn_worker.py)
            self._exit_hooked = True
        self._pid, self._fd, self._path = os.getpid(), fd, path
        self._size = self._drained = 0
        self._last_adopt = 0.0
        self._wake, self._stop = threading.Event(), threading.Event()
        self._wake.set()  # the first pass adopts at once
        threading.Thread(target=self._run, name="ack-spool", daemon=True).start()

    # The drain's side

    def _run(self) -> None:
        wake, stop = self._wake, self._stop
        delay = 0.0
        while not stop.is_set():
            if delay:
                stop.wait(delay)  # after a failed commit: new appends do not hurry the next try
            elif wake.wait(ADOPT_EVERY):
                stop.wait(LINGER)  # let a batch gather: one transaction for what comes meanwhile
            wake.clear()
            if stop.is_set():
                break
            try:
                self.drain()
            except Exception:
                delay = min(RETRY_MAX, (delay * 2) or RETRY_FIRST)
                log.exception("could not commit the spool; trying again in %.1f s", delay)
            else:
                delay = 0.0

    def drain(self) -> None:
        """Commit what this process has appended, and whatever dead processes left; raises
        what the sink raised (the frames stay, and are tried again)."""
        with self._drain_lock:
            self._drain_locked()

    def _drain_locked(self) -> None:
        if self._pid == os.getpid():
            self._drain_own()
        now = time.monotonic()
        if now - self._last_adopt >= ADOPT_EVERY:
            self._last_adopt = now
            self.adopt()

    def _drain_own(self) -> None:
        with self._lock:
            fd, start, end = self._fd, self._drained, self._size
        if start == end:
            return
        data = os.pread(fd, end - start, start)
        deliveries, used = decode(data)
        if deliveries:
            self._commit(deliveries)
        with self._lock:
            self._drained += used
            if used < len(data):
                # Not whole frames: only a write that failed leaves that, and it is cut off at
                # once (`append`); no 202 answered it. Kept aside for a person, not dropped.
                log.error("unreadable spool frames at byte %d of %s", self._drained, self._path)
                self._set_aside()
            elif self._drained == self._size:
                os.ftruncate(self._fd, 0)  # caught up: the next append starts the file again
                self._size = self._drained = 0

    def _set_aside(self) -> None:
        """Rename this process's file to `.bad` and stop its thread (under `_lock`): the next
        append opens a new file, with a thread of its own."""
        assert self._path is not None
        with contextlib.suppress(OSError):
            os.rename(self._path, self._path.with_suffix(_BAD))
        os.close(self._fd)
        self._stop.set()
        self._pid, self._fd, self._path = 0, -1, None

    def adopt(self) -> int:
        """Drain and remove the files of processes that died; how many deliveries they held."""
        found = 0
        try:
            paths = sorted(self.directory.glob(f"*{_SUFFIX}"))
            paths += sorted(self.directory.glob(f".*{_HIDDEN}"))  # died before its first write
        except OSError:
            return 0
        for path in paths:
            if path == self._path and self._pid == os.getpid():
                continue
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue  # another process adopted it meanwhile
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # its process is alive
                deliveries, used = decode(_read_all(fd))
                if deliveries:
                    self._commit(deliveries)
                    log.info("adopted %d deliveries from %s", len(deliveries), path.name)
                found += len(deliveries)
                if used < os.fstat(fd).st_size:
                    log.error("unreadable spool frames at byte %d of %s", used, path.name)
                    with contextlib.suppress(OSError):
                        os.rename(path, path.with_suffix(_BAD))
                else:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
            finally:
                os.close(fd)
        return found

    def _commit(self, deliveries: Sequence[Delivery]) -> None:
        """`sink(deliveries)`. When it fails with something other than an outage, each delivery
        is tried alone, and those that fail alone while another succeeds are set aside in a
        `.rejected` file (the spool's own format: renamed to `.spool`, it is adopted again):
        one delivery the log cannot take must not hold back every one after it. When none
        succeeds alone, the failure is taken for the log's own, and raised: all are tried again
        later (those committed alone meanwhile are then duplicates, and queue nothing)."""
        try:
            self.sink(deliveries)
            return
        except self.outage:
            raise
        except Exception as exc:
            first = exc
        failed: list[tuple[Delivery, Exception]] = []
        for delivery in deliveries:
            try:
                self.sink([delivery])
            except self.outage:
                raise
            except Exception as exc:
                failed.append((delivery, exc))
        if len(failed) == len(deliveries):
            raise first
        if failed:
            self._reject(failed)

    def _reject(self, failed: Sequence[tuple[Delivery, Exception]]) -> None:
        path = self.directory / f"{os.getpid()}-{secrets.token_hex(6)}{_REJECTED}"
        # Private, as the spool's own files are: the bodies are the repositories' events.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as kept:
            kept.write(b"".join(encode(delivery) for delivery, _ in failed))
        for delivery, exc in failed:
            log.error(
                "delivery %s cannot be recorded (%s); kept in %s",
                delivery.delivery_id,
                type(exc).__name__,
                path.name,
            )

    def close(self) -> None:
        """Commit everything this process appended and stop its thread (a graceful exit). If the
        commit fails, the file stays, and the next process to adopt it commits it."""
        with self._lock:
            if self._pid != os.getpid():
                return
        self._stop.set()
        self._wake.set()
        with self._drain_lock:
            try:
                self._drain_locked()
            except Exception:
                log.exception("could not commit the spool at exit; another process will")
            with self._lock:
                if self._path is not None and self._size == 0:
                    with contextlib.suppress(OSError):
                        self._path.unlink()
                if self._fd >= 0:
                    os.close(self._fd)  # lets go of the lock: the file is anyone's to adopt
                self._pid, self._fd, self._path = 0, -1, None


def _forked(spool: weakref.ref[Spool]) -> None:
    """In a forked child: locks of its own (append opens a file of its own)."""
    made = spool()
    if made is not None:
        made._lock, made._drain_lock = threading.Lock(), threading.Lock()


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)
