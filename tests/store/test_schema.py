"""Opening a store: pragmas, migrations from older files, refusal of newer and non-SQLite files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from freemad.store import SCHEMA_VERSION, SqliteStore, StoreError
from freemad.store.schema import MIGRATIONS, split_statements


def pragma(path: Path, name: str) -> object:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def test_new_store_is_wal_at_current_version(db_path: Path, tmp_path: Path) -> None:
    with SqliteStore(db_path) as store:
        conn = store._conn
        assert conn is not None
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
        assert store.artifacts_dir == tmp_path / "state" / "artifacts"
        assert store.artifacts_dir.is_dir()
    assert pragma(db_path, "user_version") == SCHEMA_VERSION


def test_indexes_serve_the_queries(store: SqliteStore) -> None:
    conn = store._conn
    assert conn is not None

    def plan(sql: str) -> str:
        return " ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, ("x", 1)))

    assert "PRIMARY KEY (run_id=? AND seq>?)" in plan(
        "SELECT * FROM events WHERE run_id = ? AND seq > ? ORDER BY seq"
    )
    runs_plan = plan("SELECT * FROM runs WHERE kind = ? ORDER BY updated_at DESC LIMIT ?")
    assert "runs_by_kind_updated" in runs_plan
    assert "TEMP B-TREE" not in runs_plan


def test_empty_file_at_version_0_is_migrated(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.touch()
    with SqliteStore(db_path) as store:
        store.create_run("r", "task", {})
        assert store.append("r", "x", {}).seq == 0
    assert pragma(db_path, "user_version") == SCHEMA_VERSION


def test_older_schema_is_upgraded_keeping_its_events(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path, isolation_level=None)
    for statement in split_statements(MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO runs VALUES ('old', 'task', 'waiting', 1.0, 2.0, '{\"q\":1}')")
    conn.execute("INSERT INTO events VALUES ('old', 0, 1.5, 'asked', '{\"text\":\"why?\"}')")
    conn.close()
    with SqliteStore(db_path) as store:
        assert [(e.seq, e.kind, e.data) for e in store.events("old")] == [
            (0, "asked", {"text": "why?"})
        ]
        assert store.append("old", "answered", {}).seq == 1
        ref = store.put_artifact("old", "plan.md", b"# plan")  # the table migration 2 added
        assert store.read_artifact(ref.artifact_id) == b"# plan"
    assert pragma(db_path, "user_version") == SCHEMA_VERSION


def test_store_from_a_newer_freemad_is_refused(db_path: Path) -> None:
    with SqliteStore(db_path) as store:
        store.create_run("r", "task", {})
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError) as caught:
        SqliteStore(db_path)
    line = caught.value.one_line()
    assert str(db_path) in line
    assert f"schema version {SCHEMA_VERSION + 1}" in line
    assert "upgrade freemad" in line
    assert pragma(db_path, "user_version") == SCHEMA_VERSION + 1  # left untouched


@pytest.mark.parametrize(
    "content", [b"this is not a database, just some text\n" * 100, bytes(range(256)) * 16]
)
def test_non_sqlite_file_is_a_store_error_naming_it(db_path: Path, content: bytes) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(content)
    with pytest.raises(StoreError) as caught:
        SqliteStore(db_path)
    line = caught.value.one_line()
    assert str(db_path) in line
    assert "not a usable FREE-MAD store" in line
    assert "\n" not in line
    assert db_path.read_bytes() == content


def test_unopenable_path_is_a_store_error(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    with pytest.raises(StoreError, match=str(folder)):
        SqliteStore(folder)


def test_split_statements_keeps_triggers_whole() -> None:
    script = """
    CREATE TABLE t (a);  -- a comment; with a semicolon
    CREATE TRIGGER t_ins AFTER INSERT ON t BEGIN SELECT 1; SELECT 2; END;
    """
    statements = split_statements(script)
    assert len(statements) == 2
    assert statements[1].endswith("SELECT 1; SELECT 2; END;")
    conn = sqlite3.connect(":memory:")
    for statement in statements:
        conn.execute(statement)
    kinds = conn.execute("SELECT type FROM sqlite_master ORDER BY type").fetchall()
    conn.close()
    assert kinds == [("table",), ("trigger",)]
