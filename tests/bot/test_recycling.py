"""Zero loss while workers recycle (gunicorn's max_requests), reload (SIGHUP) or stop (SIGTERM)
mid-burst: real gunicorn on loopback with the settings we ship, 3,000 deliveries from 8 senders
that each keep one connection alive and reopen it only when the server says `Connection: close`.
Every delivery must be answered 202 (or 503 with Retry-After, which kept nothing), none reset or
left without an answer, and every 202 recorded; once a stopped server's sockets are closed, a
connection is refused before anything is sent."""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import re
import signal
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from freemad.bot.job import Job
from freemad.bot.queue import make_huey, register
from freemad.bot.settings import BotSettings
from tests.bot.test_gunicorn import SECRET, bot_env, gunicorn_argv, start
from tests.conftest import free_port
from tests.github.payloads import labeled_issue

SENDERS = 8
PER_SENDER = 375  # 3,000 in all
QUEUE_ENV = "FREEMAD_TEST_QUEUE"  # app_for_gunicorn's (importing it here would build its app)
MAX_REQUESTS = 250  # with 2 workers: about a dozen recycles during the burst, whatever the jitter


def keep_alive_sender(
    port: int, name: str, answers: dict[str, object], sent: threading.Semaphore | None = None
) -> None:
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
            refused_well = response.status == 503 and response.getheader("Retry-After")
            answers[delivery_id] = "503+Retry-After" if refused_well else response.status
            if sent is not None:
                sent.release()
            if response.will_close:
                connection.close()  # http.client reconnects on the next request
    finally:
        connection.close()


def burst(port: int, midway: threading.Event | None = None) -> dict[str, object]:
    """SENDERS x PER_SENDER deliveries; `midway` is set once a third of them are answered."""
    answers: dict[str, object] = {}
    answered = threading.Semaphore(0)
    threads = [
        threading.Thread(target=keep_alive_sender, args=(port, f"s{n}", answers, answered))
        for n in range(SENDERS)
    ]
    for thread in threads:
        thread.start()
    if midway is not None:
        for _ in range(SENDERS * PER_SENDER // 3):
            if not answered.acquire(timeout=60):
                break
        midway.set()
    for thread in threads:
        thread.join()
    return answers


def queued_jobs(env: dict[str, str]) -> list[str]:
    """The deliveries with a job on the bot's SQLite queue, read back through huey."""
    settings = BotSettings.from_env(env)
    huey = make_huey(settings)
    register(huey, Job(settings))
    try:
        return sorted(task.args[0] for task in huey.pending())
    finally:
        huey.storage.close()


@pytest.mark.parametrize("trigger", ["max_requests", "SIGHUP", "SIGTERM"])
@pytest.mark.parametrize("queue", [False, True], ids=["file-executor", "sqlite-queue"])
def test_a_keep_alive_burst_loses_nothing_across_recycles(
    tmp_path: Path, trigger: str, queue: bool
) -> None:
    """With the file executor each accepted delivery is submitted after its commit; with the
    bot's SQLite queue it is committed with its job, several waiting threads' at once."""
    port = free_port()
    env = bot_env(tmp_path, port)  # two workers
    if queue:
        env[QUEUE_ENV] = "1"
    argv = gunicorn_argv()
    if trigger == "max_requests":
        argv[-1:-1] = ["--max-requests", str(MAX_REQUESTS), "--max-requests-jitter", "25"]
    server = start(argv, env, tmp_path, port)
    try:
        midway = threading.Event()
        if trigger != "max_requests":
            # Once a third of the burst is answered: a reload (new workers, the old ones
            # stopped), or the whole server stopped.
            def send_signal() -> None:
                midway.wait(120)
                server.process.send_signal(getattr(signal, trigger))

            threading.Thread(target=send_signal, daemon=True).start()
        answers = burst(port, midway)
    finally:
        time.sleep(0.2)
        # Stopped by the test's own SIGTERM: wait for it (a second one ends gunicorn at once).
        stopped = midway.is_set() and trigger == "SIGTERM"
        assert (server.process.wait(timeout=60) if stopped else server.stop()) == 0

    sent = {f"s{n}-{number}" for n in range(SENDERS) for number in range(PER_SENDER)}
    assert set(answers) == sent
    outcomes = Counter(answers.values())
    never_sent = {"ConnectionRefusedError"} if trigger == "SIGTERM" else set()
    assert set(outcomes) <= {202, "503+Retry-After", *never_sent}, outcomes
    accepted = {delivery_id for delivery_id, answer in answers.items() if answer == 202}
    assert (queued_jobs(env) if queue else sorted(server.submitted())) == sorted(accepted)
    with sqlite3.connect(tmp_path / "state" / "deliveries.sqlite3") as db:
        rows = dict(db.execute("SELECT delivery_id, status FROM deliveries").fetchall())
    assert {d for d, status in rows.items() if status == "queued"} == accepted

    # The burst did cross recycles: gunicorn said so, and more processes served than it keeps.
    log = server.stderr.read_text()
    if queue:  # no file names the process that took each delivery: the workers' boots do
        pids = set(re.findall(r"Booting worker with pid: (\d+)", log))
    else:
        lines = server.submissions.read_text().splitlines()
        pids = {json.loads(line)["pid"] for line in lines}
    if trigger == "max_requests":
        assert log.count("Autorestarting worker") >= 6
        assert len(pids) >= 2 + 6
    elif trigger == "SIGHUP":
        assert "Hang up: Master" in log
        assert len(pids) >= 2 + 1  # a new worker served (one may take every reconnection)
    else:
        assert "Handling signal: term" in log
        assert 0 < len(accepted) < len(sent)


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
