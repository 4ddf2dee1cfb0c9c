"""The delivery log: every webhook delivery the bot accepted, keyed by GitHub's delivery id (SQLite).

It is what makes a redelivery harmless: `record` inserts a delivery once, atomically, so the
same `X-GitHub-Delivery` is handed to an executor at most once, across gunicorn's worker
processes and across restarts.

One exception, on purpose: a delivery that `failed` while `attempts` is still 0 never reached
a worker (the executor refused it at submission, or a worker gave it up before starting it), so
a redelivery of it is accepted again. Workers mark a delivery `running` with `attempt=True`
before doing anything, which is what closes that door once work has begun.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from freemad.bot.base import Delivery
from freemad.bot.claims import wal

STATUSES = ("queued", "running", "done", "failed", "parked", "ignored")
BUSY_TIMEOUT_MS = 5000

_SCHEMA = """
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
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS deliveries_received_at ON deliveries (received_at);
"""

# Insert a new delivery, or take back one whose submission failed before any worker attempt.
_RECORD = """
INSERT INTO deliveries (delivery_id, event, action, installation_id, repo, body,
                        received_at, updated_at, status)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (delivery_id) DO UPDATE SET
    body = excluded.body, received_at = excluded.received_at,
    updated_at = excluded.updated_at, status = excluded.status, detail = ''
WHERE deliveries.status = 'failed' AND deliveries.attempts = 0
"""


@dataclass(frozen=True)
class DeliveryRecord:
    """A row of the log without its body: what `recent` lists."""

    delivery_id: str
    event: str
    action: str | None
    installation_id: int | None
    repo: str | None
    received_at: float
    updated_at: float
    status: str
    attempts: int
    detail: str


class DeliveryLog:
    """The SQLite (WAL) delivery log at `path`; safe to share between threads and processes.

    Each thread of each process opens its own connection on first use (gunicorn forks its
    workers, and a SQLite connection must not cross a fork); writers wait on each other
    through `busy_timeout` rather than failing.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[tuple[int, sqlite3.Connection]] = []

    def record(self, delivery: Delivery, *, status: str = "queued") -> bool:
        """Record `delivery`; True if it is new (or its earlier submission failed), else False.

        A redelivery of a delivery already recorded changes nothing and returns False.
        """
        _check_status(status)
        now = time.time()
        with self._write() as db:
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
                ),
            )
            return cursor.rowcount == 1

    def get(self, delivery_id: str) -> Delivery | None:
        row = (
            self._db()
            .execute(
                "SELECT delivery_id, event, action, installation_id, repo, body"
                " FROM deliveries WHERE delivery_id = ?",
                (delivery_id,),
            )
            .fetchone()
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
        _check_status(status)
        with self._write() as db:
            db.execute(
                "UPDATE deliveries SET status = ?, detail = ?, updated_at = ?,"
                " attempts = attempts + ? WHERE delivery_id = ?",
                (status, detail, time.time(), int(attempt), delivery_id),
            )

    def status(self, delivery_id: str) -> str | None:
        row = (
            self._db()
            .execute("SELECT status FROM deliveries WHERE delivery_id = ?", (delivery_id,))
            .fetchone()
        )
        return None if row is None else str(row[0])

    def recent(self, limit: int = 50) -> list[DeliveryRecord]:
        """The latest `limit` deliveries, newest first."""
        rows = (
            self._db()
            .execute(
                "SELECT delivery_id, event, action, installation_id, repo, received_at,"
                " updated_at, status, attempts, detail FROM deliveries"
                " ORDER BY received_at DESC LIMIT ?",
                (limit,),
            )
            .fetchall()
        )
        return [DeliveryRecord(*row) for row in rows]

    def counts(self, since: float) -> dict[str, int]:
        """How many deliveries received since `since` (Unix time) are in each status."""
        rows = (
            self._db()
            .execute(
                "SELECT status, COUNT(*) FROM deliveries WHERE received_at >= ? GROUP BY status",
                (since,),
            )
            .fetchall()
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

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        db = self._db()
        # BEGIN IMMEDIATE takes the write lock up front, so busy_timeout covers the whole write.
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.rollback()
            raise
        db.commit()

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
            conn.executescript(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn


def _check_status(status: str) -> None:
    if status not in STATUSES:
        raise ValueError(f"unknown delivery status {status!r}; expected one of {STATUSES}")
