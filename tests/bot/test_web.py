"""The web edge through Flask's test client: signatures, dedupe, failures, health, and no secrets."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from flask import Flask, jsonify
from flask.testing import FlaskClient

from freemad.bot.deliveries import DeliveryLog
from freemad.bot.json_logs import JsonLogFormatter, secret_redactor
from freemad.bot.ports import Delivery
from freemad.bot.settings import BotSettings
from freemad.bot.web import create_app, verify_signature
from tests.bot import test_end_to_end
from tests.github.payloads import REPO, event_name, example_params, labeled_issue

# A real redis-server on loopback, for the checks that run on both delivery logs.
redis_url = test_end_to_end.redis_url

SECRET = "test-webhook-secret-7f3a"
TOKEN = "ghp_testtoken_never_logged_0123"
QUEUE_PASSWORD = "queue-password-never-logged"
QUEUE_URL = f"redis://:{QUEUE_PASSWORD}@127.0.0.1:6379/0"
SECRETS = (SECRET, TOKEN, QUEUE_PASSWORD)

# GitHub's documented example and two more (shared/fixtures/README.md).
VECTORS = [
    (
        "It's a Secret to Everybody",
        "Hello, World!",
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
    ),
    (
        "mysecret",
        '{"foo":"bar"}',
        "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3",
    ),
    (
        "123456",
        "gidget",
        "sha256=091319196718d5bcb1c20ad25fc890597423ecdbad1f947f560afd643b5000de",
    ),
]


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass
class RecordingExecutor:
    """An in-memory executor: what was submitted, and `failures` submits that raise first."""

    submitted: list[Delivery] = field(default_factory=list)
    failures: int = 0
    beat: float | None = None

    def submit(self, delivery: Delivery) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError(f"Error connecting to {QUEUE_URL}")
        self.submitted.append(delivery)

    def depth(self) -> int | None:
        return len(self.submitted)

    def heartbeat(self) -> float | None:
        return self.beat


def settings_for(state_dir: Path, **env: str) -> BotSettings:
    base = {
        "FREEMAD_WEBHOOK_SECRET": SECRET,
        "FREEMAD_GITHUB_TOKEN": TOKEN,
        "FREEMAD_STATE_DIR": str(state_dir),
        "FREEMAD_QUEUE_URL": QUEUE_URL,
    }
    return BotSettings.from_env({**base, **env})


@dataclass
class Bot:
    app: Flask
    client: FlaskClient
    executor: RecordingExecutor
    deliveries: DeliveryLog
    responses: list[str] = field(default_factory=list)

    def post(
        self,
        payload: dict[str, Any] | bytes,
        *,
        event: str | None = "issues",
        delivery: str | None = "d-1",
        signature: str | None = "sign",
        **kwargs: Any,
    ) -> tuple[int, Any]:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"}
        if event is not None:
            headers["X-GitHub-Event"] = event
        if delivery is not None:
            headers["X-GitHub-Delivery"] = delivery
        if signature is not None:
            headers["X-Hub-Signature-256"] = sign(body) if signature == "sign" else signature
        response = self.client.post("/webhook", data=body, headers=headers, **kwargs)
        # A refusal that kept nothing says when to send again; no other answer does.
        assert ("Retry-After" in response.headers) == (response.status_code == 503)
        return self._seen(response)

    def get(self, path: str) -> tuple[int, Any]:
        return self._seen(self.client.get(path))

    def _seen(self, response: Any) -> tuple[int, Any]:
        assert response.mimetype == "application/json"
        self.responses.append(response.get_data(as_text=True))
        return response.status_code, response.get_json()


def make_bot(state_dir: Path, executor: RecordingExecutor | None = None, **env: str) -> Bot:
    settings = settings_for(state_dir, **env)
    executor = executor or RecordingExecutor()
    deliveries = DeliveryLog(settings.deliveries_path)
    app = create_app(settings, executor=executor, deliveries=deliveries)
    return Bot(app, app.test_client(), executor, deliveries)


@pytest.fixture
def bot(tmp_path: Path):
    made = make_bot(tmp_path / "state")
    yield made
    made.deliveries.close()
    for text in made.responses:
        assert not any(secret in text for secret in SECRETS)


@pytest.mark.parametrize(("secret", "body", "header"), VECTORS)
def test_signature_vectors_verify(secret: str, body: str, header: str) -> None:
    assert verify_signature(secret.encode(), body.encode(), header)
    assert not verify_signature(secret.encode(), body.encode() + b" ", header)
    assert not verify_signature(b"another secret", body.encode(), header)


def test_a_vector_is_accepted_end_to_end(tmp_path: Path) -> None:
    secret, body, header = VECTORS[1]
    made = make_bot(tmp_path, FREEMAD_WEBHOOK_SECRET=secret)
    status, answer = made.post(body.encode(), signature=header, event="push")
    made.deliveries.close()
    assert (status, answer) == (202, {"accepted": "d-1"})


@pytest.mark.parametrize("path", example_params())
def test_github_examples_are_accepted_once(bot: Bot, path: Path) -> None:
    body = path.read_bytes()
    event = event_name(path)
    status, answer = bot.post(body, event=event, delivery=f"ex-{path.stem}")
    if event == "ping":
        assert status == 200 and answer["ok"] is True and answer["zen"]
        assert bot.executor.submitted == []
        return
    assert (status, answer) == (202, {"accepted": f"ex-{path.stem}"})
    [delivery] = bot.executor.submitted
    payload = json.loads(body)
    assert delivery.body == body
    assert delivery.event == event
    assert delivery.action == payload.get("action")
    assert delivery.repo == (payload.get("repository") or {}).get("full_name")
    assert delivery.installation_id == (payload.get("installation") or {}).get("id")


def test_the_acceptance_is_what_jsonify_would_answer_byte_for_byte(bot: Bot) -> None:
    body = json.dumps(labeled_issue()).encode()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": "bytes-1",
        "X-Hub-Signature-256": sign(body),
    }
    response = bot.client.post("/webhook", data=body, headers=headers)
    with bot.app.app_context():
        expected = jsonify({"accepted": "bytes-1"})
    assert response.status_code == 202
    assert response.get_data() == expected.get_data() == b'{"accepted":"bytes-1"}\n'
    assert response.headers["Content-Type"] == expected.headers["Content-Type"]


def test_own_payload_is_parsed_into_the_delivery(bot: Bot) -> None:
    status, _ = bot.post(labeled_issue(), delivery="own-1")
    assert status == 202
    [delivery] = bot.executor.submitted
    assert (delivery.action, delivery.installation_id, delivery.repo) == ("labeled", 42, REPO)
    assert bot.deliveries.status("own-1") == "queued"


@pytest.mark.parametrize(
    "signature",
    [
        None,
        "",
        "sha256=" + "0" * 64,
        sign(b"another body"),
        sign(json.dumps(labeled_issue()).encode(), secret="not the secret"),
        "sha1="
        + hmac.new(SECRET.encode(), json.dumps(labeled_issue()).encode(), "sha1").hexdigest(),
        sign(json.dumps(labeled_issue()).encode()).upper(),
    ],
    ids=["unsigned", "empty", "zeros", "other-body", "other-secret", "sha1", "mangled"],
)
def test_bad_signatures_are_refused(bot: Bot, signature: str | None) -> None:
    status, answer = bot.post(labeled_issue(), signature=signature, delivery="forged")
    assert status == 401 and "signature" in answer["error"]
    assert bot.executor.submitted == []
    assert bot.deliveries.status("forged") is None


def test_signature_is_checked_before_headers_and_json(bot: Bot) -> None:
    status, _ = bot.post(b"not json", event=None, delivery=None, signature="sha256=00")
    assert status == 401


@pytest.mark.parametrize(
    ("event", "delivery"), [(None, "d-1"), ("issues", None), ("", "d-1"), ("issues", "a b")]
)
def test_event_and_delivery_headers_are_required(
    bot: Bot, event: str | None, delivery: str | None
) -> None:
    status, answer = bot.post(labeled_issue(), event=event, delivery=delivery)
    assert status == 400 and "X-GitHub-Delivery" in answer["error"]
    assert bot.executor.submitted == []


@pytest.mark.parametrize(
    "body", [b"{not json", b"[1, 2]", b'"text"', b"\xff\xfe{", b"[" * 100_000], ids=repr
)
def test_malformed_or_non_object_json_is_refused(bot: Bot, body: bytes) -> None:
    status, answer = bot.post(body)
    assert status == 400 and "JSON object" in answer["error"]
    assert bot.executor.submitted == []


def test_form_encoded_payload_gets_a_hint(bot: Bot) -> None:
    body = b"payload=%7B%7D"
    response = bot.client.post(
        "/webhook",
        data=body,
        content_type="application/x-www-form-urlencoded",
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": "f",
            "X-Hub-Signature-256": sign(body),
        },
    )
    assert response.status_code == 400
    assert "application/json" in response.get_json()["error"]


def test_oversized_payloads_are_refused_unread(tmp_path: Path) -> None:
    made = make_bot(tmp_path, FREEMAD_MAX_BODY="1024")
    big = json.dumps({"action": "opened", "pad": "x" * 2048}).encode()
    status, answer = made.post(big)
    assert status == 413 and "1024" in answer["error"]
    # No Content-Length (chunked, as a server passes it on): the read itself is capped.
    status, _ = made.post(
        b"",
        input_stream=io.BytesIO(big),
        environ_overrides={"wsgi.input_terminated": True},
        signature=sign(big),
    )
    assert status == 413
    assert made.executor.submitted == []
    assert made.deliveries.recent() == []
    made.deliveries.close()


def test_ping_is_answered_and_recorded_as_ignored(bot: Bot) -> None:
    status, answer = bot.post({"zen": "Design for failure.", "hook_id": 1}, event="ping")
    assert (status, answer) == (200, {"ok": True, "zen": "Design for failure."})
    assert bot.executor.submitted == []
    assert bot.deliveries.status("d-1") == "ignored"


def test_a_redelivery_is_not_submitted_twice(bot: Bot) -> None:
    assert bot.post(labeled_issue(), delivery="same")[0] == 202
    status, answer = bot.post(labeled_issue(), delivery="same")
    assert (status, answer) == (200, {"duplicate": True, "delivery_id": "same"})
    assert len(bot.executor.submitted) == 1


@pytest.mark.parametrize("store", ["sqlite", "redis"])
def test_a_replay_under_a_new_delivery_id_is_a_duplicate_and_queues_no_job(
    tmp_path: Path, request: pytest.FixtureRequest, store: str
) -> None:
    from huey import MemoryHuey  # type: ignore[import-untyped]

    from freemad.bot.executors import LocalExecutor
    from freemad.bot.job import Job
    from freemad.bot.queue import register, waiting
    from freemad.bot.redis_stores import RedisDeliveryLog

    settings = settings_for(tmp_path / "state")
    deliveries: DeliveryLog | RedisDeliveryLog
    if store == "redis":
        deliveries = RedisDeliveryLog(request.getfixturevalue("redis_url"))
    else:
        deliveries = DeliveryLog(settings.deliveries_path)
    huey = MemoryHuey("replay-test", results=False)
    register(huey, Job(settings, deliveries=deliveries))
    client = create_app(settings, executor=LocalExecutor(huey), deliveries=deliveries).test_client()
    body = json.dumps(labeled_issue()).encode()

    def post(delivery_id: str, event: str = "issues") -> tuple[int, Any]:
        headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery_id,
            "X-Hub-Signature-256": sign(body),
        }
        response = client.post("/webhook", data=body, headers=headers)
        return response.status_code, response.get_json()

    try:
        assert post("original") == (202, {"accepted": "original"})
        # The signature covers the body only: the same signed body under a new delivery id
        # (and even another event name) is the same delivery sent again.
        assert post("replayed") == (200, {"duplicate": True, "delivery_id": "replayed"})
        assert post("replayed-2", event="pull_request")[0] == 200
        assert post("original")[0] == 200  # a redelivery, as before
        assert waiting(huey) == {"original"} and huey.pending_count() == 1
        assert deliveries.status("replayed") is None
        assert deliveries.counts(since=0) == {"queued": 1}
    finally:
        deliveries.close()


def test_dedupe_survives_a_restart(tmp_path: Path) -> None:
    first = make_bot(tmp_path)
    assert first.post(labeled_issue(), delivery="kept")[0] == 202
    first.deliveries.close()
    second = make_bot(tmp_path)  # a new process would build exactly this
    assert second.post(labeled_issue(), delivery="kept") == (
        200,
        {"duplicate": True, "delivery_id": "kept"},
    )
    assert second.executor.submitted == []
    second.deliveries.close()


def test_a_failed_submit_is_503_and_its_redelivery_is_accepted(bot: Bot) -> None:
    bot.executor.failures = 1
    status, answer = bot.post(labeled_issue(), delivery="retry-me")
    assert status == 503 and answer["delivery_id"] == "retry-me"
    [record] = bot.deliveries.recent()
    assert (record.status, record.attempts) == ("failed", 0)
    assert record.detail == "submit failed: ConnectionError"
    assert bot.post(labeled_issue(), delivery="retry-me") == (202, {"accepted": "retry-me"})
    assert [d.delivery_id for d in bot.executor.submitted] == ["retry-me"]
    assert bot.deliveries.status("retry-me") == "queued"


def test_a_delivery_a_worker_started_is_not_run_again(bot: Bot) -> None:
    assert bot.post(labeled_issue(), delivery="ran")[0] == 202
    bot.deliveries.mark("ran", "running", attempt=True)
    bot.deliveries.mark("ran", "failed", "agent crashed")
    assert bot.post(labeled_issue(), delivery="ran")[0] == 200
    assert len(bot.executor.submitted) == 1


def test_healthz_reports_queue_worker_and_deliveries(bot: Bot) -> None:
    assert bot.get("/healthz") == (
        200,
        {
            "ok": True,
            "queue_depth": 0,
            "worker_heartbeat": None,
            "workers_alive": False,
            "deliveries": {},
        },
    )
    bot.post(labeled_issue(), delivery="a")
    bot.post({"zen": "hi"}, event="ping", delivery="p")
    bot.executor.beat = time.time() - 30
    status, health = bot.get("/healthz")
    assert status == 200 and health["queue_depth"] == 1
    assert health["deliveries"] == {"queued": 1, "ignored": 1}
    assert 30 <= health["worker_heartbeat"] < 3600 and health["workers_alive"]
    bot.executor.beat = time.time() - 600
    assert bot.get("/healthz")[1]["workers_alive"] is False  # quiet too long: say so


def test_an_unopenable_delivery_log_is_503(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where the state directory should be")
    made = make_bot(tmp_path / "blocker" / "state")
    assert made.get("/healthz")[0] == 503
    status, answer = made.post(labeled_issue())
    assert status == 503 and "delivery log" in answer["error"]
    assert made.executor.submitted == []


def test_unexpected_errors_are_500_json_without_traceback(tmp_path: Path) -> None:
    class BrokenLog(DeliveryLog):
        def record(self, delivery: Delivery, *, status: str = "queued") -> bool:
            raise RuntimeError(f"boom near {SECRET}")

    settings = settings_for(tmp_path)
    app = create_app(settings, executor=RecordingExecutor(), deliveries=BrokenLog(tmp_path / "x"))
    body = json.dumps(labeled_issue()).encode()
    response = app.test_client().post(
        "/webhook",
        data=body,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": "d-9",
            "X-Hub-Signature-256": sign(body),
        },
    )
    assert response.status_code == 500
    assert response.get_json() == {"error": "internal error", "delivery_id": "d-9"}
    assert "Traceback" not in response.get_data(as_text=True)


def test_unknown_routes_and_methods_answer_json(bot: Bot) -> None:
    assert bot.get("/nope")[0] == 404
    status, answer = bot.get("/webhook")
    assert status == 405 and answer["error"]


def test_secrets_never_reach_logs_or_responses(
    bot: Bot, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another test may have configured the `freemad` logger not to propagate to caplog's handler.
    monkeypatch.setattr(logging.getLogger("freemad"), "propagate", True)
    caplog.set_level(logging.DEBUG, logger="freemad")
    bot.executor.failures = 1
    bot.post(labeled_issue(), delivery="x-1")  # the executor's error quotes the queue URL
    bot.post(labeled_issue(), delivery="x-2", signature=sign(b"forged"))
    bot.post(labeled_issue(), delivery="x-3")
    bot.get("/healthz")
    assert caplog.records, "the edge logs what it does"
    logged = caplog.text + "".join(r.exc_text or "" for r in caplog.records)
    assert "ConnectionError" in logged
    settings_repr = repr(settings_for(Path("s")))
    for secret in SECRETS:
        assert secret not in logged
        assert secret not in settings_repr


def logged_lines(bot: Bot, level: int) -> list[dict[str, Any]]:
    """The edge's JSON log lines at `level` for: a failed submit, an accepted delivery, its
    redelivery."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLogFormatter(secret_redactor(settings_for(Path("s")))))
    logger = logging.getLogger("freemad.bot.web")
    saved = logger.level
    logger.setLevel(level)
    logger.addHandler(handler)
    try:
        bot.executor.failures = 1
        bot.post(labeled_issue(), delivery="j-1")
        bot.post({**labeled_issue(), "n": 2}, delivery="j-2")  # another body: not a replay
        bot.post({**labeled_issue(), "n": 2}, delivery="j-2")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved)
    assert not any(secret in stream.getvalue() for secret in SECRETS)
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_an_accepted_delivery_is_left_to_the_access_line_at_info(bot: Bot) -> None:
    # gunicorn's access line names the delivery, its event and the 202: one line per delivery.
    lines = logged_lines(bot, logging.INFO)
    assert [(line["delivery_id"], line["status"]) for line in lines] == [
        ("j-1", "failed"),
        ("j-2", "duplicate"),
    ]


def test_json_log_lines_carry_the_delivery(bot: Bot) -> None:
    lines = logged_lines(bot, logging.DEBUG)[:-1]  # the last: the duplicate
    assert {"time", "level", "message", "delivery_id", "event", "status"} <= set(lines[-1])
    assert (lines[-1]["delivery_id"], lines[-1]["status"]) == ("j-2", "queued")
    failed = next(line for line in lines if line.get("status") == "failed")
    assert failed["level"] == "ERROR" and "ConnectionError" in failed["exception"]
