"""StoreReader: a store opened read-only, for whoever only looks (the dashboards).

SQLite opens the file with `mode=ro`, so a reader never creates, migrates or locks a store a
runtime is writing, and a missing file stays missing. Each call opens its own short connection:
a long-lived server sees every commit, and holds nothing between requests. A JSON column that is
not an object (a damaged file; the store writes none) reads as {}, so the rest still shows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freemad.store.rows import (
    SELECT_ARTIFACTS,
    SELECT_EVENTS,
    SELECT_RUNS,
    artifact_ref,
    run_row,
    stored_event,
)
from freemad.store.store_port import ArtifactRef, RunRow, StoredEvent, StoreError, StoreUnreadable

BUSY_TIMEOUT = 10.0  # seconds a read waits for a writer's lock


@dataclass(frozen=True, slots=True)
class RunListing:
    """A run's row, and the seq of its last event (None before its first)."""

    row: RunRow
    last_seq: int | None


@dataclass(frozen=True, slots=True)
class Appended:
    """An event appended to a run: when, to which run (of which kind), its seq and its kind."""

    time: float
    run_kind: str
    run_id: str
    seq: int
    kind: str


class StoreReader:
    """The store at `path`, read-only; its artifacts in `artifacts_dir` (else `artifacts/` beside it).

    Opening fails with a StoreError naming the store; a read that fails after is a
    StoreUnreadable, in SQLite's words.
    """

    def __init__(self, path: str | Path, artifacts_dir: str | Path | None = None) -> None:
        self.path = Path(path)
        folder = self.path.parent / "artifacts" if artifacts_dir is None else Path(artifacts_dir)
        self.artifacts_dir = folder.absolute()

    def check(self) -> None:
        """StoreError unless the file opens and has the store's run table."""
        with self._connect() as conn:
            try:
                conn.execute("SELECT run_id, kind, status FROM runs LIMIT 1").fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path} is not a FREE-MAD store: {exc}") from None

    def runs(self, kinds: Collection[str]) -> list[RunListing]:
        """The runs of `kinds`, each with the seq of its last event, in no particular order."""
        rows = self._query(
            "SELECT r.run_id, r.kind, r.status, r.created_at, r.updated_at, r.summary,"  # noqa: S608 - the IN list is "?" placeholders
            " (SELECT MAX(seq) FROM events e WHERE e.run_id = r.run_id)"
            f" FROM runs r WHERE r.kind IN ({_marks(kinds)})",
            tuple(kinds),
        )
        return [RunListing(run_row(row, lenient=True), row[6]) for row in rows]

    def run(self, run_id: str) -> RunRow | None:
        """The run's row, None when the store holds no such run."""
        rows = self._query(SELECT_RUNS + " WHERE run_id = ?", (run_id,))
        return run_row(rows[0], lenient=True) if rows else None

    def events(self, run_id: str) -> list[StoredEvent]:
        """Every event of the run, in seq order."""
        rows = self._query(SELECT_EVENTS + " ORDER BY seq", (run_id, -1))
        return [stored_event(run_id, row, lenient=True) for row in rows]

    def artifacts(self, run_id: str) -> list[ArtifactRef]:
        """The run's artifacts, oldest first; each `path` is under `artifacts_dir` (unchecked)."""
        sql = SELECT_ARTIFACTS + " WHERE run_id = ? ORDER BY created_at, name"
        return [artifact_ref(row, self.artifacts_dir) for row in self._query(sql, (run_id,))]

    def appended_since(self, since: float, kinds: Collection[str]) -> list[Appended]:
        """Every event appended at or after `since` (Unix seconds) to a run of `kinds`."""
        rows = self._query(
            "SELECT e.time, r.kind, e.run_id, e.seq, e.kind FROM events e"  # noqa: S608 - the IN list is "?" placeholders
            " JOIN runs r ON r.run_id = e.run_id"
            f" WHERE e.time >= ? AND r.kind IN ({_marks(kinds)})",
            (since, *kinds),
        )
        return [Appended(*row) for row in rows]

    def _query(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._connect() as conn:
            try:
                return conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                text = str(exc) if str(exc).split() else type(exc).__name__
                raise StoreUnreadable(text) from None

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        uri = f"{self.path.absolute().as_uri()}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store {self.path}: {exc}") from None
        with closing(conn):
            yield conn


def _marks(values: Collection[str]) -> str:
    """One "?" per value, for an IN list (never the values themselves)."""
    return ", ".join("?" * len(values))
