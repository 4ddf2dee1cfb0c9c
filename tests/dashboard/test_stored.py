"""The dashboards' readers of stored runs (freemad/dashboard/reading/stored_runs.py): a store, through the
store's own read-only reader, and a checkout of the state branch, through its layout module."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.reading.stored_runs import StateDir, StoreSource
from freemad.dashboard.run_records import SourceError
from freemad.store import SqliteStore


def quiet_warn(message: str) -> None:
    raise AssertionError(f"unexpected warning: {message}")


def a_store(path: Path) -> None:
    with SqliteStore(path) as store:
        store.create_run("task-1", "task", {"goal": "Plan the storage layer."})
        store.append("task-1", "task_created", {"goal": "Plan the storage layer."})
        store.put_artifact("task-1", "plan.md", b"# plan\n")
        store.create_run("note-1", "scratch", {})


def test_a_store_is_read_without_being_created_or_changed(tmp_path: Path) -> None:
    missing = tmp_path / "tasks.db"
    with pytest.raises(SourceError, match=f"store {missing} does not exist"):
        StoreSource(missing, quiet_warn)
    assert not missing.exists()
    not_a_store = tmp_path / "notes.db"
    not_a_store.write_text("plain text")
    with pytest.raises(SourceError, match=r"notes\.db is not a FREE-MAD store") as raised:
        StoreSource(not_a_store, quiet_warn)
    assert raised.value.exit_code == 2

    a_store(missing)
    before = missing.read_bytes()
    source = StoreSource(missing, quiet_warn)
    (run,) = source.runs()
    assert (run.kind, run.run_id, run.title) == ("task", "task-1", "Plan the storage layer.")
    data = run.load()
    assert [kind for kind, _ in data.events] == ["task_created"]
    (artifact,) = data.artifacts
    assert (artifact.name, artifact.read()) == ("plan.md", b"# plan\n")
    assert [(c.run_id, c.seq, c.event) for c in source.changes(0)] == [
        ("task-1", 0, "task_created")
    ]
    assert missing.read_bytes() == before


def test_health_names_the_store_whose_read_failed(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    a_store(path)
    client = create_app(
        DashboardSettings([StoreSource(path, quiet_warn)], warn=quiet_warn)
    ).test_client()
    assert client.get("/health").get_json() == {"ok": True, "runs": 1, "sources": 1}
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE events")
    conn.close()
    health = client.get("/health")
    assert health.status_code == 503
    assert health.get_json() == {"ok": False, "error": f"{path}: no such table: events"}
    index = client.get("/")
    assert index.status_code == 503 and "no such table: events" in index.get_data(as_text=True)


def test_a_checkout_of_the_state_branch_shows_what_it_can(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "task-1"
    (folder / "artifacts").mkdir(parents=True)
    sha = "ab" * 32
    (folder / "artifacts" / sha).write_bytes(b"# plan\n")
    meta = {
        "run_id": "task-1",
        "kind": "task",
        "status": "waiting",
        "created_at": 1.5,
        "updated_at": 2,
        "summary": {"goal": "Plan it."},
        "artifacts": [{"name": "plan.md", "size": 7, "sha256": sha}],
    }
    (folder / "run.json").write_text(json.dumps(meta))
    event = {"seq": 0, "time": 3, "kind": "task_created", "data": {"goal": "Plan it."}}
    (folder / "events.jsonl").write_text(json.dumps(event) + "\nnot json\n")
    (tmp_path / "runs" / "no-events").mkdir()
    (tmp_path / "runs" / "no-events" / "run.json").write_text(json.dumps({**meta, "run_id": "x"}))

    (run,) = StateDir(tmp_path, quiet_warn).runs()
    assert (run.run_id, run.status, run.title, run.started, run.updated) == (
        "task-1",
        "waiting",
        "Plan it.",
        1.5,
        2.0,
    )
    data = run.load()
    assert list(data.events) == [("task_created", {"goal": "Plan it."})]
    assert list(data.times) == [3.0]
    assert [(a.name, a.size, a.read()) for a in data.artifacts] == [("plan.md", 7, b"# plan\n")]


def test_a_debate_whose_runner_went_silent_is_abandoned_and_the_feed_says_so(
    tmp_path: Path,
) -> None:
    """A debate the GitHub router runs, written (as `freemad.debate.live_store` writes it) by a
    process on another host: running while it touches the run, abandoned once it stopped."""
    from freemad.debate.live_store import PROGRESS, RUNNER, STORE_STALE_AFTER

    path = tmp_path / "runs.db"
    then = [time.time()]
    with SqliteStore(path, clock=lambda: then[0]) as store:
        who = {"pid": 1, "host": "another-host", "heartbeat_sec": 10.0}
        store.create_run("debate-1", "debate", {"goal": "Pick a policy.", RUNNER: who})
        store.update_run("debate-1", status="running")
        started = {"requirement": "Pick a policy.", "agents": ["a"], "rounds": 1}
        store.append(
            "debate-1", PROGRESS, {"time": then[0], "kind": "run_started", "data": started}
        )
        source = StoreSource(path, quiet_warn)
        [run] = source.runs()
        assert run.status == "running" and run.load().live["status"] == "running"  # type: ignore[index]
        assert [c.event for c in source.changes(0)] == [PROGRESS]

        then[0] -= STORE_STALE_AFTER + 5  # its last touch that long ago
        store.update_run("debate-1")
    [run] = source.runs()
    assert run.status == "abandoned" and run.updated == then[0] + STORE_STALE_AFTER
    data = run.load()
    assert data.status == "abandoned" and data.live is not None and data.transcript is None
    assert data.live["requirement"] == "Pick a policy."
    gone = [c for c in source.changes(run.updated) if c.event == "abandoned"]
    assert [(c.kind, c.run_id, c.time) for c in gone] == [("debate", "debate-1", run.updated)]
    assert not [c for c in source.changes(run.updated + 1) if c.event == "abandoned"]
