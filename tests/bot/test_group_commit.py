"""The web edge's group commit on real SQLite and a real file lock: the deliveries of threads
that wait while the gate is held (by another worker process) are committed in one transaction,
each thread gets its own answer, and a failure reaches every thread of its batch without
stalling the next one."""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from freemad.bot.executors import LocalExecutor
from freemad.bot.group_commit import GroupCommit, WriteGate
from freemad.bot.ports import Delivery, DeliveryLogUnavailable
from freemad.bot.queue import waiting
from freemad.bot.stores import Entry, JobRecorder, recorder_with_job
from freemad.bot.web import create_app
from tests.bot.conftest import Env, Scripted, delivery
from tests.github.payloads import labeled_issue


@contextmanager
def gate_held_elsewhere(path: Path) -> Iterator[None]:
    """The gate taken as another worker process takes it: its own open file, flock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def wait_until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def recorder(env: Env) -> JobRecorder:
    env.register(Scripted())
    made = recorder_with_job(LocalExecutor(env.huey), env.deliveries)
    assert made is not None, "the queue is a table of the delivery log's file"
    return made


def submit_each(
    group: GroupCommit[Entry], record: JobRecorder, deliveries: Sequence[Delivery]
) -> tuple[list[threading.Thread], dict[int, Any]]:
    """One thread per delivery, each submitting its own: the threads and (once joined) what
    each got, its answer or the exception it raised."""
    got: dict[int, Any] = {}

    def one(number: int, item: Delivery) -> None:
        try:
            got[number] = group.submit(record.entry(item))
        except Exception as exc:
            got[number] = exc

    threads = [threading.Thread(target=one, args=pair) for pair in enumerate(deliveries)]
    for thread in threads:
        thread.start()
    return threads, got


def issue(delivery_id: str) -> Delivery:
    return delivery(delivery_id, "issues", {**labeled_issue(), "n": delivery_id})


def test_threads_waiting_for_the_gate_are_committed_in_one_transaction(env: Env) -> None:
    record = recorder(env)
    batches: list[int] = []

    def write(entries: Sequence[Entry]) -> list[bool]:
        batches.append(len(entries))
        return record.write(entries)

    group = GroupCommit(WriteGate(env.settings.state_dir / "ack.lock"), write)
    items = [issue(f"g-{n}") for n in range(4)]
    items.append(items[0])  # GitHub's redelivery racing the original, in the same batch
    with gate_held_elsewhere(env.settings.state_dir / "ack.lock"):
        threads, got = submit_each(group, record, items)
        # One thread waits on the gate; every delivery is left with it and none is written.
        wait_until(lambda: len(group._waiting) == len(items))
        assert batches == [] and env.deliveries.status("g-0") is None
    for thread in threads:
        thread.join(timeout=30)
    assert batches == [5]
    assert got[1] is got[2] is got[3] is True
    assert sorted([got[0], got[4]]) == [False, True]  # one of the pair is new, the other not
    assert all(env.deliveries.status(f"g-{n}") == "queued" for n in range(4))
    assert waiting(env.huey) == {f"g-{n}" for n in range(4)}  # one job each, committed with it


def test_a_failed_batch_fails_each_of_its_threads_and_the_next_batch_is_written(
    env: Env,
) -> None:
    record = recorder(env)
    batches: list[int] = []

    def write(entries: Sequence[Entry]) -> list[bool]:
        batches.append(len(entries))
        if len(batches) == 1:
            raise DeliveryLogUnavailable("the delivery log is down")
        return record.write(entries)

    group = GroupCommit(WriteGate(env.settings.state_dir / "ack.lock"), write)
    items = [issue(f"f-{n}") for n in range(3)]
    with gate_held_elsewhere(env.settings.state_dir / "ack.lock"):
        threads, got = submit_each(group, record, items)
        wait_until(lambda: len(group._waiting) == len(items))
    for thread in threads:
        thread.join(timeout=30)
    assert all(isinstance(got[n], DeliveryLogUnavailable) for n in range(3)), got
    assert all(env.deliveries.status(f"f-{n}") is None for n in range(3))  # nothing kept
    # The writing was handed on, not left with a thread that gave up: the next one is written.
    assert group.submit(record.entry(issue("f-after"))) is True
    assert batches == [3, 1] and env.deliveries.status("f-after") == "queued"


def post(client: Any, delivery_id: str) -> Any:
    body = json.dumps({**labeled_issue(), "n": delivery_id}).encode()
    signature = "sha256=" + hmac.new(b"hook-secret", body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": delivery_id,
        "X-Hub-Signature-256": signature,
    }
    return client.post("/webhook", data=body, headers=headers)


def test_a_gate_that_cannot_be_opened_is_a_503_and_the_next_delivery_goes_through(
    env: Env,
) -> None:
    env.register(Scripted())
    app = create_app(env.settings, executor=LocalExecutor(env.huey), deliveries=env.deliveries)
    client = app.test_client()
    lock = env.settings.state_dir / "ack.lock"
    lock.mkdir(parents=True)  # a folder where the lock file should be: it cannot be opened
    refused = post(client, "no-gate")
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "30"
    assert env.deliveries.status("no-gate") is None and waiting(env.huey) == set()
    lock.rmdir()
    assert post(client, "gate-back").status_code == 202
    assert env.deliveries.status("gate-back") == "queued"
