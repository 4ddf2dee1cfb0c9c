"""The bot's tests share one environment: real SQLite files, a real huey, a scripted run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from huey.exceptions import RetryTask

from freemad.bot.claims import Claims
from freemad.bot.deliveries import DeliveryLog
from freemad.bot.executors import LocalExecutor
from freemad.bot.job import Backoff, Job, Run
from freemad.bot.journal import Claim
from freemad.bot.ports import ClaimStore, Delivery
from freemad.bot.queue import (
    make_huey,
    register,
)
from freemad.bot.settings import BotSettings
from freemad.bot.stores import recorder_with_job
from freemad.github.forge import Forge, RecordingForge
from freemad.github.thread import Outcome
from tests.github.payloads import REPO, labeled_issue


def settings_for(tmp_path: Path, **values: Any) -> BotSettings:
    return BotSettings(
        webhook_secret=cast(Any, "hook-secret"),
        github_token=cast(Any, "t0ken"),
        state_dir=tmp_path / "state",
        **values,
    )


def delivery(delivery_id: str, event: str, payload: dict[str, Any]) -> Delivery:
    body = json.dumps(payload).encode()
    return Delivery(delivery_id, event, payload.get("action"), 42, REPO, body)


class Scripted:
    """A `run` for the job: fails with each of `failures` in turn, then succeeds."""

    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.calls: list[str] = []

    def __call__(self, settings: Any, job: Delivery, forge: Forge, claim: Claim) -> Outcome:
        self.calls.append(job.delivery_id)
        if self.failures:
            raise self.failures.pop(0)
        return Outcome("debate", run_id="run-1", status="completed")


class Env:
    def __init__(self, tmp_path: Path) -> None:
        self.settings = settings_for(tmp_path)
        self.huey = make_huey(self.settings)
        self.deliveries = DeliveryLog(self.settings.deliveries_path)
        self.claims = Claims(self.settings.state_dir / "claims.db")
        self.forge = RecordingForge()
        self.delays: list[float] = []  # what each RetryTask asked huey for

        @self.huey.post_execute()
        def _record(task: Any, value: Any, exc: BaseException | None) -> None:
            if isinstance(exc, RetryTask):
                self.delays.append(exc.delay)

    def job(
        self, run: Run, backoff: Backoff | None = None, claims: ClaimStore | None = None
    ) -> Job:
        """A job on this environment's delivery log and claims (or `claims`), running `run`,
        posting through the recording forge."""
        return Job(
            self.settings,
            deliveries=self.deliveries,
            claims=claims or self.claims,
            run=run,
            forge_factory=lambda settings, installation: self.forge,
            backoff=backoff or Backoff(attempts=3, base=0.01, factor=2.0),
        )

    def register(self, run: Run, backoff: Backoff | None = None) -> None:
        register(self.huey, self.job(run, backoff))

    def accept(self, job: Delivery) -> None:
        """What the web edge does: record the delivery and queue its job in one commit."""
        record = recorder_with_job(LocalExecutor(self.huey), self.deliveries)
        assert record is not None, "the queue is a table of the delivery log's file"
        assert record(job)

    @staticmethod
    def wait_for(check: Callable[[], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.02)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    made = Env(tmp_path)
    yield made
    made.deliveries.close()
    made.claims.close()
    made.huey.storage.close()


@pytest.fixture
def consumer(env: Env) -> Iterator[Callable[[], Any]]:
    """Start huey's real consumer (a worker thread and the scheduler) when the test asks."""
    started: list[Any] = []
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}

    def start() -> Any:
        made = env.huey.create_consumer(
            workers=1, periodic=False, initial_delay=0.01, max_delay=0.05, check_worker_health=False
        )
        made.start()
        for number, handler in saved.items():  # the consumer took them; pytest wants them back
            signal.signal(number, handler)
        started.append(made)
        return made

    yield start
    for made in started:
        made.stop(graceful=True)


LABELED = delivery("d-label", "issues", labeled_issue())


def dead_pid() -> int:
    """The pid of a process that has ended (an owner whose process is gone)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid
