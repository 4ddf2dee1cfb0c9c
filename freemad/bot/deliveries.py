"""The delivery log: every webhook delivery the bot accepted, keyed by GitHub's delivery id (SQLite).

It is what makes a redelivery harmless: `record` inserts a delivery once, atomically, so the
same `X-GitHub-Delivery` is handed to an executor at most once, across gunicorn's worker
processes and across restarts. A replay is harmless too: the same body under another delivery id
is refused as well, by the SHA-256 of the body (the signature covers the body only), which is
unique in the log.

One exception, on purpose: a delivery that `failed` while `attempts` is still 0 never reached
a worker (the executor refused it at submission, or a worker gave it up before starting it), so
a redelivery of it is accepted again. Workers mark a delivery `running` with `attempt=True`
before doing anything, which is what closes that door once work has begun.

`unfinished` lists what a worker may still have to run (`queued`, `running`, or `failed` after
an attempt) however old it is, through an index on the status: the recovery sweep reads it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from freemad.bot.checkpoint import Checkpointer, no_autocheckpoint
from freemad.bot.ports import (
    Delivery,
    DeliveryLogUnavailable,
    DeliveryRecord,
    body_digest,
    check_status,
)
from freemad.store.schema import wal

BUSY_TIMEOUT_MS = 5000

# body_sha256: the SHA-256 of the body, unique (a replay is a duplicate). NULL only where an
# older version wrote the row, or a row it wrote earlier has the same body.
_TABLE = """
CREATE TABLE IF NOT EXISTS deliveries (
    delivery_id TEXT PRIMARY KEY,
    event TEXT NOT NULL,
    action TEXT,
    installation_id INTEGER,
    repo TEXT,
    body BLOB NOT NULL,
    received_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    detail TEXT NOT NULL DEFAULT '',
    body_sha256 TEXT
);
"""
_DIGEST_INDEX = (
    "CREATE UNIQUE INDEX IF NOT EXISTS deliveries_body_sha256 ON deliveries (body_sha256)"
)
_INDEXES = f"""
CREATE INDEX IF NOT EXISTS deliveries_received_at ON deliveries (received_at);
CREATE INDEX IF NOT EXISTS deliveries_status ON deliveries (status, attempts);
{_DIGEST_INDEX};
"""

# Insert a new delivery, or take back one whose submission failed before any worker attempt.
_RECORD = """
INSERT INTO deliveries (delivery_id, event, action, installation_id, repo, body,
                        received_at, updated_at, status, body_sha256)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (delivery_id) DO UPDATE SET
    body = excluded.body, received_at = excluded.received_at,
    updated_at = excluded.updated_at, status = excluded.status, detail = '',
    body_sha256 = excluded.body_sha256
WHERE deliveries.status = 'failed' AND deliveries.attempts = 0
"""

# Whether _RECORD would change nothing: the id is kept (and not taken back), or the body is
# kept under another id.
_KNOWN = """
SELECT 1 FROM deliveries
WHERE delivery_id = ? AND NOT (status = 'failed' AND attempts = 0)
UNION ALL
SELECT 1 FROM deliveries WHERE body_sha256 = ? AND delivery_id != ?
LIMIT 1
"""

# What a worker may still have to run: the rule of `unfinished` (and of the Redis scripts).
_UNFINISHED = """
SELECT delivery_id, event, action, installation_id, repo, received_at, updated_at, status,
       attempts, detail
FROM deliveries
WHERE status IN ('queued', 'running') OR (status = 'failed' AND attempts > 0)
ORDER BY received_at
"""


class DeliveryLog:
    """The SQLite (WAL) delivery log at `path`; safe to share between threads and processes.

    Each thread of each process opens its own connection on first use (gunicorn forks its
    workers, and a SQLite connection must not cross a fork); writers wait on each other
    through `busy_timeout` rather than failing. A file that cannot be opened, read or written
    raises `DeliveryLogUnavailable`.

    With `background_checkpoint` (the web edge), commits never checkpoint the write-ahead log
    themselves: a thread does it a moment later, off the acknowledgement path (checkpoint.py).
    """

    local_file = True  # writers on this host: the web edge lines them up on its own lock

    def __init__(self, path: Path | str, *, background_checkpoint: bool = False) -> None:
        self.path = Path(path)
        self._checkpointer = Checkpointer(self.path) if background_checkpoint else None
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[tuple[int, sqlite3.Connection]] = []

    def record(
        self,
        delivery: Delivery,
        *,
        status: str = "queued",
        job: tuple[str, tuple[object, ...]] | None = None,
    ) -> bool:
        """Record `delivery`; True if it is new (or its earlier submission failed), else False.

        A redelivery of a delivery already recorded changes nothing and returns False, and so
        does a replay: the same body under another delivery id.

        `job`, a statement and its parameters (a queue whose table is in this file:
        `queue.job_row`), runs in the same transaction when the delivery is new: the delivery
        and its job are committed together, or neither is.
        """
        return self.record_many([(delivery, job)], status=status)[0]

    def record_many(
        self,
        entries: Sequence[tuple[Delivery, tuple[str, tuple[object, ...]] | None]],
        *,
        status: str = "queued",
    ) -> list[bool]:
        """`record` for each (delivery, job) in `entries`, all in one transaction: whether each
        is new. One commit for several acknowledgements (the web edge's spool): every
        one of them is on disk when this returns, or none is and it raises."""
        check_status(status)
        now = time.time()
        with self._write() as db:
            return [self._insert(db, delivery, status, job, now) for delivery, job in entries]

    @staticmethod
    def _insert(
        db: sqlite3.Connection,
        delivery: Delivery,
        status: str,
        job: tuple[str, tuple[object, ...]] | None,
        now: float,
    ) -> bool:
        digest = body_digest(delivery.body)
        try:
            cursor = db.execute(
                _RECORD,
                (
                    delivery.delivery_id,
                    delivery.event,
                    delivery.action,
                    delivery.installation_id,
                    delivery.repo,
                    delivery.body,
                    now,
                    now,
                    status,
                    digest,
                ),
            )
        except sqlite3.IntegrityError:
            # The unique index on body_sha256: another delivery has this body. SQLite undid
            # this statement alone; the transaction (and the rest of a batch) goes on.
            other = db.execute(
                "SELECT 1 FROM deliveries WHERE body_sha256 = ? AND delivery_id != ?",
                (digest, delivery.delivery_id),
            ).fetchone()
            if other is None:
                raise
            return False
        if cursor.rowcount != 1:
            return False
        if job is not None:
            db.execute(*job)
        return True

    def known(self, delivery: Delivery) -> bool:
        """Whether `record` would find `delivery` a duplicate now: its id recorded (and not
        failed before any attempt), or its body recorded under another id. A read only: the web
        edge answers a redelivery before appending it to its spool (spool.py)."""
        row = self._one(
            _KNOWN, (delivery.delivery_id, body_digest(delivery.body), delivery.delivery_id)
        )
        return row is not None

    def get(self, delivery_id: str) -> Delivery | None:
        row = self._one(
            "SELECT delivery_id, event, action, installation_id, repo, body"
            " FROM deliveries WHERE delivery_id = ?",
            (delivery_id,),
        )
        if row is None:
            return None
        return Delivery(
            delivery_id=row[0],
            event=row[1],
            action=row[2],
            installation_id=row[3],
            repo=row[4],
            body=bytes(row[5]),
        )

    def mark(
        self, delivery_id: str, status: str, detail: str = "", *, attempt: bool = False
    ) -> None:
        """Set the delivery's status (and detail); `attempt` counts one more try at its work."""
        check_status(status)
        with self._write() as db:
            db.execute(
                "UPDATE deliveries SET status = ?, detail = ?, updated_at = ?,"
                " attempts = attempts + ? WHERE delivery_id = ?",
                (status, detail, time.time(), int(attempt), delivery_id),
            )

    def status(self, delivery_id: str) -> str | None:
        row = self._one("SELECT status FROM deliveries WHERE delivery_id = ?", (delivery_id,))
        return None if row is None else str(row[0])

    def recent(self, limit: int = 50) -> list[DeliveryRecord]:
        """The latest `limit` deliveries, newest first."""
        rows = self._all(
            "SELECT delivery_id, event, action, installation_id, repo, received_at,"
            " updated_at, status, attempts, detail FROM deliveries"
            " ORDER BY received_at DESC LIMIT ?",
            (limit,),
        )
        return [DeliveryRecord(*row) for row in rows]

    def unfinished(self) -> list[DeliveryRecord]:
        """Every delivery a worker may still have to run, however old, oldest first: `queued`,
        `running`, or `failed` after an attempt (the index on the status finds them)."""
        return [DeliveryRecord(*row) for row in self._all(_UNFINISHED, ())]

    def counts(self, since: float) -> dict[str, int]:
        """How many deliveries received since `since` (Unix time) are in each status."""
        rows = self._all(
            "SELECT status, COUNT(*) FROM deliveries WHERE received_at >= ? GROUP BY status",
            (since,),
        )
        return {str(status): int(count) for status, count in rows}

    def close(self) -> None:
        """Close every connection this process opened (from any thread)."""
        with self._lock:
            mine = [conn for pid, conn in self._connections if pid == os.getpid()]
            self._connections = []
        for conn in mine:
            conn.close()
        self._local = threading.local()
        if self._checkpointer is not None:
            self._checkpointer.stop()

    def _one(self, sql: str, params: tuple[object, ...]) -> tuple[Any, ...] | None:
        with self._unavailable():
            row: tuple[Any, ...] | None = self._db().execute(sql, params).fetchone()
        return row

    def _all(self, sql: str, params: tuple[object, ...]) -> list[tuple[Any, ...]]:
        with self._unavailable():
            return self._db().execute(sql, params).fetchall()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._unavailable():
            db = self._db()
            # BEGIN IMMEDIATE takes the write lock up front, so busy_timeout covers the whole write.
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.rollback()
                raise
            db.commit()
        if self._checkpointer is not None:
            self._checkpointer.nudge()

    @contextmanager
    def _unavailable(self) -> Iterator[None]:
        """SQLite's and the file system's failures, as the one error of an unreachable log."""
        try:
            yield
        except (sqlite3.Error, OSError) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise DeliveryLogUnavailable(
                f"the delivery log {self.path} is unavailable: {reason[:200]}"
            ) from exc

    def _db(self) -> sqlite3.Connection:
        pid = os.getpid()
        cached: tuple[int, sqlite3.Connection] | None = getattr(self._local, "conn", None)
        if cached is not None and cached[0] == pid:
            return cached[1]
        # Opened by the parent before a fork: leave it alone (closing it here could disturb it).
        conn = self._open()
        self._local.conn = (pid, conn)
        with self._lock:
            self._connections.append((pid, conn))
        return conn

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: we issue BEGIN ourselves; check_same_thread=False only so that
        # close() may run from another thread: each connection is otherwise used by one thread.
        conn = sqlite3.connect(
            self.path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            wal(conn)
            # WAL + NORMAL survives a crash of the process; a power cut may lose the last
            # deliveries, which GitHub can redeliver.
            conn.execute("PRAGMA synchronous = NORMAL")
            if self._checkpointer is not None:
                no_autocheckpoint(conn)
            conn.executescript(_TABLE)
            _add_body_digests(conn)
            conn.executescript(_INDEXES)
        except BaseException:
            conn.close()
            raise
        return conn


def _add_body_digests(conn: sqlite3.Connection) -> None:
    """Give a log an older version wrote its body_sha256 column, filled in, once.

    Under the write lock, so two processes opening the same old log do not both alter it. Rows
    that share a body keep one digest between them (a replay of it is refused all the same).
    """
    if "body_sha256" in _columns(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if "body_sha256" not in _columns(conn):  # another process may have just done it
            conn.execute("ALTER TABLE deliveries ADD COLUMN body_sha256 TEXT")
            conn.execute(_DIGEST_INDEX)
            conn.create_function("freemad_body_digest", 1, _digest_or_none, deterministic=True)
            conn.execute("UPDATE OR IGNORE deliveries SET body_sha256 = freemad_body_digest(body)")
    except BaseException:
        conn.rollback()
        raise
    conn.commit()


def _columns(conn: sqlite3.Connection) -> set[str]:
    return {str(row[1]) for row in conn.execute("PRAGMA table_info(deliveries)")}


def _digest_or_none(body: object) -> str | None:
    return body_digest(body) if isinstance(body, bytes) else None
