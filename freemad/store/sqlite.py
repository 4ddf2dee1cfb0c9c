"""SqliteStore: the Store port on one SQLite file (WAL) plus a folder of content-addressed artifacts.

Several processes may use one store file at once (a task running, a `/freemad answer` being
recorded): writes take the database lock with BEGIN IMMEDIATE and wait up to `busy_timeout`
seconds for it, and each append reads the run's last seq inside that transaction, so writers
never collide or skip. One store object holds one connection, guarded by a lock, so it may be
shared between threads; calls from different threads run one at a time.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from freemad.store import artifacts as files
from freemad.store.rows import (
    SELECT_ARTIFACTS,
    SELECT_EVENTS,
    SELECT_RUNS,
    artifact_ref,
    run_row,
    stored_event,
)
from freemad.store.schema import connect
from freemad.store.store_port import (
    RUN_ID,
    ArtifactRef,
    RunExists,
    RunRow,
    StoredEvent,
    StoreError,
    UnknownRun,
)


class SqliteStore:
    """The local store. Use as a context manager, or call close()."""

    def __init__(
        self,
        path: str | Path,
        artifacts_dir: str | Path | None = None,
        *,
        busy_timeout: float = 30.0,
        synchronous: str = "FULL",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        folder = self.path.parent / "artifacts" if artifacts_dir is None else Path(artifacts_dir)
        self.artifacts_dir = folder.absolute()
        self._clock = clock
        self._fsync_files = synchronous == "FULL"
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = connect(
            self.path, busy_timeout=busy_timeout, synchronous=synchronous
        )
        try:
            self.artifacts_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.close()
            raise StoreError(f"cannot create artifacts folder {self.artifacts_dir}: {exc}") from exc

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # Runs

    def create_run(self, run_id: str, kind: str, summary: dict[str, Any]) -> RunRow:
        if not RUN_ID.fullmatch(run_id):  # it names a folder of artifacts
            raise StoreError(
                f"run id {run_id!r} is not allowed: use 1 to 128 letters, digits, '.', '_' or '-',"
                " starting with a letter or digit"
            )
        now = self._clock()
        text = _json(summary, f"summary of run {run_id}")
        with self._transaction("create run") as conn:
            try:
                conn.execute(
                    "INSERT INTO runs (run_id, kind, status, created_at, updated_at, summary)"
                    " VALUES (?, ?, 'created', ?, ?, ?)",
                    (run_id, kind, now, now, text),
                )
            except sqlite3.IntegrityError as exc:
                raise RunExists(f"run {run_id} already exists in {self.path}") from exc
        return RunRow(run_id, kind, "created", now, now, json.loads(text))

    def run(self, run_id: str) -> RunRow | None:
        rows = self._query(SELECT_RUNS + " WHERE run_id = ?", (run_id,))
        return run_row(rows[0]) if rows else None

    def runs(self, kind: str | None = None, limit: int | None = None) -> list[RunRow]:
        """Newest first by updated_at (which every append and update moves to now)."""
        newest = " ORDER BY updated_at DESC, run_id DESC LIMIT ?"
        count = -1 if limit is None else limit
        if kind is None:
            rows = self._query(SELECT_RUNS + newest, (count,))
        else:
            rows = self._query(SELECT_RUNS + " WHERE kind = ?" + newest, (kind, count))
        return [run_row(row) for row in rows]

    def update_run(
        self,
        run_id: str,
        *,
        status: str | None = None,
        summary: dict[str, Any] | None = None,
    ) -> None:
        """Set the listed status and/or replace the summary (no merge); updated_at becomes now."""
        text = None if summary is None else _json(summary, f"summary of run {run_id}")
        with self._transaction("update run") as conn:
            updated = conn.execute(
                "UPDATE runs SET updated_at = ?, status = COALESCE(?, status),"
                " summary = COALESCE(?, summary) WHERE run_id = ?",
                (self._clock(), status, text, run_id),
            )
            if updated.rowcount == 0:
                raise UnknownRun(f"unknown run {run_id} in {self.path}")

    # Events

    def append(self, run_id: str, kind: str, data: dict[str, Any]) -> StoredEvent:
        """Append one event; it is committed (and fsynced, with synchronous=FULL) on return."""
        return self.append_many(run_id, [(kind, data)])[0]

    def append_many(
        self, run_id: str, events: list[tuple[str, dict[str, Any]]]
    ) -> list[StoredEvent]:
        """Append events in one transaction: all of them get consecutive seqs, or none is stored."""
        texts = [(kind, _json(data, f"{kind} event data")) for kind, data in events]
        with self._transaction("append") as conn:
            now = self._clock()
            touched = conn.execute("UPDATE runs SET updated_at = ? WHERE run_id = ?", (now, run_id))
            if touched.rowcount == 0:
                raise UnknownRun(f"unknown run {run_id} in {self.path}")
            last = conn.execute(
                "SELECT seq FROM events WHERE run_id = ? ORDER BY seq DESC LIMIT 1", (run_id,)
            ).fetchone()
            first = 0 if last is None else last[0] + 1
            rows = [(run_id, first + i, now, kind, text) for i, (kind, text) in enumerate(texts)]
            conn.executemany(
                "INSERT INTO events (run_id, seq, time, kind, data) VALUES (?, ?, ?, ?, ?)", rows
            )
        return [StoredEvent(r, seq, t, kind, json.loads(text)) for r, seq, t, kind, text in rows]

    def events(
        self, run_id: str, after_seq: int = -1, kinds: Collection[str] | None = None
    ) -> list[StoredEvent]:
        """A run's events with seq > after_seq, in seq order; only `kinds` when given."""
        sql = SELECT_EVENTS
        params: list[Any] = [run_id, after_seq]
        if kinds is not None:
            wanted = [kinds] if isinstance(kinds, str) else sorted(set(kinds))
            if not wanted:
                return []
            sql += f" AND kind IN ({', '.join('?' * len(wanted))})"  # only "?" placeholders
            params.extend(wanted)
        rows = self._query(sql + " ORDER BY seq", params)
        return [stored_event(run_id, row) for row in rows]

    # Artifacts

    def put_artifact(self, run_id: str, name: str, content: bytes) -> ArtifactRef:
        """Store `content` for the run; the same (run, name, content) again returns the first ref.

        The file is written (atomically) before the row is committed, so after a crash a row
        always has its file; a file without a row is harmless and reused by the next put.
        """
        if self.run(run_id) is None:
            raise UnknownRun(f"unknown run {run_id} in {self.path}")
        sha256 = files.sha256_hex(content)
        relative = files.relative_path(run_id, sha256)
        files.ensure_file(self.artifacts_dir / relative, content, sha256, fsync=self._fsync_files)
        ident = files.artifact_id(run_id, name, sha256)
        row = (ident, run_id, name, sha256, len(content), relative, self._clock())
        with self._transaction("put artifact") as conn:
            conn.execute(
                "INSERT INTO artifacts (artifact_id, run_id, name, sha256, size, path, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                row,
            )
            stored = conn.execute(SELECT_ARTIFACTS + " WHERE artifact_id = ?", (ident,)).fetchone()
        return self._artifact_ref(stored)

    def artifact(self, artifact_id: str) -> ArtifactRef | None:
        rows = self._query(SELECT_ARTIFACTS + " WHERE artifact_id = ?", (artifact_id,))
        return self._artifact_ref(rows[0]) if rows else None

    def read_artifact(self, artifact_id: str) -> bytes:
        """The artifact's bytes; ArtifactCorrupt if its file is gone or no longer matches."""
        ref = self.artifact(artifact_id)
        if ref is None:
            raise StoreError(f"unknown artifact {artifact_id} in {self.path}")
        return files.read_verified(Path(ref.path), ref.sha256)

    def artifacts(self, run_id: str) -> list[ArtifactRef]:
        sql = SELECT_ARTIFACTS + " WHERE run_id = ? ORDER BY created_at, name"
        return [self._artifact_ref(row) for row in self._query(sql, (run_id,))]

    # Plumbing

    def _artifact_ref(self, row: tuple[Any, ...]) -> ArtifactRef:
        return artifact_ref(row, self.artifacts_dir)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"store {self.path} is closed")
        return self._conn

    def _query(self, sql: str, params: Collection[Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._connection().execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as exc:
                raise self._failure("read", exc) from exc

    @contextmanager
    def _transaction(self, action: str) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT under the lock; ROLLBACK on any error, sqlite3's translated."""
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._failure(action, exc) from exc
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._failure(action, exc) from exc
                raise

    def _failure(self, action: str, exc: sqlite3.Error) -> StoreError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return StoreError(
                f"store {self.path} stayed locked by another process; {action} gave up",
                hint="try again, or raise busy_timeout",
            )
        return StoreError(f"store {self.path}: {action} failed: {text}")


def _json(value: dict[str, Any], what: str) -> str:
    """Compact JSON text; NaN and infinities are refused, since they are not JSON."""
    if not isinstance(value, dict):
        raise StoreError(f"{what} must be a JSON object (dict), not {type(value).__name__}")
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serialisable: {exc}") from exc
