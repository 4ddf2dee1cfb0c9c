"""The SQLite store's schema as ordered migrations, and opening a connection with the right pragmas.

The schema version is `PRAGMA user_version`: the number of migrations applied. Each migration
runs in its own `BEGIN IMMEDIATE` transaction together with the version bump, so a crash leaves
the file at the old version or the new one, never between. Append new migrations at the end;
never edit one that has shipped.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import suppress
from pathlib import Path

from freemad.store.store_port import StoreError

# 1: the event log and the run table that lists it.
_RUNS_AND_EVENTS = """
CREATE TABLE runs (
    run_id     TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    status     TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    summary    TEXT NOT NULL  -- JSON object
);
CREATE INDEX runs_by_kind_updated ON runs (kind, updated_at);
CREATE INDEX runs_by_updated ON runs (updated_at);
CREATE TABLE events (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    seq    INTEGER NOT NULL,
    time   REAL NOT NULL,     -- Unix seconds
    kind   TEXT NOT NULL,
    data   TEXT NOT NULL,     -- JSON object
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
"""

# 2: content-addressed artifacts; `path` is relative to the store's artifacts folder.
_ARTIFACTS = """
CREATE TABLE artifacts (
    artifact_id TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs (run_id),
    name        TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    size        INTEGER NOT NULL,
    path        TEXT NOT NULL,
    created_at  REAL NOT NULL,
    UNIQUE (run_id, name, sha256)
);
"""

# 3: events by time, for the live dashboard's "what changed since" across all runs.
_EVENTS_BY_TIME = """
CREATE INDEX events_by_time ON events (time);
"""

MIGRATIONS: tuple[str, ...] = (_RUNS_AND_EVENTS, _ARTIFACTS, _EVENTS_BY_TIME)
SCHEMA_VERSION = len(MIGRATIONS)

# FULL, not NORMAL: in WAL mode both keep every committed transaction through a kill -9 of the
# process (the WAL is written before COMMIT returns), but only FULL fsyncs the WAL on each
# commit, so a power cut or kernel crash cannot take back an event a decision was derived from.
# Events arrive at agent-call pace, so one fsync per append is cheap (see docs/benchmarks.md).
SYNCHRONOUS = ("FULL", "NORMAL")


def wal(conn: sqlite3.Connection, attempts: int = 100) -> str:
    """Switch a fresh connection to WAL and return the journal mode SQLite reports. Processes
    doing this to a brand-new file at once can get "database is locked" at once, without the busy
    handler's wait: try again a moment later."""
    for attempt in range(attempts):
        try:
            (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            return str(mode)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.02)
    raise AssertionError("unreachable")


def connect(path: Path, *, busy_timeout: float, synchronous: str) -> sqlite3.Connection:
    """Open (creating if needed) and migrate the store at `path`; every failure is a StoreError.

    isolation_level=None: the store issues BEGIN IMMEDIATE / COMMIT itself. check_same_thread is
    off because SqliteStore serialises every use of its one connection with a lock.
    """
    if synchronous not in SYNCHRONOUS:
        raise StoreError(
            f"synchronous must be one of {', '.join(SYNCHRONOUS)}, not {synchronous!r}"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            str(path), timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"cannot open store {path}: {exc}") from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        mode = wal(conn)
        if str(mode).lower() != "wal":
            raise StoreError(f"store {path} cannot use WAL journaling (got {mode!r})")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path} is not a usable FREE-MAD store: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def schema_version(conn: sqlite3.Connection) -> int:
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    return int(version)


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Bring the file up to SCHEMA_VERSION, one migration per transaction; refuse newer files."""
    while True:
        if schema_version(conn) == SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = schema_version(conn)  # another process may have migrated meanwhile
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"store {path} has schema version {version}, newer than this FREE-MAD"
                    f" reads ({SCHEMA_VERSION})",
                    hint="upgrade freemad to open it",
                )
            if version < SCHEMA_VERSION:
                for statement in split_statements(MIGRATIONS[version]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise


def split_statements(script: str) -> list[str]:
    """The statements of an SQL script, one per item (sqlite3.executescript would COMMIT first)."""
    statements: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\n;"):
                statements.append(pending.strip())
            pending = ""
    if pending.strip(" \t\n;"):
        raise ValueError(f"incomplete SQL statement at the end of a migration: {pending!r}")
    return statements
