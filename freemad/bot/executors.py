"""Where the web edge hands accepted deliveries: the durable queue, worked by `freemad bot worker`.

The web edge keeps a delivery and its job on huey's queue (SQLite, by its spool; or Redis) and
answers; nothing here waits on GitHub. With `FREEMAD_EXECUTOR=local` a job runs the delivery
through the router (`job.run_delivery`); with `actions` (`ActionsExecutor`) the bot stays free of agents: a job
checks who asked and dispatches the repository's FREE-MAD workflow (`dispatch.dispatch_delivery`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from freemad.bot.dispatch import WORKFLOW, Dispatch, dispatch_for
from freemad.bot.job import Job
from freemad.bot.queue import HEARTBEAT_KEY, enqueue, job_row, make_huey, register

if TYPE_CHECKING:
    from freemad.bot.ports import Delivery, Executor
    from freemad.bot.settings import BotSettings

__all__ = ["WORKFLOW", "ActionsExecutor", "Dispatch", "LocalExecutor", "dispatch_for"]


def executor_from(settings: BotSettings, *, background_checkpoint: bool = False) -> Executor:
    """The executor FREEMAD_EXECUTOR names (`local` by default); `background_checkpoint` as
    `make_huey`'s (the web edge's). Either enqueues; the job `Job` picks by the same setting."""
    huey = make_huey(settings, background_checkpoint=background_checkpoint)
    register(huey, Job(settings))
    return ActionsExecutor(huey) if settings.executor == "actions" else LocalExecutor(huey)


class LocalExecutor:
    """Deliveries onto the local queue; the web edge has recorded each one already."""

    quick_submit = True  # an enqueue, never a call to GitHub

    def __init__(self, huey: Any) -> None:
        self.huey = huey

    def submit(self, delivery: Delivery) -> None:
        enqueue(self.huey, delivery.delivery_id)

    @property
    def queue_file(self) -> Path | None:
        """The SQLite file whose table is the queue; None when the queue is in Redis."""
        filename = getattr(self.huey.storage, "filename", None)
        return Path(filename) if isinstance(filename, str) else None

    def job_row(self, delivery: Delivery) -> tuple[str, tuple[object, ...]]:
        """`submit` as one SQL statement on `queue_file`, for a transaction of the caller's."""
        return job_row(self.huey, delivery.delivery_id)

    def depth(self) -> int | None:
        """Jobs waiting: queued, and retries scheduled for later."""
        return int(self.huey.pending_count()) + int(self.huey.scheduled_count())

    def heartbeat(self) -> float | None:
        """When a worker last said it was alive (a row in the queue's own store)."""
        value = self.huey.get(HEARTBEAT_KEY, peek=True)
        return float(value) if isinstance(value, (int, float)) else None


class ActionsExecutor(LocalExecutor):
    """Deliveries onto the same durable queue, for `freemad bot worker`, whose job dispatches
    the repository's workflow instead of running the work (`dispatch.dispatch_delivery`)."""
