"""DeliveryLog on real SQLite: processes record a delivery once. Its other rules (redelivery,
retry, statuses, threads) are checked on SQLite and Redis alike in test_redis_state.py."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from freemad.bot.base import Delivery
from freemad.bot.deliveries import DeliveryLog


def delivery(delivery_id: str = "d-1", body: bytes = b'{"action":"opened"}') -> Delivery:
    return Delivery(delivery_id, "issues", "opened", 42, "octo-org/octo-repo", body)


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
