"""A real `freemad bot worker` process, SIGKILLed mid-debate and restarted: the job completes once.

The delivery arrives through the real web edge (Flask's test client, signed), sits in the SQLite
queue, and is worked by real worker processes running real mock agents (each call sleeps 3 s),
posting to the loopback GitHub stand-in.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.bot.claims import Claims
from freemad.bot.deliveries import DeliveryLog
from freemad.bot.executors import LocalExecutor, executor_from
from freemad.bot.job import Job
from freemad.bot.queue import make_huey, register
from freemad.bot.settings import BotSettings
from freemad.bot.web import create_app
from freemad.github.standin import StandIn, StandInCall
from tests.github.payloads import labeled_issue

BIN = Path(sys.executable).parent
SECRET = "worker-test-secret"
TOKEN = "ghs_worker_test_token"


def write_config(folder: Path) -> Path:
    mock = str(BIN / "freemad-mock-agent")
    agents = [
        {
            "id": f"mock-{persona}",
            "cli_command": f"{mock} --persona {persona} --delay 3",
            "cli_mode_arg": True,
            "timeout": 60,
        }
        for persona in ("iterative", "recursive")
    ]
    config = {
        "agents": agents,
        "debate": {"rounds": 1},
        "security": {"cli_allowed_commands": [mock]},
        "output": {"save_transcript": False},
    }
    path = folder / "freemad.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


class Bot:
    """The environment a deployment gives both the web edge and the workers."""

    def __init__(self, tmp_path: Path, api: StandIn) -> None:
        self.tmp_path, self.api = tmp_path, api
        self.environ = {
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(tmp_path),
            "FREEMAD_WEBHOOK_SECRET": SECRET,
            "FREEMAD_GITHUB_TOKEN": TOKEN,
            "FREEMAD_GITHUB_API_URL": api.base_url,
            "FREEMAD_STATE_DIR": str(tmp_path / "state"),
            "FREEMAD_CONFIG": str(write_config(tmp_path)),
            "FREEMAD_LOG_LEVEL": "INFO",
        }
        if os.environ.get("PYTHONPATH"):  # the workers run the code under test, not an install
            self.environ["PYTHONPATH"] = os.environ["PYTHONPATH"]
        self.settings = BotSettings.from_env(self.environ)
        self.deliveries = DeliveryLog(self.settings.deliveries_path)
        self.workers: list[subprocess.Popen[bytes]] = []

    def post(self, event: str, payload: dict[str, Any], delivery_id: str) -> int:
        self.api.seed(payload)  # what the event is about exists on GitHub
        body = json.dumps(payload).encode()
        signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        app = create_app(self.settings, executor=executor_from(self.settings))
        reply = app.test_client().post(
            "/webhook",
            data=body,
            headers={
                "X-GitHub-Event": event,
                "X-GitHub-Delivery": delivery_id,
                "X-Hub-Signature-256": signature,
                "Content-Type": "application/json",
            },
        )
        return reply.status_code

    def start_worker(self) -> subprocess.Popen[bytes]:
        log = (self.tmp_path / f"worker-{len(self.workers) + 1}.log").open("wb")
        worker = subprocess.Popen(
            [sys.executable, "-m", "freemad.bot.worker", "--workers", "1"],
            env=self.environ,
            cwd=self.tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        self.workers.append(worker)
        return worker

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.tmp_path.glob("worker-*.log")))

    def wait_for(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            for worker in self.workers:
                if worker.poll() not in (None, -signal.SIGKILL):
                    pytest.fail(f"a worker exited with {worker.returncode}:\n{self.logs()}")
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}:\n{self.logs()}")
            time.sleep(0.05)

    def stop(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        self.deliveries.close()


@pytest.fixture
def api() -> Iterator[StandIn]:
    with StandIn(token=TOKEN, permissions={"alice": "write"}) as standin:
        yield standin


@pytest.fixture
def bot(tmp_path: Path, api: StandIn) -> Iterator[Bot]:
    made = Bot(tmp_path, api)
    yield made
    made.stop()


def result_comments(api: StandIn) -> list[StandInCall]:
    return [c for c in api.calls if c.method == "POST" and c.path.endswith("/issues/7/comments")]


def test_a_worker_killed_mid_job_is_replaced_and_the_job_completes_exactly_once(
    bot: Bot, api: StandIn
) -> None:
    assert bot.post("issues", labeled_issue("freemad:debate"), "delivery-1") == 202
    # Committed from the web worker's spool a moment after its 202 (spool.py).
    bot.wait_for(lambda: bot.deliveries.status("delivery-1") == "queued", 30, "the commit")

    first = bot.start_worker()
    bot.wait_for(lambda: bot.deliveries.status("delivery-1") == "running", 30, "the job to start")
    # The debate's status comment is posted before its first agent call (3 s): killed in there.
    bot.wait_for(lambda: len(result_comments(api)) == 1, 30, "the status comment")
    first.send_signal(signal.SIGKILL)
    first.wait()
    # The debate's status comment, posted at once; no result yet.
    (posted,) = result_comments(api)
    assert posted.body["body"].startswith("FREE-MAD is starting a debate")
    assert bot.deliveries.status("delivery-1") == "running"  # as the killed worker left it

    second = bot.start_worker()
    bot.wait_for(lambda: bot.deliveries.status("delivery-1") == "done", 90, "the job to finish")

    # The rerun edited the killed run's status comment into the result: still one comment.
    assert result_comments(api) == [posted]
    assert "FREE-MAD debate finished" in api.comments[posted.reply["id"]]["body"]
    (record,) = bot.deliveries.recent()
    assert (record.status, record.attempts) == ("done", 2)
    assert record.detail.startswith("debate ")

    # The queue is empty, the heartbeat fresh, and no claim is left behind.
    huey = make_huey(bot.settings)
    register(huey, Job(bot.settings))
    executor = LocalExecutor(huey)
    bot.wait_for(lambda: executor.heartbeat() is not None, 15, "a heartbeat")
    assert executor.depth() == 0
    beat = executor.heartbeat()
    assert beat is not None and time.time() - beat < 30
    claims = Claims(bot.settings.state_dir / "claims.db")
    # The job marks the delivery done, then releases its claim (job.py): a moment apart.
    bot.wait_for(lambda: not claims.live("delivery-1"), 30, "the claim's release")
    claims.close()
    huey.storage.close()

    # SIGTERM lets the worker finish what it runs and exit cleanly.
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=30) == 0
    assert len(result_comments(api)) == 1
