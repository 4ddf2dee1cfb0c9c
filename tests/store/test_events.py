"""The event log and the run table: round trips, ordering, filters, atomicity, errors."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from freemad.errors import FreemadError
from freemad.store import (
    RunExists,
    RunRow,
    SqliteStore,
    Store,
    StoredEvent,
    StoreError,
    UnknownRun,
)


class Ticks:
    """A clock that moves one second per reading, so order by time is unambiguous."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_store_satisfies_the_port(store: SqliteStore) -> None:
    port: Store = store
    assert port.runs() == []


def test_round_trip_survives_reopening(db_path: Path) -> None:
    data = {"stage": "review", "text": "naïve ✓", "n": 3, "ok": True, "nested": {"a": [1, 2.5]}}
    with SqliteStore(db_path) as store:
        created = store.create_run("task-1", "task", {"title": "Fix it"})
        appended = store.append("task-1", "stage_started", data)
    assert created.status == "created"
    assert created.created_at == created.updated_at
    assert appended == StoredEvent("task-1", 0, appended.time, "stage_started", data)
    with SqliteStore(db_path) as reopened:
        assert reopened.events("task-1") == [appended]
        row = reopened.run("task-1")
    assert row is not None
    assert (row.kind, row.status, row.summary) == ("task", "created", {"title": "Fix it"})


def test_seq_counts_from_zero_per_run(store: SqliteStore) -> None:
    store.create_run("a", "task", {})
    store.create_run("b", "evolve", {})
    for i in range(5):
        store.append("a", "tick", {"i": i})
        if i % 2 == 0:
            store.append("b", "tick", {"i": i})
    assert [e.seq for e in store.events("a")] == [0, 1, 2, 3, 4]
    assert [e.data["i"] for e in store.events("a")] == [0, 1, 2, 3, 4]
    assert [e.seq for e in store.events("b")] == [0, 1, 2]
    batch = store.append_many("a", [("x", {}), ("y", {})])
    assert [e.seq for e in batch] == [5, 6]


def test_after_seq_and_kinds_filter(store: SqliteStore) -> None:
    store.create_run("r", "task", {})
    kinds = ["started", "reply", "reply", "question", "reply", "answer"]
    store.append_many("r", [(kind, {"k": kind}) for kind in kinds])
    assert [e.seq for e in store.events("r", after_seq=3)] == [4, 5]
    assert [e.seq for e in store.events("r", kinds={"reply"})] == [1, 2, 4]
    assert [e.seq for e in store.events("r", after_seq=1, kinds=["reply", "answer"])] == [2, 4, 5]
    assert [e.seq for e in store.events("r", kinds="question")] == [3]
    assert store.events("r", kinds=[]) == []
    assert store.events("r", after_seq=5) == []
    assert store.events("nobody") == []


def test_append_many_is_all_or_nothing(store: SqliteStore) -> None:
    store.create_run("r", "task", {})
    store.append("r", "first", {})
    with pytest.raises(StoreError, match="not JSON-serialisable"):
        store.append_many("r", [("ok", {"a": 1}), ("bad", {"b": object()}), ("ok", {"c": 2})])
    with pytest.raises(StoreError, match="not JSON-serialisable"):
        store.append_many("r", [("ok", {"a": 1}), ("nan", {"x": float("nan")})])
    assert [e.kind for e in store.events("r")] == ["first"]
    assert store.append("r", "next", {}).seq == 1


def test_unknown_run_is_one_clear_line(store: SqliteStore) -> None:
    for action in (
        lambda: store.append("ghost", "x", {}),
        lambda: store.append_many("ghost", [("x", {})]),
        lambda: store.update_run("ghost", status="done"),
        lambda: store.put_artifact("ghost", "a.txt", b"x"),
    ):
        with pytest.raises(UnknownRun) as caught:
            action()
        message = caught.value.one_line()
        assert message.startswith("unknown run ghost")
        assert "\n" not in message
        assert isinstance(caught.value, FreemadError)
    assert store.run("ghost") is None


def test_duplicate_and_unsafe_run_ids(store: SqliteStore) -> None:
    store.create_run("task-1", "task", {})
    with pytest.raises(RunExists, match="already exists"):
        store.create_run("task-1", "evolve", {})
    for bad in ("", "../up", "a/b", ".hidden", "x" * 129):
        with pytest.raises(StoreError, match="not allowed"):
            store.create_run(bad, "task", {})


def test_runs_newest_first_by_kind_with_limit(db_path: Path) -> None:
    with SqliteStore(db_path, clock=Ticks()) as store:
        for i in range(4):
            store.create_run(f"t{i}", "task", {"i": i})
        store.create_run("e0", "evolve", {})
        assert [r.run_id for r in store.runs()] == ["e0", "t3", "t2", "t1", "t0"]
        store.append("t1", "progress", {})  # an append counts as activity
        store.update_run("t0", status="waiting")
        assert [r.run_id for r in store.runs(kind="task")] == ["t0", "t1", "t3", "t2"]
        assert [r.run_id for r in store.runs(kind="task", limit=2)] == ["t0", "t1"]
        assert [r.run_id for r in store.runs(limit=1)] == ["t0"]
        assert store.runs(kind="debate") == []


def test_update_run_sets_only_what_is_given(db_path: Path) -> None:
    with SqliteStore(db_path, clock=Ticks()) as store:
        created = store.create_run("r", "task", {"stage": "plan"})
        store.update_run("r", status="running")
        running = store.run("r")
        store.update_run("r", summary={"stage": "review"})
        reviewed = store.run("r")
    assert running == RunRow(
        "r", "task", "running", created.created_at, created.created_at + 1, {"stage": "plan"}
    )
    assert reviewed is not None
    assert (reviewed.status, reviewed.summary) == ("running", {"stage": "review"})
    assert reviewed.updated_at > running.updated_at


def test_a_second_store_object_sees_appends_at_once(db_path: Path) -> None:
    with SqliteStore(db_path) as writer, SqliteStore(db_path) as reader:
        writer.create_run("r", "task", {})
        writer.append("r", "x", {"v": 1})
        assert [e.data for e in reader.events("r")] == [{"v": 1}]
        reader.append("r", "y", {})
        assert [e.seq for e in writer.events("r")] == [0, 1]


def test_one_store_shared_by_threads(store: SqliteStore) -> None:
    store.create_run("r", "task", {})

    def work(n: int) -> None:
        for i in range(50):
            store.append("r", "tick", {"thread": n, "i": i})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = store.events("r")
    assert [e.seq for e in events] == list(range(200))
    for n in range(4):
        assert [e.data["i"] for e in events if e.data["thread"] == n] == list(range(50))


def test_closed_store_refuses_politely(db_path: Path) -> None:
    store = SqliteStore(db_path)
    store.close()
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        store.runs()
    with pytest.raises(StoreError, match="is closed"):
        store.create_run("r", "task", {})


def test_summary_must_be_json(store: SqliteStore) -> None:
    with pytest.raises(StoreError, match="summary of run r is not JSON-serialisable"):
        store.create_run("r", "task", {"when": object()})
    assert store.run("r") is None
