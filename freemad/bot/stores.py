"""Where the delivery log and the claims live: next to the queue.

With `FREEMAD_QUEUE_URL` set, the queue is in Redis and so are these (`redis_stores`), so that
every host sharing the queue shares them too. Without it, they are SQLite files in the state
directory, as the SQLite queue is. Neither opens anything until first used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

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


def recorder_with_job(
    executor: Executor, deliveries: DeliveryStore
) -> Callable[[Delivery], bool] | None:
    """How the web edge records a delivery and enqueues its job in one transaction, when the
    executor's queue is a table of the delivery log's own SQLite file (the local executor
    without Redis): one commit per acknowledgement instead of two, and never a delivery
    recorded without its job. None otherwise: the log records, then the executor submits."""
    queue_file = getattr(executor, "queue_file", None)
    job_row = getattr(executor, "job_row", None)
    if not isinstance(deliveries, DeliveryLog) or queue_file is None or job_row is None:
        return None
    if Path(queue_file).resolve() != deliveries.path.resolve():
        return None
    log = deliveries

    def record_with_job(delivery: Delivery) -> bool:
        return log.record(delivery, status="queued", job=job_row(delivery))

    return record_with_job
