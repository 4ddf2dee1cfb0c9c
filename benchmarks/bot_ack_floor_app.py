"""The floors of the bot's stack for `bot_ack.py`, each served by the bot's own gunicorn settings
(its worker class, threads and JSON access log).

`app` (`--stack-floor`): a Flask app that answers every delivery 202 and does nothing else (no
signature, no parse, no record). Its CPU per acknowledgement is what Flask and gunicorn cost
before the bot does any work of its own.

`durable` (`--durable-floor`): what the peer does (`bot_ack_peer.py`), written the usual way for
Flask: the signature checked, the body parsed, the delivery committed as one SQLite row (WAL,
synchronous=NORMAL, in `BOT_ACK_FLOOR_DB`) before its 202. The least a bot on this stack does
to keep what it acknowledges; it queues no job and answers no redelivery by its body.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import threading
import time

from _common import DELIVERIES_TABLE, RECORD_DELIVERY
from flask import Flask, jsonify, request
from flask.typing import ResponseReturnValue

app = Flask("bot_ack_floor")


@app.post("/webhook")
def webhook() -> ResponseReturnValue:
    request.get_data()
    return jsonify({"accepted": request.headers.get("X-GitHub-Delivery", "")}), 202


@app.get("/healthz")
def healthz() -> ResponseReturnValue:
    return jsonify({"ok": True})


durable = Flask("bot_ack_durable_floor")
_local = threading.local()
_SECRET = os.environ.get("FREEMAD_WEBHOOK_SECRET", "").encode()  # bot_ack.py always sets it


def _db() -> sqlite3.Connection:
    """This thread's connection (gunicorn forks first, so none crosses a fork)."""
    conn: sqlite3.Connection | None = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(os.environ["BOT_ACK_FLOOR_DB"], timeout=5, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(DELIVERIES_TABLE)
        _local.conn = conn
    return conn


@durable.post("/webhook")
def durable_webhook() -> ResponseReturnValue:
    body = request.get_data()
    expected = "sha256=" + hmac.new(_SECRET, body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, request.headers.get("X-Hub-Signature-256", "")):
        return jsonify({"error": "bad signature"}), 401
    delivery_id = request.headers.get("X-GitHub-Delivery", "")
    event = request.headers.get("X-GitHub-Event", "")
    try:
        json.loads(body)
    except ValueError:
        return jsonify({"error": "not JSON"}), 400
    cursor = _db().execute(
        RECORD_DELIVERY,
        (delivery_id, event, body, time.time()),
    )
    if cursor.rowcount != 1:
        return jsonify({"duplicate": True}), 200
    return jsonify({"accepted": delivery_id}), 202


durable.add_url_rule("/healthz", view_func=healthz, methods=["GET"])
