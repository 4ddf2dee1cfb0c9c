"""The web edge's SQLite files are checkpointed by a thread, never inside an acknowledgement:
real SQLite, a real huey, the thread's own checkpoints observed from outside."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from freemad.bot.checkpoint import Checkpointer
from freemad.bot.deliveries import DeliveryLog
from freemad.bot.executors import LocalExecutor
from freemad.bot.job import Job
from freemad.bot.queue import make_huey, register
from tests.bot.conftest import Scripted, delivery, settings_for
from tests.github.payloads import labeled_issue


def wait_for(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def autocheckpoint(conn: Any) -> int:
    return int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])


def fully_folded(path: Path) -> bool:
    """True when a checkpoint finds nothing left in the write-ahead log to copy back."""
    with sqlite3.connect(path) as conn:
        busy, logged, folded = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return bool(busy == 0 and logged == folded)


def test_the_web_edges_delivery_log_leaves_checkpoints_to_its_thread(tmp_path: Path) -> None:
    path = tmp_path / "deliveries.sqlite3"
    log = DeliveryLog(path, background_checkpoint=True)
    try:
        for number in range(40):
            assert log.record(delivery(f"d-{number}", "issues", {"n": number}))
        assert autocheckpoint(log._db()) == 0  # commits never checkpoint themselves
        checkpointer = log._checkpointer
        assert checkpointer is not None
        wait_for(lambda: checkpointer.done >= 1)
        wait_for(lambda: fully_folded(path))
        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT COUNT(*) FROM deliveries").fetchone() == (40,)
    finally:
        log.close()


def test_other_delivery_logs_keep_sqlites_own_checkpoints(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "deliveries.sqlite3")
    try:
        assert log.record(delivery("d-1", "issues", labeled_issue()))
        assert autocheckpoint(log._db()) == 1000
        assert log._checkpointer is None
    finally:
        log.close()


def test_the_web_edges_queue_leaves_checkpoints_to_its_thread(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    huey = make_huey(settings, background_checkpoint=True)
    register(huey, Job(settings, run=Scripted()))  # only enqueued here, never run
    try:
        executor = LocalExecutor(huey)
        for number in range(20):
            executor.submit(delivery(f"q-{number}", "issues", {"n": number}))
        assert autocheckpoint(huey.storage.conn) == 0
        assert executor.depth() == 20
        wait_for(lambda: fully_folded(settings.deliveries_path))  # the queue's file
    finally:
        huey.storage.close()


def test_a_checkpointer_starts_again_after_a_stop(tmp_path: Path) -> None:
    path = tmp_path / "plain.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE t (x)")
    checkpointer = Checkpointer(path, delay=0.01)
    checkpointer.nudge()
    wait_for(lambda: checkpointer.done == 1)
    checkpointer.stop()
    checkpointer.nudge()
    wait_for(lambda: checkpointer.done == 2)
    checkpointer.stop()
