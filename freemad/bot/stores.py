"""Where the delivery log and the claims live: next to the queue.

With `FREEMAD_QUEUE_URL` set, the queue is in Redis and so are these (`redis_stores`), so that
every host sharing the queue shares them too. Without it, they are SQLite files in the state
directory, as the SQLite queue is. Neither opens anything until first used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from freemad.bot.claims import Claims
from freemad.bot.deliveries import DeliveryLog

if TYPE_CHECKING:
    from freemad.bot.ports import ClaimStore, Delivery, DeliveryStore, Executor
    from freemad.bot.settings import BotSettings


def delivery_log(settings: BotSettings, *, background_checkpoint: bool = False) -> DeliveryStore:
    """The delivery log: in the queue's Redis, or `deliveries.sqlite3` in the state directory
    (checkpointed by a thread of its own with `background_checkpoint`: the web edge)."""
    if settings.queue_url is not None:
        from freemad.bot.redis_stores import RedisDeliveryLog

        return RedisDeliveryLog(settings.queue_url.get_secret_value())
    return DeliveryLog(settings.deliveries_path, background_checkpoint=background_checkpoint)


def claims_store(settings: BotSettings) -> ClaimStore:
    """The claims and their journal: in the queue's Redis, or `claims.db` in the state directory."""
    if settings.queue_url is not None:
        from freemad.bot.redis_stores import RedisClaims

        return RedisClaims(settings.queue_url.get_secret_value())
    return Claims(settings.state_dir / "claims.db")


Entry = tuple["Delivery", tuple[str, tuple[object, ...]]]  # a delivery and its job's row


class JobRecorder:
    """Deliveries and their jobs into the delivery log's file, in one transaction per call.

    `entry` builds a delivery's job row (huey's pickle of the message) outside any lock; `write`
    commits a batch of entries at once (the web edge's spool) and says which are new.
    """

    def __init__(self, log: DeliveryLog, job_row: Callable[[Delivery], Any]) -> None:
        self.log = log
        self._job_row = job_row

    def entry(self, delivery: Delivery) -> Entry:
        return delivery, self._job_row(delivery)

    def write(self, entries: Sequence[Entry]) -> list[bool]:
        return self.log.record_many(entries)

    def __call__(self, delivery: Delivery) -> bool:
        """Record one delivery with its job: whether it is new."""
        return self.write([self.entry(delivery)])[0]


def recorder_with_job(executor: Executor, deliveries: DeliveryStore) -> JobRecorder | None:
    """How the web edge records deliveries and enqueues their jobs in one transaction, when the
    executor's queue is a table of the delivery log's own SQLite file (the local executor
    without Redis): one commit for one acknowledgement or several (spool.py), and never
    a delivery recorded without its job. None otherwise: the log records, then the executor
    submits."""
    queue_file = getattr(executor, "queue_file", None)
    job_row = getattr(executor, "job_row", None)
    if not isinstance(deliveries, DeliveryLog) or queue_file is None or job_row is None:
        return None
    if Path(queue_file).resolve() != deliveries.path.resolve():
        return None
    return JobRecorder(deliveries, job_row)
