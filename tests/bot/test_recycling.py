"""Workers recycled mid-burst (gunicorn's max_requests) lose no delivery sent on a kept-alive
connection: real gunicorn on loopback with the settings we ship, senders that reuse one
connection each, every delivery counted answered and counted recorded."""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import sqlite3
import threading
from collections import Counter
from pathlib import Path

import pytest

from tests.bot.test_gunicorn import SECRET, bot_env, gunicorn_argv, start
from tests.conftest import free_port
from tests.github.payloads import labeled_issue

SENDERS = 6
PER_SENDER = 40
MAX_REQUESTS = 25  # 240 deliveries: several recycles whatever the jitter


def keep_alive_sender(port: int, name: str, answers: dict[str, object]) -> None:
    """PER_SENDER deliveries on one connection, reopened only after the server closed it
    cleanly (an answer with `Connection: close`); anything else is an answer it never got."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for number in range(PER_SENDER):
            delivery_id = f"{name}-{number}"
            body = json.dumps({**labeled_issue(), "test_delivery": delivery_id}).encode()
            headers = {
                "Content-Type": "application/json",
                "X-GitHub-Event": "issues",
                "X-GitHub-Delivery": delivery_id,
                "X-Hub-Signature-256": "sha256="
                + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest(),
            }
            try:
                connection.request("POST", "/webhook", body=body, headers=headers)
                response = connection.getresponse()
                response.read()
            except (OSError, http.client.HTTPException) as exc:
                answers[delivery_id] = type(exc).__name__  # lost: no answer at all
                connection.close()
                continue
            answers[delivery_id] = response.status
            if response.will_close:
                connection.close()  # http.client reconnects on the next request
    finally:
        connection.close()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_keep_alive_deliveries_survive_worker_recycles(tmp_path: Path, workers: str) -> None:
    port = free_port()
    env = {**bot_env(tmp_path, port), "FREEMAD_WORKERS": workers}
    argv = [*gunicorn_argv()[:-1], "--max-requests", str(MAX_REQUESTS)]
    argv += ["--max-requests-jitter", "3", gunicorn_argv()[-1]]
    server = start(argv, env, tmp_path, port)
    answers: dict[str, object] = {}
    try:
        threads = [
            threading.Thread(target=keep_alive_sender, args=(port, f"s{n}", answers))
            for n in range(SENDERS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        assert server.stop() == 0

    sent = {f"s{n}-{number}" for n in range(SENDERS) for number in range(PER_SENDER)}
    assert set(answers) == sent
    assert Counter(answers.values()) == Counter({202: len(sent)})
    assert sorted(server.submitted()) == sorted(sent)
    with sqlite3.connect(tmp_path / "state" / "deliveries.sqlite3") as db:
        rows = dict(db.execute("SELECT delivery_id, status FROM deliveries").fetchall())
    assert rows == dict.fromkeys(sent, "queued")

    # The burst did cross recycles: gunicorn said so, and more processes served than it keeps.
    log = server.stderr.read_text()
    assert log.count("Autorestarting worker") >= 3
    lines = server.submissions.read_text().splitlines()
    assert len({json.loads(line)["pid"] for line in lines}) >= int(workers) + 3


class RecordingSocket:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.sent.append(data)

    def fileno(self) -> int:
        return 7


def test_a_response_leaves_in_one_send() -> None:
    from freemad.bot.gunicorn_worker import _OneSend

    raw = RecordingSocket()
    combined = _OneSend(raw)
    combined.sendall(b"HTTP/1.1 202 Accepted\r\n\r\n")
    assert raw.sent == []
    combined.sendall(b'{"accepted": "d-1"}')
    combined.sendall(b"more")  # a streamed body's later chunks go straight through
    combined.flush()
    assert raw.sent == [b'HTTP/1.1 202 Accepted\r\n\r\n{"accepted": "d-1"}', b"more"]

    alone = RecordingSocket()
    headers_only = _OneSend(alone)
    headers_only.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
    headers_only.flush()  # a response with no body: its headers go when the request ends
    assert alone.sent == [b"HTTP/1.1 204 No Content\r\n\r\n"]

    sendfile = RecordingSocket()
    held = _OneSend(sendfile)
    held.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
    assert held.fileno() == 7 and sendfile.sent == [b"HTTP/1.1 200 OK\r\n\r\n"]  # headers first
