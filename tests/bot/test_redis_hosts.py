"""What the Redis delivery log and claims are for: a delivery the web edge of one "host" recorded
is worked by a job on another host with a state directory of its own; and a Redis that does not
answer is one line, wherever it is met. Redis is a real `redis-server` on loopback.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from freemad.bot.claims import Claims
from freemad.bot.deliveries import DeliveryLog
from freemad.bot.job import Job
from freemad.bot.journal import Claim
from freemad.bot.ports import Delivery, Effect, Owner
from freemad.bot.queue import make_huey, recover_stale, register, waiting
from freemad.bot.stores import claims_store, delivery_log
from freemad.errors import FreemadError
from freemad.github.forge import Forge, RecordingForge
from freemad.github.thread import Outcome
from tests.bot import test_end_to_end
from tests.bot.test_redis_stores import delivery, settings_for
from tests.github.payloads import REPO, labeled_issue

# The fixture of the end-to-end test: a real redis-server on loopback, stopped after the test.
redis_url = test_end_to_end.redis_url
free_port = test_end_to_end.free_port

SECRET = "redis-state-secret"


# --- one host records, another works --------------------------------------------------------


def post(app: Any, delivery_id: str, payload: dict[str, Any]) -> int:
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    reply = app.test_client().post(
        "/webhook",
        data=body,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": delivery_id,
            "X-Hub-Signature-256": signature,
            "Content-Type": "application/json",
        },
    )
    return int(reply.status_code)


def test_a_delivery_recorded_on_one_host_is_worked_on_another(
    tmp_path: Path, redis_url: str
) -> None:
    from freemad.bot.executors import executor_from
    from freemad.bot.web import create_app

    host_a = settings_for(tmp_path / "host-a", redis_url)
    host_b = settings_for(tmp_path / "host-b", redis_url)  # another disk, the same Redis
    app = create_app(host_a, executor=executor_from(host_a))
    assert post(app, "d-shared", labeled_issue()) == 202
    assert post(app, "d-shared", labeled_issue()) == 200  # a redelivery: a duplicate

    huey_b = make_huey(host_b)
    register(huey_b, Job(host_b))
    assert waiting(huey_b) == {"d-shared"}

    ran: list[str] = []

    def run(settings: Any, job: Delivery, forge: Forge, claim: Claim) -> Outcome:
        ran.append(job.delivery_id)
        assert settings.state_dir == tmp_path / "host-b" and claim.attempt == 1
        return Outcome("debate", run_id="run-1", status="completed")

    job = Job(host_b, run=run, forge_factory=lambda settings, installation: RecordingForge())
    assert job.handle("d-shared") == "done"
    assert ran == ["d-shared"]
    assert job.handle("d-shared") == "done"  # a second message finds it finished
    assert ran == ["d-shared"]

    health = app.test_client().get("/healthz").get_json()
    assert health["deliveries"] == {"done": 1}
    seen = delivery_log(host_a)
    try:
        assert seen.recent()[0].attempts == 1 and "run-1" in seen.recent()[0].detail
    finally:
        seen.close()
    job.deliveries.close()
    job.claims.close()
    for state in (tmp_path / "host-a", tmp_path / "host-b"):
        assert not state.exists() or not any(state.iterdir()), list(state.iterdir())


def test_the_sweep_finds_work_a_worker_on_another_host_left(tmp_path: Path, redis_url: str) -> None:
    host_b = settings_for(tmp_path / "host-b", redis_url)
    huey = make_huey(host_b)
    register(huey, Job(host_b))
    log, claims = delivery_log(host_b), claims_store(host_b)
    try:
        for name in ("killed", "alive", "done"):
            log.record(delivery(name))
            log.mark(name, "running", attempt=True)
        log.mark("done", "done")
        claims.claim("alive", Owner("host-a", 1, "still-at-it"))
        recovered = recover_stale(log, huey, 60, claims=claims, now=time.time() + 120)
        assert recovered == ["killed"]
        assert waiting(huey) == {"killed"}
    finally:
        log.close()
        claims.close()


# --- a Redis that does not answer -----------------------------------------------------------


def test_an_unreachable_redis_is_one_line_naming_the_url_without_its_password() -> None:
    pytest.importorskip("redis", reason="the redis extra is not installed")
    from freemad.bot.redis_client import RedisStateError
    from freemad.bot.redis_stores import RedisClaims, RedisDeliveryLog

    port = free_port()
    url = f"redis://:hunter2-pw@127.0.0.1:{port}/0?password=hunter2-pw"
    log, claims = RedisDeliveryLog(url), RedisClaims(url)
    calls: list[Callable[[], object]] = [
        lambda: log.record(delivery()),
        lambda: log.get("d"),
        lambda: log.mark("d", "done"),
        lambda: log.status("d"),
        lambda: log.recent(5),
        lambda: log.counts(since=0),
        lambda: claims.claim("d", Owner.here()),
        lambda: claims.renew("d", Owner.here()),
        lambda: claims.holds("d", Owner.here()),
        lambda: claims.live("d"),
        lambda: claims.release("d", Owner.here()),
        lambda: claims.effect("d", "comment", 1),
        lambda: claims.record("d", "comment", 1, Effect(REPO, 7, 1, "u")),
    ]
    for call in calls:
        with pytest.raises(RedisStateError) as raised:
            call()
        assert isinstance(raised.value, FreemadError)
        line = raised.value.one_line()
        assert f"redis://127.0.0.1:{port}/0" in line and "\n" not in line
        assert "hunter2" not in line and "hunter2" not in str(raised.value)
        assert raised.value.__cause__ is None and raised.value.__suppress_context__
    log.close()
    claims.close()


class Refusing:
    """An executor for the web edge: never reached when the delivery log is down."""

    submitted: list[Delivery]

    def __init__(self) -> None:
        self.submitted = []

    def submit(self, delivery: Delivery) -> None:
        self.submitted.append(delivery)

    def depth(self) -> int | None:
        return 0

    def heartbeat(self) -> float | None:
        return None


def test_the_web_edge_answers_503_when_redis_is_down(tmp_path: Path) -> None:
    pytest.importorskip("redis", reason="the redis extra is not installed")
    from freemad.bot.web import create_app

    settings = settings_for(tmp_path / "state", f"redis://:pw-x@127.0.0.1:{free_port()}/0")
    executor = Refusing()
    app = create_app(settings, executor=executor)
    health = app.test_client().get("/healthz")
    assert health.status_code == 503
    assert post(app, "d-1", labeled_issue()) == 503
    assert executor.submitted == []
    assert not (tmp_path / "state").exists()


def test_the_worker_stops_at_start_in_one_line_when_redis_is_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("redis", reason="the redis extra is not installed")
    from freemad.bot import json_logs, worker

    port = free_port()
    for name in [n for n in os.environ if n.startswith("FREEMAD_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FREEMAD_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("FREEMAD_GITHUB_TOKEN", "t0ken")
    monkeypatch.setenv("FREEMAD_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("FREEMAD_QUEUE_URL", f"redis://:pw-secret@127.0.0.1:{port}/0")
    monkeypatch.setattr(json_logs, "configure_json_logging", lambda settings: None)

    assert worker.main([]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("freemad bot worker: the bot's state in Redis at ")
    assert f"redis://127.0.0.1:{port}/0" in err and "pw-secret" not in err


def test_the_redis_stores_have_every_public_method_of_the_sqlite_ones() -> None:
    # They stand wherever a DeliveryLog or Claims does (the DeliveryStore and ClaimStore protocols).
    pytest.importorskip("redis", reason="the redis extra is not installed")
    from freemad.bot.redis_stores import RedisClaims, RedisDeliveryLog

    # Except what only the spool uses, which needs the queue in the log's own SQLite file
    # (stores.recorder_with_job): its batch write, and the read that answers a redelivery before
    # the append. With Redis each delivery is its own atomic script already.
    sqlite_only = {"record_many", "known"}
    for redis_class, sqlite_class in ((RedisDeliveryLog, DeliveryLog), (RedisClaims, Claims)):
        public = {n for n in vars(sqlite_class) if not n.startswith("_")} - sqlite_only
        assert public <= {n for n in vars(redis_class) if not n.startswith("_")}
