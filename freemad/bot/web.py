"""The bot's web edge: verify the signature, answer `ping`, record, hand to the executor, reply.

GitHub waits 10 seconds for an answer and a run takes minutes, so nothing here does the work:
`POST /webhook` only checks and enqueues, `GET /healthz` reports. Every answer is JSON. Nothing
happens at import time; `app_from_env()` is what gunicorn calls.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from freemad.bot import fast_json
from freemad.bot.json_logs import configure_json_logging, scrub_secrets
from freemad.bot.ports import Delivery, DeliveryLogUnavailable, DeliveryStore, Executor
from freemad.bot.settings import BotSettings
from freemad.bot.spool import Spool, SpoolUnavailable
from freemad.bot.write_gate import GateUnavailable, WriteGate

log = logging.getLogger("freemad.bot.web")

SIGNATURE_HEADER = "X-Hub-Signature-256"
_SIGNATURE_KEY = "HTTP_X_HUB_SIGNATURE_256"  # the same header in the WSGI environ
_SIGNATURE_PREFIX = "sha256="
_HEADER_VALUE = re.compile(r"[A-Za-z0-9._:-]{1,200}")  # event names and delivery GUIDs
_DAY = 24 * 3600.0
# A 503 says when to send the refused delivery again.
RETRY_AFTER_SECONDS = 30


def create_app(
    settings: BotSettings, *, executor: Executor, deliveries: DeliveryStore | None = None
) -> Flask:
    """The Flask app of the web edge; `deliveries` defaults to the log next to the queue
    (in its Redis, or in the state directory: `stores.delivery_log`)."""
    if deliveries is None:
        from freemad.bot.stores import delivery_log

        deliveries = delivery_log(settings)
    edge = _Edge(settings, executor, deliveries)
    app = Flask("freemad.bot")
    # Werkzeug refuses (413) to read more than this, whatever Content-Length claims.
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body
    app.extensions["freemad.deliveries"] = edge.deliveries
    app.extensions["freemad.spool"] = edge.spool
    scrub_secrets(log, settings)
    app.add_url_rule("/webhook", view_func=edge.webhook, methods=["POST"])
    app.add_url_rule("/healthz", view_func=edge.healthz, methods=["GET"])
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _internal_error)
    return app


_WORKER_QUIET = (
    60.0  # seconds without a heartbeat (workers beat every 10) before they count as gone
)


class _Edge:
    """The two endpoints, over one settings, executor and delivery log."""

    def __init__(
        self, settings: BotSettings, executor: Executor, deliveries: DeliveryStore
    ) -> None:
        self.gate = WriteGate(Path(settings.state_dir) / "ack.lock")
        self.max_body = settings.max_body
        self.secret = settings.webhook_secret.get_secret_value().encode("utf-8")
        self.executor = executor
        self.deliveries = deliveries
        from freemad.bot.stores import recorder_with_job

        # When the queue is a table of the log's file: a delivery is appended to this process's
        # spool before its 202, and committed with its job, in batches, by the spool's thread.
        self.recorder = recorder_with_job(executor, deliveries)
        self.spool = (
            None
            if self.recorder is None
            else Spool(
                Path(settings.state_dir) / "spool",
                self._commit,
                outage=(DeliveryLogUnavailable, GateUnavailable),
            )
        )

    def _commit(self, deliveries: Sequence[Delivery]) -> None:
        """The spool's sink: the deliveries and their jobs in one transaction, under the gate."""
        assert self.recorder is not None
        entries = [self.recorder.entry(delivery) for delivery in deliveries]
        with self.gate.held():
            answers = self.recorder.write(entries)
        for delivery, new in zip(deliveries, answers, strict=True):
            if not new:
                log.info(
                    "duplicate delivery",
                    extra={
                        "delivery_id": delivery.delivery_id,
                        "event": delivery.event,
                        "status": "duplicate",
                    },
                )

    def webhook(self) -> tuple[Response, int]:
        length = request.content_length
        if length is not None and length > self.max_body:
            return _too_large(self.max_body)
        try:
            body = request.get_data(cache=True)
        except RequestEntityTooLarge:
            return _too_large(self.max_body)
        except Exception as exc:  # the server's reader refused the body (a malformed chunk)
            log.warning("unreadable body: %s", type(exc).__name__, extra={"status": 400})
            return _error(400, "the request body could not be read")
        # Nothing of the request is looked at until its signature holds.
        # The WSGI environ's header values: what `request.headers` reads, without its lookup.
        environ = request.environ
        if not verify_signature(self.secret, body, environ.get(_SIGNATURE_KEY)):
            log.warning("webhook signature missing or wrong", extra={"status": 401})
            return _error(401, f"missing or wrong {SIGNATURE_HEADER} signature")
        event = environ.get("HTTP_X_GITHUB_EVENT", "")
        delivery_id = environ.get("HTTP_X_GITHUB_DELIVERY", "")
        if not _HEADER_VALUE.fullmatch(event) or not _HEADER_VALUE.fullmatch(delivery_id):
            return _error(400, "X-GitHub-Event and X-GitHub-Delivery are required")
        payload = _parse_object(body)
        if payload is None:
            hint = ""
            if request.mimetype == "application/x-www-form-urlencoded":
                hint = "; set the webhook's content type to application/json"
            return _error(400, f"the payload is not a JSON object{hint}", delivery_id)
        delivery = _delivery(delivery_id, event, payload, body)
        if event == "ping":
            self.deliveries.record(delivery, status="ignored")
            log.info(
                "ping", extra={"delivery_id": delivery_id, "event": event, "status": "ignored"}
            )
            return jsonify({"ok": True, "zen": payload.get("zen")}), 200
        return self._enqueue(delivery)

    def _enqueue(self, delivery: Delivery) -> tuple[Response, int]:
        delivery_id = delivery.delivery_id
        where = {"delivery_id": delivery_id, "event": delivery.event}
        if self.spool is not None and self.recorder is not None:
            try:
                # A redelivery of what is committed is answered now; one that races its
                # original through the spool is dropped when the two are committed.
                known = self.recorder.log.known(delivery)
            except DeliveryLogUnavailable:
                known = False  # the spool keeps it all the same, and its commit will tell
            if known:
                return self._answer(delivery, where, False, submitted=True)
            try:
                self.spool.append(delivery)
            except SpoolUnavailable as exc:
                log.error("cannot keep the delivery: %s", exc, extra={**where, "status": 503})
                return _error(503, "the delivery log is unavailable; redeliver later", delivery_id)
            return self._answer(delivery, where, True, submitted=True)
        # Only local SQLite writes queue on the gate: an executor that might wait on something
        # must not hold up every other acknowledgement meanwhile, and a log in Redis (with the
        # queue there too) has no local writers to line up. An executor that does not say its
        # submit is quick is taken to be slow. Both of ours only enqueue.
        local = getattr(self.executor, "quick_submit", False) and self.deliveries.local_file
        try:
            with self.gate.held() if local else contextlib.nullcontext():
                is_new = self.deliveries.record(delivery, status="queued")
                return self._answer(delivery, where, is_new, submitted=False)
        except GateUnavailable:
            log.exception("cannot open the acknowledgement lock", extra={**where, "status": 503})
            return _error(503, "the delivery log is unavailable; redeliver later", delivery_id)
        except DeliveryLogUnavailable:
            log.exception("cannot record the delivery", extra={**where, "status": 503})
            return _error(503, "the delivery log is unavailable; redeliver later", delivery_id)

    def _answer(
        self, delivery: Delivery, where: dict[str, str], is_new: bool, *, submitted: bool
    ) -> tuple[Response, int]:
        delivery_id = delivery.delivery_id
        if not is_new:
            log.info("duplicate delivery", extra={**where, "status": "duplicate"})
            return jsonify({"duplicate": True, "delivery_id": delivery_id}), 200
        if not submitted:
            try:
                self.executor.submit(delivery)
            except Exception as exc:
                log.exception("submit failed", extra={**where, "status": "failed"})
                # Failed with no attempt: a redelivery of it will be accepted (deliveries.py).
                self.deliveries.mark(delivery_id, "failed", f"submit failed: {type(exc).__name__}")
                return _error(
                    503, "could not enqueue the delivery; redeliver it from GitHub", delivery_id
                )
        # At DEBUG: the access line (stdout) already says so, with the delivery and its event.
        log.debug("accepted", extra={**where, "status": "queued"})
        return _accepted(delivery_id), 202

    def healthz(self) -> tuple[Response, int]:
        now = time.time()
        try:
            counts = self.deliveries.counts(since=now - _DAY)
        except DeliveryLogUnavailable as exc:
            # Only the name of what failed (SQLite's error, or Redis's): its text may hold anything.
            cause = exc.__cause__ or exc
            log.error("delivery log unavailable: %s", type(cause).__name__, extra={"status": 503})
            return jsonify({"ok": False, "error": "the delivery log is unavailable"}), 503
        try:
            depth, beat = self.executor.depth(), self.executor.heartbeat()
        except Exception:
            log.exception("executor unavailable", extra={"status": 503})
            return jsonify({"ok": False, "error": "the executor is unavailable"}), 503
        since_beat = None if beat is None else round(max(0.0, now - beat), 3)
        # The web edge is healthy either way (it still accepts and queues); whether any worker
        # is taking the work is said apart, so a monitor can alert without restarting the web.
        alive = None if depth is None else since_beat is not None and since_beat < _WORKER_QUIET
        body = {
            "ok": True,
            "queue_depth": depth,
            "worker_heartbeat": since_beat,
            "workers_alive": alive,
        }
        return jsonify({**body, "deliveries": counts}), 200


def _http_error(exc: HTTPException) -> tuple[Response, int]:
    return _error(exc.code or 500, exc.description or exc.name)


def _internal_error(exc: Exception) -> tuple[Response, int]:
    delivery_id = request.headers.get("X-GitHub-Delivery", "")
    delivery_id = delivery_id if _HEADER_VALUE.fullmatch(delivery_id) else ""
    log.exception(
        "unhandled error in %s %s",
        request.method,
        request.path,
        extra={"delivery_id": delivery_id or None, "status": 500},
    )
    return _error(500, "internal error", delivery_id or None)


def app_from_env() -> Flask:
    """The app as gunicorn runs it: settings from the environment, the chosen executor."""
    from freemad.bot.executors import executor_from
    from freemad.bot.stores import delivery_log

    settings = BotSettings.from_env(os.environ)
    configure_json_logging(settings)
    # SQLite's checkpoints run on a thread of their own, not inside an acknowledgement.
    executor = executor_from(settings, background_checkpoint=True)
    deliveries = delivery_log(settings, background_checkpoint=True)
    app = create_app(settings, executor=executor, deliveries=deliveries)
    spool = app.extensions["freemad.spool"]
    if spool is not None:
        # This worker's file and thread now: what a worker killed earlier left is committed
        # without waiting for the next delivery.
        try:
            spool.start()
        except SpoolUnavailable as exc:  # each delivery is refused with a 503 until it can
            log.error("cannot open the acknowledgement spool: %s", exc)
    return app


def verify_signature(secret: bytes, body: bytes, header: str | None) -> bool:
    """True when `header` is `sha256=` + the HMAC-SHA256 of `body` under `secret`."""
    if not header or not header.startswith(_SIGNATURE_PREFIX):
        return False
    expected = hmac.digest(secret, body, "sha256").hex().encode("ascii")
    given = header[len(_SIGNATURE_PREFIX) :].encode("utf-8", "replace")
    return hmac.compare_digest(expected, given)


def _parse_object(body: bytes) -> dict[str, Any] | None:
    """The payload, if it is a JSON object (only a few of its fields are read: `_delivery`)."""
    try:
        payload = fast_json.loads(body)
    except (ValueError, RecursionError):  # bad UTF-8 or JSON; absurd nesting
        return None
    return payload if isinstance(payload, dict) else None


def _accepted(delivery_id: str) -> Response:
    """What `jsonify` answers for an accepted delivery, byte for byte, at a fraction of its cost."""
    body = fast_json.dumps({"accepted": delivery_id}) + b"\n"
    return Response(body, mimetype="application/json")


def _delivery(delivery_id: str, event: str, payload: dict[str, Any], body: bytes) -> Delivery:
    """The delivery with the fields the log keeps, each of them only if SQLite can store it:
    the spool commits a batch at a time, and one value it cannot bind (a lone surrogate, an
    integer past 64 bits) would hold back every delivery after it."""
    installation = payload.get("installation")
    repository = payload.get("repository")
    installation_id = installation.get("id") if isinstance(installation, dict) else None
    return Delivery(
        delivery_id=delivery_id,
        event=event,
        action=_text(payload.get("action")),
        installation_id=installation_id
        if type(installation_id) is int and -(2**63) <= installation_id < 2**63
        else None,
        repo=_text(repository.get("full_name")) if isinstance(repository, dict) else None,
        body=body,
    )


def _text(value: object) -> str | None:
    """`value` if it is a string SQLite can store (UTF-8: no lone surrogate), else None."""
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


def _error(code: int, message: str, delivery_id: str | None = None) -> tuple[Response, int]:
    body: dict[str, Any] = {"error": message}
    if delivery_id:
        body["delivery_id"] = delivery_id
    response = jsonify(body)
    if code == 503:  # nothing was kept: the same delivery, sent again later, is accepted
        response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response, code


def _too_large(limit: int) -> tuple[Response, int]:
    log.warning("payload over %d bytes refused", limit, extra={"status": 413})
    return _error(413, f"the payload is larger than {limit} bytes")
