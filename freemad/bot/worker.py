"""`freemad bot worker`: works the local queue (huey's consumer), beats for `/healthz` and sweeps.

Each message on the queue is one job (`job.Job`). The worker starts huey's consumer, a heartbeat
`/healthz` reads, and the recovery sweep (`queue.recover_stale`) that brings back deliveries whose
message or worker was lost; SIGTERM finishes the running jobs, then exits.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from freemad.bot.job import Job
from freemad.bot.queue import HEARTBEAT_KEY, RECOVER_AFTER, make_huey, recover_stale, register
from freemad.errors import FreemadError

if TYPE_CHECKING:
    from freemad.bot.ports import ClaimStore, DeliveryStore

log = logging.getLogger("freemad.bot.worker")

UPKEEP_EVERY = 10.0  # seconds between heartbeats; the sweep runs every sixth


def main(argv: list[str] | None = None) -> int:
    """`freemad bot worker`: settings from the environment; SIGTERM finishes running jobs, then exits."""
    parser = argparse.ArgumentParser(prog="freemad bot worker")
    parser.add_argument("--workers", type=int, default=2, help="jobs run at once (default 2)")
    parser.add_argument("--worker-type", choices=("thread", "process"), default="thread")
    args = parser.parse_args(argv)
    from freemad.bot.json_logs import configure_json_logging
    from freemad.bot.settings import BotSettings
    from freemad.bot.stores import claims_store, delivery_log

    try:
        settings = BotSettings.from_env(os.environ)
        configure_json_logging(settings)
        huey = make_huey(settings)
        register(huey, Job(settings))
        deliveries = delivery_log(settings)
        claims = claims_store(settings)
        deliveries.recent(1)  # an unreachable delivery log stops the worker here, in one line
        recover_stale(deliveries, huey, claims=claims)
    except FreemadError as exc:
        print(f"freemad bot worker: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    consumer = huey.create_consumer(
        workers=max(1, args.workers), worker_type=args.worker_type, graceful_signal="TERM"
    )
    queue = "Redis" if settings.queue_url is not None else f"SQLite in {settings.state_dir}"
    log.info("worker started: %d %s workers on the %s queue", args.workers, args.worker_type, queue)
    stop = threading.Event()
    upkeep = threading.Thread(
        target=_upkeep, args=(huey, deliveries, claims, stop), name="upkeep", daemon=True
    )
    upkeep.start()
    try:
        consumer.run()
    finally:
        stop.set()
    return 0


def _upkeep(
    huey: Any, deliveries: DeliveryStore, claims: ClaimStore, stop: threading.Event
) -> None:
    """The heartbeat `/healthz` reads, and the recovery sweep, until `stop`."""
    beats = 0
    while True:
        try:
            huey.put(HEARTBEAT_KEY, time.time())
            if beats % 6 == 5:
                recover_stale(deliveries, huey, RECOVER_AFTER, claims=claims)
        except Exception:  # a busy database must not end the heartbeat for good
            log.exception("worker upkeep failed")
        beats += 1
        if stop.wait(UPKEEP_EVERY):
            return


if __name__ == "__main__":
    sys.exit(main())
