"""A debate kept in a store while it runs (`freemad/debate/live_store.py`), on real SQLite: the
run made running before the first event, events kept as journal lines, the run touched while
nothing happens, and ended with its transcript; a dead or silent runner told from a live one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from freemad.core.run_events import Event
from freemad.debate.debate_record import DebateResult
from freemad.debate.live_store import (
    FINISHED,
    PROGRESS,
    RUNNER,
    STORE_STALE_AFTER,
    StoreJournal,
    runner_gone_at,
    stored_debate,
)
from freemad.store import RunRow, SqliteStore
from tests.conftest import make_config, mock_agent, wait_for

RUN = "0123456789abcdef"


def config(*patterns: str) -> object:
    return make_config([mock_agent("a")], security={"redact_patterns": list(patterns)})


def test_the_run_is_running_from_the_start_touched_while_quiet_and_ended_by_finish(
    tmp_path: Path,
) -> None:
    with SqliteStore(tmp_path / "runs.db") as store:
        journal = StoreJournal(
            store, config("sk-[a-z0-9]+"), RUN, "r", {"goal": "use sk-abc123"}, heartbeat=0.05
        )
        with journal:
            row = store.run(RUN)
            assert row is not None and row.status == "running"
            assert row.summary["goal"] == "use [REDACTED]"
            assert row.summary[RUNNER]["pid"] == os.getpid()
            wait_for(
                lambda: store.run(RUN).updated_at > row.updated_at,  # type: ignore[union-attr]
                "a heartbeat with no event",
            )
            journal(Event(RUN, 0, 1.0, "run_started", {"requirement": "sk-abc123", "agents": []}))
            journal(Event(RUN, 1, 2.0, "round_finished", {"scores": {"x": float("nan")}}))
            journal(Event(RUN, 2, 3.0, "round_started", {"round": 0, "agents": ["a"]}))
            wait_for(lambda: len(store.events(RUN)) == 2, "the events kept")
            result = DebateResult(
                run_id=RUN,
                status="completed",
                requirement="r",
                config_digest="d",
                started_at="2026-12-01T00:00:00.000Z",
                finished_at="2026-12-01T00:00:01.000Z",
            )
            kept = journal.finish(result)
        events = store.events(RUN)
        # The NaN scores are no JSON: that one line is skipped, the rest kept in order.
        assert [(e.kind, e.data.get("kind")) for e in events] == [
            (PROGRESS, "run_started"),
            (PROGRESS, "round_started"),
            (FINISHED, None),
        ]
        assert "sk-abc123" not in json.dumps([e.data for e in events])
        assert events[-1].data == {"transcript": kept}
        row = store.run(RUN)
        assert row is not None and row.status == "completed" and RUNNER not in row.summary


def test_leaving_without_a_result_ends_failed(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "runs.db") as store:
        with pytest.raises(KeyError), StoreJournal(store, config(), RUN, "r", {"goal": "r"}):
            raise KeyError("lost")
        row = store.run(RUN)
        assert row is not None and row.status == "failed"
        [finished] = store.events(RUN, kinds=[FINISHED])
        assert finished.data["transcript"]["error"] == "KeyError: 'lost'"
        assert stored_debate(row, store.events(RUN), 0.0) is None


def row(status: str = "running", updated: float = 1000.0, **runner: object) -> RunRow:
    who = {"pid": os.getpid(), "host": socket.gethostname(), "heartbeat_sec": 10.0, **runner}
    return RunRow(RUN, "debate", status, 990.0, updated, {"goal": "g", RUNNER: who})


def test_a_dead_or_silent_runner_is_gone_and_a_live_one_is_not() -> None:
    assert runner_gone_at(row(), 1001.0) is None  # this process, beating
    assert runner_gone_at(row(status="completed", pid=-5), 9999.0) is None  # ended: not "gone"
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert runner_gone_at(row(pid=child.pid), 1001.0) == 1010.0  # its last beat, and one more
    elsewhere = row(host="elsewhere", pid=1)
    assert runner_gone_at(elsewhere, 1000.0 + STORE_STALE_AFTER - 1) is None
    assert runner_gone_at(elsewhere, 1000.0 + STORE_STALE_AFTER + 5) == 1000.0 + STORE_STALE_AFTER
    nobody = RunRow(RUN, "debate", "running", 990.0, 1000.0, {"goal": "g"})
    assert runner_gone_at(nobody, 1001.0) == 1001.0

    debate = stored_debate(row(pid=child.pid), [], 1001.0)
    assert debate is not None
    assert (debate.status, debate.requirement, debate.updated) == ("abandoned", "g", 1010.0)
