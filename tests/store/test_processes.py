"""Several real processes on one store: concurrent appends, and kill -9 in the middle of appending."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from freemad.store import SqliteStore

from .conftest import child

WRITER = """
import sys
from freemad.store import SqliteStore

db, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with SqliteStore(db) as store:
    print("ready", flush=True)
    sys.stdin.readline()  # the parent says go once both writers are ready
    for i in range(count):
        store.append("shared", "tick", {"writer": name, "i": i})
print("done", flush=True)
"""


def test_two_processes_append_to_one_run(db_path: Path) -> None:
    with SqliteStore(db_path) as store:
        store.create_run("shared", "task", {})
    writers = [child(WRITER, str(db_path), name, "500") for name in ("a", "b")]
    for proc in writers:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    for proc in writers:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in writers:
        out, err = proc.communicate()
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    with SqliteStore(db_path) as store:
        events = store.events("shared")
    assert [e.seq for e in events] == list(range(1000))
    for name in ("a", "b"):
        assert [e.data["i"] for e in events if e.data["writer"] == name] == list(range(500))


KILLED_WRITER = """
import sys
from freemad.store import SqliteStore

store = SqliteStore(sys.argv[1])
for i in range(1_000_000):
    if i % 10 == 0:
        ref = store.put_artifact("victim", f"out-{i}.txt", f"artifact {i}".encode() * 50)
        print("artifact", ref.artifact_id, flush=True)
    event = store.append("victim", "tick", {"i": i, "pad": "x" * 400})
    print("seq", event.seq, flush=True)
"""


def test_kill_9_loses_no_appended_event(db_path: Path) -> None:
    with SqliteStore(db_path) as store:
        store.create_run("victim", "task", {})
    proc = child(KILLED_WRITER, str(db_path))
    assert proc.stdout is not None
    printed: list[str] = []
    for line in proc.stdout:
        printed.append(line)
        if len(printed) >= 300:
            os.kill(proc.pid, signal.SIGKILL)
            break
    rest, _err = proc.communicate()  # lines still in the pipe were printed after a return too
    printed.extend(rest.splitlines())
    assert proc.returncode == -signal.SIGKILL
    seqs = {int(line.split()[1]) for line in printed if line.startswith("seq ")}
    artifact_ids = {line.split()[1] for line in printed if line.startswith("artifact ")}
    assert len(seqs) >= 250

    with SqliteStore(db_path) as store:
        stored = [e.seq for e in store.events("victim")]
        refs = store.artifacts("victim")
        assert stored == list(range(len(stored)))  # no gap, no duplicate
        assert seqs <= set(stored)
        assert {ref.artifact_id for ref in refs} >= artifact_ids
        for ref in refs:  # every committed row has its intact file
            assert (
                store.read_artifact(ref.artifact_id) == f"artifact {ref.name[4:-4]}".encode() * 50
            )


OPENER = """
import sys
from freemad.store import SqliteStore

sys.stdin.readline()
with SqliteStore(sys.argv[1]) as store:
    store.create_run(sys.argv[2], "task", {})
    store.append(sys.argv[2], "opened", {})
"""


def test_processes_opening_a_new_store_at_once_migrate_it_once(db_path: Path) -> None:
    openers = [child(OPENER, str(db_path), f"run-{n}") for n in range(4)]
    for proc in openers:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in openers:
        _out, err = proc.communicate()
        assert proc.returncode == 0, err
    with SqliteStore(db_path) as store:
        assert sorted(r.run_id for r in store.runs()) == [f"run-{n}" for n in range(4)]
