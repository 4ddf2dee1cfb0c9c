"""The claims in SQLite (`state_dir/claims.db`): leases on deliveries, and the journal of their
GitHub writes, for workers on one host.

A job runs a delivery only while it holds the delivery's claim: a lease, renewed while the job
works, that lapses when renewals stop, or at once when the holder's process is certainly gone.
The same file journals each delivery's comments, pull requests and dispatches in order of
posting (`journal.JournalForge` writes through it). `redis_stores.RedisClaims` keeps the same rules
in Redis, for workers on several hosts.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from freemad.bot.ports import LEASE_SECONDS, Effect, Owner, holder_gone
from freemad.store.schema import wal

_SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
    delivery_id TEXT PRIMARY KEY, owner TEXT, host TEXT, pid INTEGER,
    expires REAL NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS effects (
    delivery_id TEXT NOT NULL, kind TEXT NOT NULL, seq INTEGER NOT NULL, repo TEXT NOT NULL,
    number INTEGER NOT NULL, ref INTEGER NOT NULL, url TEXT NOT NULL,
    PRIMARY KEY (delivery_id, kind, seq));
"""
_SELECT_CLAIM = "SELECT owner, host, pid, expires, attempts FROM claims WHERE delivery_id = ?"


class Claims:
    """Leases on deliveries, and the journal of what each delivery's jobs posted (SQLite, WAL)."""

    def __init__(self, path: Path | str, *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self._clock = clock
        self._lock = threading.Lock()
        self._conn: tuple[int, sqlite3.Connection] | None = None

    @contextmanager
    def _db(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None or self._conn[0] != os.getpid():  # never reuse across a fork
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(
                    self.path, timeout=30, isolation_level=None, check_same_thread=False
                )
                wal(conn)
                conn.executescript(_SCHEMA)
                self._conn = (os.getpid(), conn)
            conn = self._conn[1]
            if not write:
                yield conn
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def claim(self, delivery_id: str, owner: Owner, lease: float = LEASE_SECONDS) -> int | None:
        """Take the delivery's claim: the attempt number (from 1), or None when it is held."""
        now = self._clock()
        with self._db(write=True) as db:
            row = db.execute(_SELECT_CLAIM, (delivery_id,)).fetchone()
            if row is not None and _live(row, now):
                return None
            attempt = (row[4] if row is not None else 0) + 1
            db.execute(
                "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?)",
                (delivery_id, str(owner), owner.host, owner.pid, now + lease, attempt),
            )
            return int(attempt)

    def renew(self, delivery_id: str, owner: Owner, lease: float = LEASE_SECONDS) -> bool:
        with self._db(write=True) as db:
            cursor = db.execute(
                "UPDATE claims SET expires = ? WHERE delivery_id = ? AND owner = ?",
                (self._clock() + lease, delivery_id, str(owner)),
            )
            return cursor.rowcount == 1

    def holds(self, delivery_id: str, owner: Owner) -> bool:
        with self._db() as db:
            row = db.execute(_SELECT_CLAIM, (delivery_id,)).fetchone()
        return row is not None and row[0] == str(owner) and row[3] > self._clock()

    def live(self, delivery_id: str) -> bool:
        """Whether someone holds the delivery's claim and may still be working on it."""
        with self._db() as db:
            row = db.execute(_SELECT_CLAIM, (delivery_id,)).fetchone()
        return row is not None and _live(row, self._clock())

    def release(self, delivery_id: str, owner: Owner) -> None:
        with self._db(write=True) as db:
            db.execute(
                "UPDATE claims SET owner = NULL, host = NULL, pid = NULL, expires = 0"
                " WHERE delivery_id = ? AND owner = ?",
                (delivery_id, str(owner)),
            )

    def effect(self, delivery_id: str, kind: str, seq: int) -> Effect | None:
        with self._db() as db:
            row = db.execute(
                "SELECT repo, number, ref, url FROM effects"
                " WHERE delivery_id = ? AND kind = ? AND seq = ?",
                (delivery_id, kind, seq),
            ).fetchone()
        return None if row is None else Effect(str(row[0]), int(row[1]), int(row[2]), str(row[3]))

    def record(self, delivery_id: str, kind: str, seq: int, effect: Effect) -> None:
        with self._db(write=True) as db:
            db.execute(
                "INSERT OR REPLACE INTO effects VALUES (?, ?, ?, ?, ?, ?, ?)",
                (delivery_id, kind, seq, effect.repo, effect.number, effect.ref, effect.url),
            )

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._conn[0] == os.getpid():
                self._conn[1].close()
            self._conn = None


def _live(row: tuple[Any, ...], now: float) -> bool:
    owner, host, pid, expires = row[0], row[1], row[2], row[3]
    return owner is not None and expires > now and not holder_gone(str(host), int(pid))
