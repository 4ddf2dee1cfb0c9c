"""StoreReader on real SQLite: it reads what SqliteStore wrote, never creates or changes a file,
and says in one line what it cannot read."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from freemad.store import SqliteStore, StoreError, StoreReader, StoreUnreadable


def written(path: Path) -> SqliteStore:
    store = SqliteStore(path)
    store.create_run("task-1", "task", {"goal": "Plan it."})
    store.append("task-1", "task_created", {"n": 1})
    store.append("task-1", "stage_started", {"n": 2})
    store.put_artifact("task-1", "plan.md", b"# plan\n")
    store.create_run("empty-1", "evolve", {})
    store.create_run("other-1", "scratch", {})
    store.append("other-1", "noted", {})
    return store


def test_it_reads_runs_events_and_artifacts_as_the_store_wrote_them(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with written(path) as store:
        reader = StoreReader(path)
        reader.check()
        listed = {item.row.run_id: item for item in reader.runs(("task", "evolve"))}
        assert set(listed) == {"task-1", "empty-1"}  # only the kinds asked for
        assert listed["task-1"].row == store.run("task-1") and listed["task-1"].last_seq == 1
        assert listed["empty-1"].last_seq is None
        assert reader.events("task-1") == store.events("task-1")
        assert reader.artifacts("task-1") == store.artifacts("task-1")
        (ref,) = reader.artifacts("task-1")
        assert Path(ref.path).read_bytes() == b"# plan\n"
        since = store.events("task-1")[1].time
        appended = reader.appended_since(since, ("task",))
        assert [(a.run_kind, a.run_id, a.seq, a.kind) for a in appended] == [
            ("task", "task-1", 1, "stage_started")
        ]
        assert reader.appended_since(0, ("debate",)) == []


def test_it_never_creates_or_migrates_a_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "runs.db"
    with pytest.raises(StoreError, match=r"cannot open store .*runs\.db"):
        StoreReader(missing).check()
    with pytest.raises(StoreError, match="cannot open store"):
        StoreReader(missing).runs(("task",))
    assert not missing.parent.exists()

    path = tmp_path / "runs.db"
    written(path).close()
    files = list(tmp_path.rglob("*"))
    before = path.read_bytes()
    reader = StoreReader(path)
    reader.check()
    reader.runs(("task",))
    reader.events("task-1")
    assert path.read_bytes() == before
    # Nothing new but SQLite's companions of a WAL file, which any reader of one may make.
    made = {p.name for p in set(tmp_path.rglob("*")) - set(files)}
    assert made <= {"runs.db-wal", "runs.db-shm"}


def test_a_file_that_is_no_store_or_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    other = tmp_path / "notes.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    conn.close()
    with pytest.raises(StoreError, match=r"notes\.db is not a FREE-MAD store: no such table: runs"):
        StoreReader(other).check()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all, " * 100)
    with pytest.raises(StoreError, match="is not a FREE-MAD store"):
        StoreReader(garbage).check()

    # A read that fails after the store was found good is SQLite's words: the caller names it.
    path = tmp_path / "runs.db"
    written(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE events")
    conn.close()
    with pytest.raises(StoreUnreadable) as raised:
        StoreReader(path).events("task-1")
    assert raised.value.one_line() == "no such table: events"
    assert raised.value.__cause__ is None


def test_a_damaged_json_column_reads_as_an_empty_object(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    written(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET summary = '[1, 2' WHERE run_id = 'task-1'")
        conn.execute("UPDATE events SET data = '\"text\"' WHERE run_id = 'task-1' AND seq = 0")
    conn.close()
    reader = StoreReader(path)
    (task,) = [item.row for item in reader.runs(("task",))]
    assert task.summary == {}
    assert [event.data for event in reader.events("task-1")] == [{}, {"n": 2}]
