"""The local executor's durable queue: huey on SQLite (or Redis), and claims so a job completes once.

Huey deletes a message as a worker takes it, so a worker killed mid-job takes its message with
it. The delivery log is the source of truth instead: `done`, `ignored` and `parked` are final.
`Claims` (`state_dir/claims.db`) is the lock: a job runs a delivery only while holding its claim,
a lease renewed while it works that lapses when renewals stop, or at once when its process is
gone. A job claims first, reads the status after, and marks `done` still holding the claim, so
any second message for the delivery finds it finished. `recover_stale`, run by every worker at
start and each minute, re-enqueues unfinished deliveries with no message and no live claim.
"""

from __future__ import annotations

import logging
import time
import weakref
from typing import TYPE_CHECKING, Any

from freemad.bot.checkpoint import Checkpointer, no_autocheckpoint
from freemad.bot.job import Job
from freemad.bot.redis_client import redis_module

if TYPE_CHECKING:
    from freemad.bot.ports import ClaimStore, DeliveryStore
    from freemad.bot.settings import BotSettings

log = logging.getLogger("freemad.bot.queue")

QUEUE_NAME = "freemad-bot"
TASK_NAME = "handle_delivery"
HEARTBEAT_KEY = "freemad:worker-heartbeat"
RECOVER_AFTER = 60.0  # a queued or failed delivery with no message this long is re-enqueued
_TASKS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def make_huey(settings: BotSettings, *, background_checkpoint: bool = False) -> Any:
    """The queue: SQLite in the state directory, or Redis when FREEMAD_QUEUE_URL names one.

    `background_checkpoint` (the web edge): an enqueue never checkpoints the write-ahead log
    itself; a thread does it a moment later (checkpoint.py)."""
    from huey import RedisHuey  # type: ignore[import-untyped]

    if settings.queue_url is not None:
        redis_module()  # a clear line when the package is missing, before huey's ImportError
        return RedisHuey(QUEUE_NAME, url=settings.queue_url.get_secret_value(), results=False)
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    from huey import Huey
    from huey.storage import SqliteStorage  # type: ignore[import-untyped]

    # The queue's tables live in the delivery log's own file, so the web edge records a
    # delivery and enqueues its job in one transaction (`job_row`): one commit, not two.
    filename = str(settings.deliveries_path)
    checkpointer = Checkpointer(filename) if background_checkpoint else None

    class _Storage(SqliteStorage):  # type: ignore[misc]
        """WAL with synchronous=NORMAL: a committed job survives any crash of the process (a
        power cut may lose the last ones; the delivery log's sweep re-enqueues those), and an
        enqueue costs no fsync: 0.8 ms less on the acknowledgement path."""

        def _create_connection(self) -> Any:
            conn = super()._create_connection()
            conn.execute("pragma synchronous=1")
            if checkpointer is not None:
                no_autocheckpoint(conn)
            return conn

        def enqueue(self, data: bytes, priority: int | None = None) -> None:
            super().enqueue(data, priority)
            if checkpointer is not None:
                checkpointer.nudge()

    return Huey(QUEUE_NAME, storage_class=_Storage, filename=filename, results=False)


def register(huey: Any, job: Job) -> Any:
    """Register `handle_delivery(delivery_id)` on `huey`, running `job`, and return it (a huey
    task). Tests build the `Job` with a recording forge and a scripted `run`. The web process
    registers the task too, only to enqueue it: a `Job` opens nothing until it runs.
    """
    backoff = job.backoff

    # huey's own retries only cover a failure of the bookkeeping itself: a failing delivery is
    # retried by `Job`, which counts attempts in claims.db (durable, unlike huey's count).
    @huey.task(  # type: ignore[untyped-decorator]  # huey ships no type hints
        retries=backoff.attempts - 1,
        retry_delay=backoff.base,
        retry_backoff=backoff.factor,
        name=TASK_NAME,
    )
    def handle_delivery(delivery_id: str) -> str:
        return job.handle(delivery_id)

    _TASKS[huey] = handle_delivery
    return handle_delivery


def enqueue(huey: Any, delivery_id: str) -> None:
    """Put one `handle_delivery(delivery_id)` message on the queue (`register` first)."""
    _task(huey)(delivery_id)


def job_row(huey: Any, delivery_id: str) -> tuple[str, tuple[object, ...]]:
    """The statement that puts a `handle_delivery(delivery_id)` message in a SQLite queue's
    table: what `enqueue` does, for a caller that runs it inside a transaction of its own on
    the queue's file (the web edge, recording the delivery in the same commit). The message is
    huey's own serialisation of the task; huey's consumer takes it like any other."""
    message = _task(huey).s(delivery_id)
    data = huey.serialize_task(message)
    return _INSERT_JOB, (huey.storage.name, data, message.priority or 0)


def _task(huey: Any) -> Any:
    """The `handle_delivery` task `register` put on `huey`."""
    task = _TASKS.get(huey)
    if task is None:
        raise RuntimeError("register(huey, job) before enqueueing on this huey instance")
    return task


# huey's SqliteStorage.enqueue, into its `task` table (tests/bot/test_one_commit.py runs a job
# written this way through huey's own dequeue, so a change of huey's table shows there).
_INSERT_JOB = "INSERT INTO task (queue, data, priority) VALUES (?, ?, ?)"


def waiting(huey: Any) -> set[str]:
    """The deliveries with a message in the queue or the schedule (retries waiting their turn)."""
    return {str(task.args[0]) for task in [*huey.pending(), *huey.scheduled()] if task.args}


def recover_stale(
    deliveries: DeliveryStore,
    huey: Any,
    older_than: float = RECOVER_AFTER,
    *,
    claims: ClaimStore,
    now: float | None = None,
) -> list[str]:
    """Re-enqueue every unfinished delivery that nothing will otherwise run; their ids.

    `running` with no live claim: its worker died. `queued` or `failed` (after an attempt) with
    no message for `older_than` seconds: its message was lost (taken by a worker killed before
    it claimed, or dropped between huey's schedule and queue). A `failed` delivery that never had
    an attempt was refused at submission; GitHub's redelivery brings it back, not this sweep.
    Every unfinished delivery is looked at, however many newer ones the log holds.
    """
    now = time.time() if now is None else now
    queued = waiting(huey)
    recovered = []
    for record in deliveries.unfinished():
        status, delivery_id = record.status, record.delivery_id
        if status not in ("queued", "running", "failed") or delivery_id in queued:
            continue
        if status == "failed" and record.attempts == 0:
            continue
        if status != "running" and now - record.updated_at < older_than:
            continue
        if claims.live(delivery_id):
            continue
        enqueue(huey, delivery_id)
        recovered.append(delivery_id)
    if recovered:
        log.warning("re-enqueued %d stale deliveries: %s", len(recovered), ", ".join(recovered))
    return recovered
