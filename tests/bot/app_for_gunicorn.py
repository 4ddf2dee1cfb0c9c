"""The real `create_app`, for real gunicorn in tests: each submission is appended to a file, or
(with FREEMAD_TEST_QUEUE set) goes on the bot's own SQLite queue, as `app_from_env()` does it.

gunicorn imports this in each worker (preload_app is off); `SUBMISSIONS_ENV` names the file, a
JSON line per submitted delivery, written with one `write` on an O_APPEND descriptor so lines
from several worker processes never interleave.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from freemad.bot.executors import executor_from
from freemad.bot.json_logs import configure_json_logging
from freemad.bot.ports import Delivery, Executor
from freemad.bot.settings import BotSettings
from freemad.bot.stores import delivery_log
from freemad.bot.web import create_app

SUBMISSIONS_ENV = "FREEMAD_TEST_SUBMISSIONS"
QUEUE_ENV = "FREEMAD_TEST_QUEUE"  # set: the real local executor instead of the file


class FileExecutor:
    def __init__(self, path: Path) -> None:
        self.path = path

    def submit(self, delivery: Delivery) -> None:
        line = json.dumps({"delivery_id": delivery.delivery_id, "pid": os.getpid()}) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def depth(self) -> int | None:
        return len(self.path.read_text().splitlines()) if self.path.exists() else 0

    def heartbeat(self) -> float | None:
        return time.time()


settings = BotSettings.from_env(os.environ)
configure_json_logging(settings)
# As app_from_env() builds it: checkpoints on a thread of their own.
deliveries = delivery_log(settings, background_checkpoint=True)
executor: Executor
if os.environ.get(QUEUE_ENV):
    # The bot's own executor, its queue a table of the delivery log's file: each delivery and
    # its job are committed together, with those of the worker's other waiting threads.
    executor = executor_from(settings, background_checkpoint=True)
else:
    executor = FileExecutor(Path(os.environ[SUBMISSIONS_ENV]))
app = create_app(settings, executor=executor, deliveries=deliveries)
