"""The web edge records a delivery and queues its job in one SQLite transaction (the local
executor's queue is a table of the delivery log's file), from its spool a moment after the 202:
huey's own consumer runs a job written that way, a job that cannot be written takes its delivery
with it and both are committed once it can, duplicates queue nothing, a spool that cannot be
written is a 503, and jobs an older version left in `queue.db` are found again by the recovery
sweep."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from huey import Huey, MemoryHuey  # type: ignore[import-untyped]
from huey.storage import SqliteStorage  # type: ignore[import-untyped]

from freemad.bot.deliveries import DeliveryLog
from freemad.bot.executors import LocalExecutor
from freemad.bot.job import Job
from freemad.bot.ports import DeliveryLogUnavailable
from freemad.bot.queue import QUEUE_NAME, enqueue, recover_stale, register, waiting
from freemad.bot.spool import Spool
from freemad.bot.stores import recorder_with_job
from freemad.bot.web import create_app
from tests.bot.conftest import Env, Scripted, settings_for
from tests.github.payloads import labeled_issue


def client_for(env: Env) -> FlaskClient:
    return create_app(
        env.settings, executor=LocalExecutor(env.huey), deliveries=env.deliveries
    ).test_client()


def commit(client: FlaskClient) -> None:
    """What the spool's thread does a moment after each 202, now, in this thread (spool.py)."""
    spool = client.application.extensions["freemad.spool"]
    assert isinstance(spool, Spool)
    spool.drain()


def signed_headers(body: bytes, delivery_id: str) -> dict[str, str]:
    secret = b"hook-secret"  # conftest.settings_for's
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": delivery_id,
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest(),
    }


def post(client: FlaskClient, delivery_id: str, payload: dict[str, Any]) -> tuple[int, Any]:
    body = json.dumps(payload).encode()
    response = client.post("/webhook", data=body, headers=signed_headers(body, delivery_id))
    return response.status_code, response.get_json()


def jobs_in(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM task").fetchone()[0])


def test_a_delivery_and_its_job_are_one_commit_and_hueys_consumer_runs_it(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Scripted()
    env.register(run)
    client = client_for(env)

    def no_second_write(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the job went through huey's own enqueue: a second commit")

    monkeypatch.setattr(env.huey.storage, "enqueue", no_second_write)
    statements: list[str] = []
    spool = client.application.extensions["freemad.spool"]
    sink = spool.sink

    def traced(deliveries: Any) -> None:  # on the connection of the thread that commits
        env.deliveries._db().set_trace_callback(statements.append)
        try:
            sink(deliveries)
        finally:
            env.deliveries._db().set_trace_callback(None)

    monkeypatch.setattr(spool, "sink", traced)

    assert post(client, "d-1", labeled_issue()) == (202, {"accepted": "d-1"})
    commit(client)

    writes = [s.split()[0].upper() for s in statements if not s.upper().startswith("SELECT")]
    assert writes == ["BEGIN", "INSERT", "INSERT", "COMMIT"], statements
    assert "INTO deliveries" in statements[1] and "INTO task" in statements[2]
    assert jobs_in(env.settings.deliveries_path) == 1 and waiting(env.huey) == {"d-1"}

    task = env.huey.dequeue()  # huey's own reading of the row the edge wrote
    assert (task.name, task.args) == ("handle_delivery", ("d-1",))
    env.huey.execute(task)
    assert run.calls == ["d-1"] and env.deliveries.status("d-1") == "done"


def test_a_job_that_cannot_be_written_takes_its_delivery_with_it(env: Env) -> None:
    env.register(Scripted())
    client = client_for(env)
    path = env.settings.deliveries_path
    env.huey.storage.sql("SELECT 1")  # huey has made its tables in the log's file by now
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON task BEGIN SELECT RAISE(ABORT, 'full'); END"
        )

    assert post(client, "d-2", labeled_issue()) == (202, {"accepted": "d-2"})  # kept: spooled
    with pytest.raises(DeliveryLogUnavailable):
        commit(client)
    assert env.deliveries.status("d-2") is None  # rolled back with its job: nothing half-kept
    assert jobs_in(path) == 0
    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER refuse")
    commit(client)  # the spool still holds it: no redelivery needed
    assert env.deliveries.status("d-2") == "queued" and jobs_in(path) == 1


@pytest.mark.parametrize(
    "body",
    [
        b'{"action": "lone \\ud800", "repository": {"full_name": "o/r"}}',
        b'{"action": "opened", "score": NaN}',
        b'\xef\xbb\xbf{"action": "opened"}',
    ],
    ids=["lone-surrogate", "nan", "byte-order-mark"],
)
def test_a_payload_only_the_standard_json_reads_is_kept_like_any_other(
    env: Env, body: bytes
) -> None:
    # The edge reads payloads with orjson, which refuses these; Python's json takes them, and
    # so did the edge before orjson: they are accepted, spooled and recorded as before.
    env.register(Scripted())
    client = client_for(env)
    response = client.post("/webhook", data=body, headers=signed_headers(body, "odd-1"))
    assert (response.status_code, response.get_json()) == (202, {"accepted": "odd-1"})
    commit(client)
    kept = env.deliveries.get("odd-1")
    assert kept is not None and kept.body == body
    assert jobs_in(env.settings.deliveries_path) == 1
    if b"ud800" in body:  # SQLite stores UTF-8 text only: the action is left out, not the delivery
        assert kept.action is None and kept.repo == "o/r"
    else:
        assert kept.action == "opened"


def test_a_value_sqlite_cannot_store_holds_back_no_delivery_after_it(env: Env) -> None:
    # A spool commits its frames in one transaction: one value that SQLite refuses to bind
    # would fail every commit, and every delivery of that worker after it would wait for ever.
    env.register(Scripted())
    client = client_for(env)
    odd = [
        b'{"action": "x", "installation": {"id": 12345678901234567890123}, "n": 1}',
        b'{"action": "x", "installation": {"id": 1e400}, "repository": {"full_name": 7}}',
        b'{"action": "\\udfff", "repository": {"full_name": "\\ud800/r"}}',
    ]
    for number, body in enumerate([*odd, json.dumps(labeled_issue()).encode()]):
        headers = signed_headers(body, f"odd-{number}")
        assert client.post("/webhook", data=body, headers=headers).status_code == 202
    commit(client)
    for number in range(4):
        assert env.deliveries.status(f"odd-{number}") == "queued"
    assert jobs_in(env.settings.deliveries_path) == 4


def test_a_redelivery_or_a_replay_queues_no_second_job(env: Env) -> None:
    env.register(Scripted())
    client = client_for(env)
    assert post(client, "d-3", labeled_issue())[0] == 202
    commit(client)
    assert post(client, "d-3", labeled_issue()) == (200, {"duplicate": True, "delivery_id": "d-3"})
    assert post(client, "d-4", labeled_issue())[0] == 200  # the same body: a replay
    # Before the first is committed the spool takes both (test_spool.py races them for sure;
    # here the spool's thread may commit between the two); the commit keeps one job.
    assert post(client, "d-5", {"n": 5})[0] == 202
    assert post(client, "d-5", {"n": 5})[0] in (200, 202)
    commit(client)
    assert jobs_in(env.settings.deliveries_path) == 2
    assert env.deliveries.status("d-4") is None and env.deliveries.status("d-5") == "queued"


def test_a_spool_that_cannot_be_written_is_a_503_and_the_next_delivery_goes_through(
    env: Env,
) -> None:
    env.register(Scripted())
    client = client_for(env)
    spool_dir = env.settings.state_dir / "spool"
    spool_dir.parent.mkdir(parents=True, exist_ok=True)
    spool_dir.write_text("")  # a file where the spool's folder should be: nothing can be kept
    refused = client.post("/webhook", data=b"{}", headers=signed_headers(b"{}", "no-spool"))
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "30"
    assert env.deliveries.status("no-spool") is None and waiting(env.huey) == set()
    spool_dir.unlink()
    assert post(client, "spool-back", labeled_issue()) == (202, {"accepted": "spool-back"})
    commit(client)
    assert env.deliveries.status("spool-back") == "queued"


def test_only_a_queue_in_the_logs_own_file_shares_its_transaction(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    settings.state_dir.mkdir()
    log = DeliveryLog(settings.deliveries_path)
    elsewhere = Huey(QUEUE_NAME, storage_class=SqliteStorage, filename=str(tmp_path / "q.db"))
    in_memory = MemoryHuey(QUEUE_NAME)
    for huey in (elsewhere, in_memory):
        register(huey, Job(settings, deliveries=log))
        assert recorder_with_job(LocalExecutor(huey), log) is None
    same = Huey(QUEUE_NAME, storage_class=SqliteStorage, filename=str(settings.deliveries_path))
    register(same, Job(settings, deliveries=log))
    assert recorder_with_job(LocalExecutor(same), log) is not None
    assert recorder_with_job(object(), log) is None  # type: ignore[arg-type]  # not an executor
    log.close()


def test_jobs_left_in_an_older_queue_db_are_queued_again_by_the_sweep(env: Env) -> None:
    # An older version kept the queue in queue.db: a delivery recorded and enqueued there...
    old = Huey(
        QUEUE_NAME,
        storage_class=SqliteStorage,
        filename=str(env.settings.state_dir / "queue.db"),
        results=False,
    )
    register(old, Job(env.settings, deliveries=env.deliveries))
    payload = labeled_issue()
    from tests.bot.conftest import delivery

    assert env.deliveries.record(delivery("before-upgrade", "issues", payload))
    enqueue(old, "before-upgrade")
    env.register(Scripted())
    # ...is unknown to the queue now, and the sweep queues it again once a minute has passed.
    assert waiting(env.huey) == set()
    later = time.time() + 120
    found = recover_stale(env.deliveries, env.huey, 60, claims=env.claims, now=later)
    assert found == ["before-upgrade"] and waiting(env.huey) == {"before-upgrade"}
    old.storage.close()
