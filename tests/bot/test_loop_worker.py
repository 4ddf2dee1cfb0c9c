"""The bot's event-loop gunicorn worker (freemad/bot/loop_worker.py) under attack: real gunicorn
on loopback with the settings we ship, raw sockets writing what a hostile or broken client would.

Every refusal must come as an answer or a closed connection, never a stalled process: each test
ends with a signed delivery that the same server still accepts.
"""

from __future__ import annotations

import json
import select
import socket
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bot.test_gunicorn import (
    ROOT,
    Server,
    bot_env,
    gunicorn_argv,
    sign,
    start,
    wait_until_ready,
)
from tests.conftest import free_port
from tests.github.payloads import labeled_issue

WORKER = "freemad.bot.loop_worker.EventLoopWorker"
MAX_BODY = 64 * 1024  # bot_env's FREEMAD_MAX_BODY


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp_path = tmp_path_factory.mktemp("loop-worker")
    port = free_port()
    env = {**bot_env(tmp_path, port), "FREEMAD_WORKERS": "1"}
    argv = gunicorn_argv()
    argv[-1:-1] = ["--keep-alive", "1"]
    server = start(argv, env, tmp_path, port)
    yield server
    assert server.stop() == 0


def port_of(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1])


def connect(server: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port_of(server)), timeout=15)


def read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


class Answers:
    """The answers on one kept-alive connection, read in order: what one `recv` brings past an
    answer (the next pipelined one) is kept for the next call."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _more(self) -> None:
        chunk = self.sock.recv(65536)
        assert chunk, f"closed before a whole answer: {self.buffer!r}"
        self.buffer += chunk

    def next(self, *, head: bool = False) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body (by Content-Length; none for `head`, a HEAD's answer)."""
        while b"\r\n\r\n" not in self.buffer:
            self._more()
        block, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        status_line, *lines = block.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
        length = 0 if head else int(headers.get("content-length", "0"))
        while len(self.buffer) < length:
            self._more()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(status_line.split()[1]), headers, body


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The one answer expected on `sock` now."""
    answers = Answers(sock)
    answer = answers.next()
    assert answers.buffer == b"", "more than one answer came"
    return answer


def delivery(delivery_id: str, *, extra: bytes = b"", body: bytes | None = None) -> bytes:
    body = body if body is not None else json.dumps({**labeled_issue(), "id": delivery_id}).encode()
    head = (
        f"POST /webhook HTTP/1.1\r\nHost: bot\r\nContent-Type: application/json\r\n"
        f"X-GitHub-Event: issues\r\nX-GitHub-Delivery: {delivery_id}\r\n"
        f"X-Hub-Signature-256: {sign(body)}\r\nContent-Length: {len(body)}\r\n"
    ).encode()
    return head + extra + b"\r\n" + body


def still_accepts(server: Server, delivery_id: str) -> None:
    assert server.deliver(delivery_id)[0] == 202
    assert delivery_id in server.submitted()


def test_pipelined_deliveries_are_answered_in_order_on_one_connection(bot: Server) -> None:
    with connect(bot) as sock:
        sock.sendall(delivery("pipe-1") + delivery("pipe-2") + b"GET /healthz HTTP/1.1\r\n\r\n")
        reader = Answers(sock)
        answers = [reader.next() for _ in range(3)]
    assert [status for status, _, _ in answers] == [202, 202, 200]
    assert [json.loads(body).get("accepted") for _, _, body in answers[:2]] == ["pipe-1", "pipe-2"]
    assert all("date" in headers for _, headers, _ in answers)
    assert {"pipe-1", "pipe-2"} <= set(bot.submitted())


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\n\r\n", 414),
        (b"GET /healthz HTTP/1.1\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n", 431),
        (
            b"GET /healthz HTTP/1.1\r\n"
            + b"".join(b"X-%d: 1\r\n" % n for n in range(101))
            + b"\r\n",
            431,
        ),
        # Headers the worker drops (underscores in their names) count towards the limit too.
        (
            b"GET /healthz HTTP/1.1\r\n"
            + b"".join(b"X_%d: 1\r\n" % n for n in range(101))
            + b"\r\n",
            431,
        ),
        (b"NOT HTTP AT ALL\r\n\r\n", 400),
        # Request smuggling: both lengths. llhttp refuses it; nothing reaches the app.
        (
            b"POST /webhook HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"0\r\n\r\n",
            400,
        ),
    ],
    ids=["long-url", "long-header", "many-headers", "many-dropped-headers", "garbage", "cl-and-te"],
)
def test_requests_past_gunicorns_limits_are_refused_and_closed(
    bot: Server, request_bytes: bytes, status: int
) -> None:
    with connect(bot) as sock:
        sock.sendall(request_bytes)
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:100]
    assert b"connection: close" in answer.lower()
    still_accepts(bot, f"after-{status}-{zlib.crc32(request_bytes)}")


def test_a_claimed_length_past_the_limit_gets_the_apps_413_before_any_body_is_read(
    bot: Server,
) -> None:
    head = delivery("too-big", body=b"")  # its Content-Length: 0 is replaced below
    head = head.replace(b"Content-Length: 0", b"Content-Length: %d" % (MAX_BODY + 1))
    with connect(bot) as sock:
        sock.sendall(head)  # and never the body
        answer = read_all(sock)
    status_line, _, body = answer.partition(b"\r\n\r\n")
    assert status_line.startswith(b"HTTP/1.1 413 ")
    assert str(MAX_BODY) in json.loads(body)["error"]  # the app's own answer
    still_accepts(bot, "after-claimed-413")


def test_a_chunked_body_growing_past_the_limit_is_cut_off(bot: Server) -> None:
    """No length to refuse up front: the worker holds the chunks until they pass the limit,
    then the app refuses the length they reached (413), and the rest is never read."""
    chunk = b"x" * 16384
    with connect(bot) as sock:
        sock.sendall(
            b"POST /webhook HTTP/1.1\r\nHost: bot\r\nTransfer-Encoding: chunked\r\n"
            b"X-GitHub-Event: issues\r\nX-GitHub-Delivery: chunked\r\n\r\n"
        )
        for _ in range(MAX_BODY // len(chunk) + 1):  # one chunk past the limit, and no more
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        answer = read_all(sock)
    status_line, _, body = answer.partition(b"\r\n\r\n")
    assert status_line.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert str(MAX_BODY) in json.loads(body)["error"]  # the app's own answer
    assert "chunked" not in bot.submitted()
    still_accepts(bot, "after-chunked-413")


def test_a_header_that_never_ends_is_cut_off_at_the_largest_head_the_limits_allow(
    bot: Server,
) -> None:
    """llhttp hands a header over only whole, so one sent forever would grow in memory until
    the header deadline (408): the worker cuts it off once the bytes pass what gunicorn's limits
    allow a whole head (431), or resets it, still sending."""
    answer = b""
    with connect(bot) as sock:
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nX-Endless: ")
            for _ in range(40):  # 2.5 MB in all, past the 0.8 MB the defaults allow
                sock.sendall(b"a" * 65536)
            answer = read_all(sock)
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed on us while we sent: cut off too
    assert answer == b"" or answer.startswith(b"HTTP/1.1 431 "), answer[:100]
    still_accepts(bot, "after-endless-header")


def unfinished_uploads(server: Server, count: int) -> list[socket.socket]:
    """`count` connections, each 60,000 bytes into a 65,000-byte body, and no further."""
    uploads = []
    for _ in range(count):
        sock = connect(server)
        uploads.append(sock)
        sock.sendall(
            b"POST /webhook HTTP/1.1\r\nHost: bot\r\nContent-Length: 65000\r\n\r\n" + b"x" * 60000
        )
    return uploads


def test_bodies_held_at_once_are_capped_and_released(bot: Server) -> None:
    """Each unfinished upload holds its body in the worker until it is whole: past four times
    the body limit held at once, a request is refused (503). Once they are gone, the memory is
    the worker's again and a delivery is accepted."""
    uploads = unfinished_uploads(bot, 5)  # 5 x 60,000 bytes > 4 x 65,536
    try:
        # The refusal comes as soon as the body that passes the cap arrives; the others wait
        # for the rest of their bodies (10 s before their own deadline).
        ready, _, _ = select.select(uploads, [], [], 5)
        answers = [read_all(sock) for sock in ready]
        assert answers, "no upload was refused"
        assert all(answer.startswith(b"HTTP/1.1 503 ") for answer in answers), answers
    finally:
        for sock in uploads:
            sock.close()
    time.sleep(0.5)  # the worker sees the five closed
    # Released: four uploads (240,000 bytes, under the cap) are held again, none refused.
    uploads = unfinished_uploads(bot, 4)
    try:
        ready, _, _ = select.select(uploads, [], [], 2)
        assert ready == [], [read_all(sock)[:80] for sock in ready]
    finally:
        for sock in uploads:
            sock.close()
    still_accepts(bot, "after-uploads")


def test_an_underscored_header_does_not_pass_for_the_signature(bot: Server) -> None:
    body = json.dumps({**labeled_issue(), "id": "underscore"}).encode()
    request = delivery("underscore", body=body).replace(
        b"X-Hub-Signature-256:", b"X_Hub_Signature_256:"
    )
    with connect(bot) as sock:
        sock.sendall(request)
        status, _, answer = read_answer(sock)
    assert status == 401, answer
    assert "underscore" not in bot.submitted()


def test_expect_100_continue_head_and_http_1_0(bot: Server) -> None:
    with connect(bot) as sock:
        sock.sendall(delivery("expect", extra=b"Expect: 100-continue\r\n").split(b"\r\n\r\n")[0])
        sock.sendall(b"\r\n\r\n")
        reader = Answers(sock)
        assert reader.next()[0] == 100  # HTTP/1.1 100 Continue: send the body
        rest = delivery("expect", extra=b"Expect: 100-continue\r\n").split(b"\r\n\r\n", 1)[1]
        sock.sendall(rest)
        status, _, _ = reader.next()
        assert status == 202
        sock.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: bot\r\n\r\n")
        status, headers, body = reader.next(head=True)
        assert body == b"" and reader.buffer == b""
        assert status == 200 and int(headers["content-length"]) > 0
    with connect(bot) as sock:
        sock.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        answer = read_all(sock)  # HTTP/1.0 without keep-alive: closed after the answer
    assert answer.startswith(b"HTTP/1.1 200 ") and json.loads(answer.split(b"\r\n\r\n")[1])["ok"]


def test_slow_and_idle_clients_are_closed_while_deliveries_go_on(bot: Server) -> None:
    """A client that stops inside its headers is answered 408 and closed after the header
    deadline; an idle kept-alive one is closed after keep-alive (1 s here); meanwhile, on the
    same one-worker server, deliveries are accepted."""
    slow, idle = connect(bot), connect(bot)
    with slow, idle:
        slow.sendall(b"POST /webhook HTTP/1.1\r\nX-GitHub-Event: iss")  # and stops
        idle.sendall(b"GET /healthz HTTP/1.1\r\n\r\n")
        assert read_answer(idle)[0] == 200
        still_accepts(bot, "while-slow")
        slow.settimeout(60)
        idle.settimeout(60)
        assert idle.recv(1) == b""  # keep-alive over: closed without a word
        assert read_all(slow).startswith(b"HTTP/1.1 408 ")


def test_an_app_that_raises_or_splits_headers_gets_a_500_and_the_worker_goes_on(
    tmp_path: Path,
) -> None:
    for app in ("broken", "splitting", "bad_status", "unencodable"):
        port = free_port()
        folder = tmp_path / app
        folder.mkdir()
        argv = [sys.executable, "-m", "gunicorn", "-k", WORKER, "-w", "1", "--no-control-socket"]
        argv += [
            "-b",
            f"127.0.0.1:{port}",
            "--pythonpath",
            str(ROOT),
            f"tests.bot.loop_worker_apps:{app}",
        ]
        server = start(argv, bot_env(folder, port), folder, port)
        try:
            for _ in range(2):  # the same worker answers twice: it did not die
                with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
                    sock.sendall(b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n")
                    answer = read_all(sock)
                assert answer.startswith(b"HTTP/1.1 500 "), answer[:200]
                assert b"forged" not in answer and b"never sent" not in answer
        finally:
            assert server.stop() == 0
        log = server.stderr.read_text()
        assert "Error handling request GET /x" in log
        assert log.count("Booting worker") == 1


def test_a_stopping_worker_answers_what_is_on_its_way(tmp_path: Path) -> None:
    """SIGTERM with a kept-alive connection idle: a request sent right after is still answered
    (with Connection: close), not dropped with the process."""
    port = free_port()
    env = {**bot_env(tmp_path, port), "FREEMAD_WORKERS": "1"}
    server = start(gunicorn_argv(), env, tmp_path, port)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        assert read_answer(sock)[0] == 200
        server.process.terminate()
        time.sleep(0.3)  # the worker has its SIGTERM; the connection is idle, not yet closed
        sock.sendall(delivery("on-its-way"))
        status, headers, _ = read_answer(sock)
    assert status == 202 and headers.get("connection") == "close"
    assert server.process.wait(timeout=60) == 0
    assert "on-its-way" in server.submitted()


def test_past_worker_connections_new_connections_wait_for_a_free_one(tmp_path: Path) -> None:
    """At its `worker_connections`, the worker stops accepting (the rest wait in the kernel's
    queue) and takes the next one when a connection closes."""
    port = free_port()
    env = {**bot_env(tmp_path, port), "FREEMAD_WORKERS": "1"}
    argv = gunicorn_argv()
    argv[-1:-1] = ["--worker-connections", "2", "--keep-alive", "60"]
    server = start(argv, env, tmp_path, port)
    try:
        first, second = (socket.create_connection(("127.0.0.1", port), timeout=15) for _ in "12")
        for sock in (first, second):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            assert read_answer(sock)[0] == 200  # both kept alive, idle: the limit is reached
        with socket.create_connection(("127.0.0.1", port), timeout=15) as third:
            third.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            third.settimeout(1.5)
            with pytest.raises(TimeoutError):
                third.recv(1)  # queued by the kernel, not taken
            first.close()
            third.settimeout(15)
            assert read_answer(third)[0] == 200
        second.close()
    finally:
        assert server.stop() == 0


def test_the_worker_serves_the_healthz_of_a_fresh_server(tmp_path: Path) -> None:
    """The settings we ship pick this worker for the local executor (the default)."""
    port = free_port()
    server = start(gunicorn_argv(), bot_env(tmp_path, port), tmp_path, port)
    try:
        wait_until_ready(server)
        assert f"Using worker: {WORKER}" in server.stderr.read_text()
    finally:
        assert server.stop() == 0


def test_gunicorns_own_access_format_reads_what_the_worker_gives_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A deployment that swaps the JSON access line for gunicorn's own format (request and
    response headers included) still gets its line."""
    from datetime import timedelta

    from gunicorn import glogging
    from gunicorn.config import Config

    from freemad.bot.loop_worker import _Logged, _LoggedRequest

    cfg = Config()
    cfg.set("accesslog", "-")
    cfg.set("access_log_format", "%(h)s %(r)s %(s)s %(b)s %({user-agent}i)s %({content-type}o)s")
    environ = {
        "REMOTE_ADDR": "192.0.2.7",
        "REQUEST_METHOD": "GET",
        "RAW_URI": "/healthz?x=1",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "PATH_INFO": "/healthz",
        "QUERY_STRING": "x=1",
    }
    response = _Logged("200 OK", 11, [("Content-Type", "application/json")])
    request = _LoggedRequest([(b"User-Agent", b"GitHub-Hookshot/1")])
    glogging.Logger(cfg).access(response, request, environ, timedelta(milliseconds=2))
    line = capsys.readouterr().out.strip()
    assert line == "192.0.2.7 GET /healthz?x=1 HTTP/1.1 200 11 GitHub-Hookshot/1 application/json"
