"""DeliveryLog on real SQLite: processes record a delivery once, and a log an older version wrote
opens and gains what this one adds. Its other rules (redelivery, replay, retry, statuses,
threads) are checked on SQLite and Redis alike in test_redis_stores.py."""

from __future__ import annotations

import hashlib
import multiprocessing
import sqlite3
import threading
from pathlib import Path

from freemad.bot.deliveries import DeliveryLog
from freemad.bot.ports import Delivery


def delivery(delivery_id: str = "d-1", body: bytes | None = None) -> Delivery:
    if body is None:
        body = b'{"action":"opened","n":"%s"}' % delivery_id.encode()
    return Delivery(delivery_id, "issues", "opened", 42, "octo-org/octo-repo", body)


def _record_in_child(
    path: str, delivery_id: str, body: bytes | None, start: multiprocessing.synchronize.Event
) -> bool:
    start.wait()
    deliveries = DeliveryLog(path)
    try:
        return deliveries.record(delivery(delivery_id, body))
    finally:
        deliveries.close()


def test_processes_record_a_delivery_once(tmp_path: Path) -> None:
    path = str(tmp_path / "deliveries.sqlite3")
    # Three deliveries redelivered four times each, and one body replayed under four ids.
    jobs: list[tuple[str, bytes | None]] = [(f"p-{n % 3}", None) for n in range(12)]
    jobs += [(f"replay-{n}", b'{"replayed":true}') for n in range(4)]
    context = multiprocessing.get_context("spawn")  # fork from a threaded test process is unsafe
    with context.Manager() as manager:
        start = manager.Event()
        with context.Pool(4) as pool:
            pending = [pool.apply_async(_record_in_child, (path, *job, start)) for job in jobs]
            start.set()
            results = [p.get(timeout=120) for p in pending]
    assert results[:12].count(True) == 3
    assert results[12:].count(True) == 1
    log = DeliveryLog(path)
    ids = {r.delivery_id for r in log.recent()}
    assert {"p-0", "p-1", "p-2"} < ids and len(ids) == 4
    log.close()


# The table as the first version created it: no body digest, no index on the status.
_OLD_SCHEMA = """
CREATE TABLE deliveries (
    delivery_id TEXT PRIMARY KEY,
    event TEXT NOT NULL,
    action TEXT,
    installation_id INTEGER,
    repo TEXT,
    body BLOB NOT NULL,
    received_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX deliveries_received_at ON deliveries (received_at);
"""


def test_a_log_an_older_version_wrote_opens_with_digests_and_the_status_index(
    tmp_path: Path,
) -> None:
    from freemad.bot.deliveries import _UNFINISHED

    path = tmp_path / "deliveries.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(_OLD_SCHEMA)
    rows = [
        ("running", b'{"n":1}', 1.0, "running", 1),
        ("done", b'{"n":2}', 2.0, "done", 1),
        ("twin-a", b'{"twin":true}', 3.0, "done", 1),  # a replay the older version let in
        ("twin-b", b'{"twin":true}', 4.0, "queued", 0),
    ]
    old.executemany(
        "INSERT INTO deliveries (delivery_id, event, body, received_at, updated_at, status,"
        " attempts) VALUES (?, 'issues', ?, ?, ?, ?, ?)",
        [(i, body, t, t, status, attempts) for i, body, t, status, attempts in rows],
    )
    old.commit()
    old.close()

    # Two logs open it at once, as gunicorn's processes would: one adds the column, once.
    logs = [DeliveryLog(path), DeliveryLog(path)]
    barrier = threading.Barrier(2)
    seen: list[str | None] = []

    def open_and_read(log: DeliveryLog) -> None:
        barrier.wait()
        seen.append(log.status("done"))

    threads = [threading.Thread(target=open_and_read, args=(log,)) for log in logs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == ["done", "done"]
    log = logs[0]

    assert [r.delivery_id for r in log.unfinished()] == ["running", "twin-b"]
    assert log.record(delivery("replay-of-done", b'{"n":2}')) is False  # digests filled in
    assert log.record(delivery("replay-of-twin", b'{"twin":true}')) is False
    assert log.record(delivery("new"))
    db = sqlite3.connect(path)
    digests = dict(db.execute("SELECT delivery_id, body_sha256 FROM deliveries").fetchall())
    assert digests["done"] == hashlib.sha256(b'{"n":2}').hexdigest()
    twin = hashlib.sha256(b'{"twin":true}').hexdigest()
    assert {digests["twin-a"], digests["twin-b"]} == {twin, None}  # one of the two keeps it
    indexes = {row[1] for row in db.execute("PRAGMA index_list(deliveries)")}
    assert {"deliveries_status", "deliveries_body_sha256", "deliveries_received_at"} <= indexes
    plan = " ".join(str(row[-1]) for row in db.execute("EXPLAIN QUERY PLAN " + _UNFINISHED))
    assert "USING INDEX deliveries_status" in plan
    db.close()
    for opened in logs:
        opened.close()
