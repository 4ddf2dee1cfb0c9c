"""DeliveryLog on real SQLite: once-only recording across threads and processes, and the retry rule."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest

from freemad.bot.base import Delivery
from freemad.bot.deliveries import DeliveryLog


def delivery(delivery_id: str = "d-1", body: bytes = b'{"action":"opened"}') -> Delivery:
    return Delivery(delivery_id, "issues", "opened", 42, "octo-org/octo-repo", body)


@pytest.fixture
def log(tmp_path: Path):
    deliveries = DeliveryLog(tmp_path / "state" / "deliveries.sqlite3")
    yield deliveries
    deliveries.close()


def test_record_get_mark_status_recent(log: DeliveryLog) -> None:
    assert log.status("d-1") is None and log.get("d-1") is None
    assert log.record(delivery()) is True
    assert log.get("d-1") == delivery()
    assert log.status("d-1") == "queued"
    log.mark("d-1", "running", attempt=True)
    log.mark("d-1", "done", "commented")
    [record] = log.recent(10)
    assert (record.status, record.attempts, record.detail) == ("done", 1, "commented")
    assert record.received_at <= record.updated_at
    assert log.counts(since=0) == {"done": 1}


def test_a_redelivery_changes_nothing_even_after_reopening(log: DeliveryLog) -> None:
    assert log.record(delivery(body=b"first"))
    log.mark("d-1", "done")
    assert log.record(delivery(body=b"second")) is False
    reopened = DeliveryLog(log.path)
    try:
        assert reopened.record(delivery(body=b"third")) is False
        stored = reopened.get("d-1")
        assert stored is not None and stored.body == b"first"
        assert reopened.status("d-1") == "done"
    finally:
        reopened.close()


def test_only_a_failure_before_any_attempt_is_taken_back(log: DeliveryLog) -> None:
    log.record(delivery("never-ran"))
    log.mark("never-ran", "failed", "submit failed: ConnectionError")
    assert log.record(delivery("never-ran")) is True
    assert log.status("never-ran") == "queued"
    log.record(delivery("ran"))
    log.mark("ran", "running", attempt=True)
    log.mark("ran", "failed", "boom")
    assert log.record(delivery("ran")) is False
    for status in ("parked", "ignored", "done"):
        log.record(delivery(status))
        log.mark(status, status)
        assert log.record(delivery(status)) is False


def test_unknown_statuses_are_refused(log: DeliveryLog) -> None:
    with pytest.raises(ValueError, match="unknown delivery status"):
        log.mark("d-1", "finished")


def test_recent_is_newest_first_and_limited(log: DeliveryLog) -> None:
    for n in range(5):
        log.record(delivery(f"d-{n}"))
    assert [r.delivery_id for r in log.recent(3)] == ["d-4", "d-3", "d-2"]


def test_threads_record_a_delivery_once(log: DeliveryLog) -> None:
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def race() -> None:
        barrier.wait()
        results.append(log.record(delivery("contended")))

    threads = [threading.Thread(target=race) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 7 + [True]


def _record_in_child(path: str, delivery_id: str, start: multiprocessing.synchronize.Event) -> bool:
    start.wait()
    deliveries = DeliveryLog(path)
    try:
        return deliveries.record(delivery(delivery_id))
    finally:
        deliveries.close()


def test_processes_record_a_delivery_once(tmp_path: Path) -> None:
    path = str(tmp_path / "deliveries.sqlite3")
    context = multiprocessing.get_context("spawn")  # fork from a threaded test process is unsafe
    with context.Manager() as manager:
        start = manager.Event()
        with context.Pool(4) as pool:
            pending = [
                pool.apply_async(_record_in_child, (path, f"p-{n % 3}", start)) for n in range(12)
            ]
            start.set()
            results = [p.get(timeout=120) for p in pending]
    assert results.count(True) == 3
    log = DeliveryLog(path)
    assert {r.delivery_id for r in log.recent()} == {"p-0", "p-1", "p-2"}
    log.close()
