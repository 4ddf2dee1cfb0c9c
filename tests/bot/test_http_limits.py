"""The bot's HTTP server under attack: real gunicorn on loopback with the settings we ship (its
gthread worker and its own parser), raw sockets writing what a hostile or broken client would.

Each case the red team ran against the servers (docs/bot.md, "Limits") is held here once: every
refusal comes as an answer or a closed connection, never a stalled worker, and each test ends
with a signed delivery that the same server still accepts. Slow clients: tests/bot/test_slow_clients.py.
"""

from __future__ import annotations

import json
import socket
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bot.test_gunicorn import Server, bot_env, gunicorn_argv, sign, start
from tests.conftest import free_port
from tests.github.payloads import labeled_issue

MAX_BODY = 64 * 1024  # bot_env's FREEMAD_MAX_BODY


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp_path = tmp_path_factory.mktemp("http-limits")
    port = free_port()
    env = {**bot_env(tmp_path, port), "FREEMAD_WORKERS": "1"}
    server = start(gunicorn_argv(), env, tmp_path, port)
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


def body_of(delivery_id: str) -> bytes:
    return json.dumps({**labeled_issue(), "id": delivery_id}).encode()


def delivery(delivery_id: str, *, extra: bytes = b"", body: bytes | None = None) -> bytes:
    body = body if body is not None else body_of(delivery_id)
    head = (
        f"POST /webhook HTTP/1.1\r\nHost: bot\r\nContent-Type: application/json\r\n"
        f"X-GitHub-Event: issues\r\nX-GitHub-Delivery: {delivery_id}\r\n"
        f"X-Hub-Signature-256: {sign(body)}\r\nContent-Length: {len(body)}\r\n"
    ).encode()
    return head + extra + b"\r\n" + body


def chunked(head: bytes, body: bytes) -> bytes:
    """A POST of `body` in one chunk, the head's own lines first."""
    return head + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n" % (len(body), body)


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
    assert {"pipe-1", "pipe-2"} <= set(bot.submitted())


HOST = b"Host: bot\r\n"


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
        (b"NOT HTTP AT ALL\r\n\r\n", 400),
        # Request smuggling: both lengths; nothing reaches the app.
        (
            b"POST /webhook HTTP/1.1\r\n"
            + HOST
            + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            400,
        ),
        (
            b"POST /webhook HTTP/1.1\r\n"
            + HOST
            + b"Content-Length: 4\r\nContent-Length: 4\r\n\r\n{}{}",
            400,
        ),
        # What a lenient parser passes on (docs/bot.md, "Limits"): two Hosts, HTTP/0.9 and 2.0
        # request lines, a folded header line, a bare LF.
        (b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"GET /healthz\r\n\r\n", 400),
        (b"GET /healthz HTTP/2.0\r\n" + HOST + b"\r\n", 400),
        (b"GET /healthz HTTP/1.1\r\n" + HOST + b"X-A: 1\r\n folded\r\n\r\n", 400),
        (b"GET /healthz HTTP/1.1\n" + HOST + b"\r\n", 400),
    ],
    ids=[
        "long-url",
        "long-header",
        "many-headers",
        "garbage",
        "cl-and-te",
        "two-lengths",
        "two-hosts",
        "http-0.9",
        "http-2.0-line",
        "obs-fold",
        "bare-lf",
    ],
)
def test_requests_past_the_servers_limits_are_refused_and_closed(
    bot: Server, request_bytes: bytes, status: int
) -> None:
    with connect(bot) as sock:
        sock.sendall(request_bytes)
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:100]
    still_accepts(bot, f"after-{status}-{zlib.crc32(request_bytes)}")


def test_a_claimed_length_past_the_limit_gets_the_apps_413_before_any_body_is_read(
    bot: Server,
) -> None:
    head = delivery("too-big", body=b"")  # its Content-Length: 0 is replaced below
    head = head.replace(b"Content-Length: 0", b"Content-Length: %d" % (MAX_BODY + 1))
    with connect(bot) as sock:
        sock.sendall(head)  # and never the body
        status, _, body = read_answer(sock)
    assert status == 413 and str(MAX_BODY) in json.loads(body)["error"]  # the app's own answer
    still_accepts(bot, "after-claimed-413")


def test_a_chunked_body_past_the_limit_is_not_accepted(bot: Server) -> None:
    """No length to refuse up front: the body is read up to the limit and no further, and a
    signature cannot match what was cut off (401); nothing is submitted."""
    body = body_of("chunked-big")[:-1] + b', "pad": "' + b"x" * MAX_BODY + b'"}'
    head = delivery("chunked-big", body=body).split(b"Content-Length:")[0]
    with connect(bot) as sock:
        sock.sendall(chunked(head, body) + b"\r\n")
        status, _, answer = read_answer(sock)
    assert status == 401, answer
    assert "chunked-big" not in bot.submitted()
    still_accepts(bot, "after-chunked-big")


def test_a_header_that_never_ends_is_cut_off(bot: Server) -> None:
    """A header sent forever is refused once it passes the field limit (431), or reset while
    the client still sends: it never grows in the worker's memory."""
    answer = b""
    with connect(bot) as sock:
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nX-Endless: ")
            for _ in range(40):  # 2.5 MB in all
                sock.sendall(b"a" * 65536)
            answer = read_all(sock)
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed on us while we sent: cut off too
    assert answer == b"" or answer.startswith(b"HTTP/1.1 431 "), answer[:100]
    still_accepts(bot, "after-endless-header")


def test_a_trailer_that_never_ends_is_cut_off(bot: Server) -> None:
    """After the last chunk, trailer fields count against the header limits too: an endless one
    is refused (400, the body cannot be read) or reset, never held growing in the worker (a
    hand-written server let one grow without bound)."""
    answer = b""
    with connect(bot) as sock:
        try:
            sock.sendall(
                b"POST /webhook HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"2\r\n{}\r\n0\r\nX-Big: "
            )
            for _ in range(40):  # 2.5 MB in all, past the 0.8 MB head the limits allow
                sock.sendall(b"a" * 65536)
            answer = read_all(sock)
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed on us while we sent: cut off too
    if answer:
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 ") and b"could not be read" in body, answer[:300]
    still_accepts(bot, "after-endless-trailer")


def test_trailer_fields_never_become_request_headers(bot: Server) -> None:
    """The event, the delivery id and a valid signature sent only as trailers (after the body,
    past a proxy that checked the headers) are not the request's headers: 401."""
    body = b'{"zen": "trailer"}'
    with connect(bot) as sock:
        sock.sendall(
            b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            + b"%x\r\n%s\r\n0\r\n" % (len(body), body)
            + b"X-GitHub-Event: ping\r\nX-GitHub-Delivery: trailer-1\r\n"
            + f"X-Hub-Signature-256: {sign(body)}\r\n\r\n".encode()
        )
        status, _, answer = read_answer(sock)
    assert status == 401, answer


def test_spaces_around_a_header_value_are_not_part_of_it(bot: Server) -> None:
    """RFC 9110 5.5: a padded value is the value (a hand-written server refused every genuine
    delivery a proxy padded)."""
    body = b'{"zen": "padded"}'
    with connect(bot) as sock:
        sock.sendall(
            b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"X-GitHub-Event: ping \r\nX-GitHub-Delivery:  padded-1\t\r\n"
            + f"X-Hub-Signature-256: {sign(body)}   \r\n".encode()
            + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        status, _, answer = read_answer(sock)
    assert status == 200 and json.loads(answer)["zen"] == "padded", answer


@pytest.mark.parametrize(
    "size_line",
    [b"zz", b"f;a\nb", b"f \r\n"],
    ids=["not-hex", "lf-in-extension", "space-after-size"],
)
def test_a_malformed_chunk_is_refused_as_the_clients_fault(bot: Server, size_line: bytes) -> None:
    """gunicorn's reader raises inside the app when the app reads the body: the app answers
    400, not 500, and records nothing."""
    name = f"chunk-{zlib.crc32(size_line)}"
    body = body_of(name)[:15]
    head = delivery(name, body=body).split(b"Content-Length:")[0]
    with connect(bot) as sock:
        sock.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n" + size_line + b"\r\n" + body)
        sock.sendall(b"\r\n0\r\n\r\n")
        status, _, answer = read_answer(sock)
    assert status == 400, answer
    assert json.loads(answer)["error"] == "the request body could not be read"
    assert name not in bot.submitted()
    still_accepts(bot, f"after-{name}")


def test_an_underscored_header_does_not_pass_for_the_signature(bot: Server) -> None:
    request = delivery("underscore").replace(b"X-Hub-Signature-256:", b"X_Hub_Signature_256:")
    with connect(bot) as sock:
        sock.sendall(request)
        status, _, answer = read_answer(sock)
    assert status == 401, answer
    assert "underscore" not in bot.submitted()


def test_expect_100_continue_head_and_http_1_0(bot: Server) -> None:
    head, rest = delivery("expect", extra=b"Expect: 100-continue\r\n").split(b"\r\n\r\n", 1)
    with connect(bot) as sock:
        sock.sendall(head + b"\r\n\r\n")
        reader = Answers(sock)
        assert reader.next()[0] == 100  # HTTP/1.1 100 Continue: send the body
        sock.sendall(rest)
        assert reader.next()[0] == 202
        sock.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: bot\r\n\r\n")
        status, headers, body = reader.next(head=True)
        assert body == b"" and reader.buffer == b""
        assert status == 200 and int(headers["content-length"]) > 0
    with connect(bot) as sock:
        sock.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        answer = read_all(sock)  # HTTP/1.0 without keep-alive: closed after the answer
    assert answer.startswith(b"HTTP/1.") and json.loads(answer.split(b"\r\n\r\n")[1])["ok"]


def closed_by_the_server(sock: socket.socket) -> bool:
    """Whether the server has closed `sock`, looking without waiting."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        sock.setblocking(True)


def test_idle_and_silent_connections_are_closed_by_the_server(bot: Server) -> None:
    """The bot alone closes a kept-alive connection left idle (`keepalive`, 5 s) and one that
    never sends a byte (5 s waiting on a thread, then the keep-alive time without one): neither
    is held open for as long as the client likes. (A client that sends slowly is held: that
    takes the proxy, tests/bot/test_slow_clients.py.)"""
    with connect(bot) as idle, connect(bot) as silent:
        idle.settimeout(60)
        silent.settimeout(60)
        idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: bot\r\n\r\n")
        assert read_answer(idle)[0] == 200
        assert read_all(idle) == b""  # socket.timeout (a test error) if it stayed open
        assert read_all(silent) == b""
    still_accepts(bot, "after-idle-and-silent")


def test_connections_past_worker_connections_wait_until_one_closes(tmp_path: Path) -> None:
    """`worker_connections` bounds the connections a worker holds: past it, a new connection
    waits unanswered in the listen backlog until the worker closes one. Lowered from the bot's
    1,000 to 6 to see it: six silent connections fill it (each holds a thread for 5 s, then
    waits the keep-alive time without one, then is closed), and a delivery on a seventh is
    answered only after the worker has closed some of them. Without the bound it would be
    answered as soon as a thread was free, with every silent connection still open."""
    port = free_port()
    env = {
        **bot_env(tmp_path, port),
        "FREEMAD_WORKERS": "1",
        "GUNICORN_CMD_ARGS": "--worker-connections 6",
    }
    server = start(gunicorn_argv(), env, tmp_path, port)
    silent = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(6)]
    try:
        time.sleep(0.5)  # all six accepted: the worker stops accepting
        with socket.create_connection(("127.0.0.1", port), timeout=60) as extra:
            extra.sendall(delivery("past-worker-connections"))
            status, _, _ = read_answer(extra)
            closed = sum(closed_by_the_server(sock) for sock in silent)
        assert status == 202 and closed >= 1
    finally:
        for sock in silent:
            sock.close()
        assert server.stop() == 0
    assert "past-worker-connections" in server.submitted()


def test_a_stopping_server_answers_what_is_on_its_way(tmp_path: Path) -> None:
    """SIGTERM with a kept-alive connection idle: a request sent right after is still answered
    (with Connection: close) and recorded, not dropped with the process."""
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


def test_a_stopping_server_finishes_a_request_whose_body_is_still_coming(tmp_path: Path) -> None:
    """SIGTERM while a delivery's body is half sent: the worker waits for the rest (within the
    graceful timeout), answers 202 and records it."""
    port = free_port()
    env = {**bot_env(tmp_path, port), "FREEMAD_WORKERS": "1"}
    server = start(gunicorn_argv(), env, tmp_path, port)
    request = delivery("half-sent")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request[: len(request) // 2])
        time.sleep(0.3)  # the worker is reading it
        server.process.terminate()
        time.sleep(1.0)
        sock.sendall(request[len(request) // 2 :])
        status, _, _ = read_answer(sock)
    assert status == 202
    assert server.process.wait(timeout=60) == 0
    assert "half-sent" in server.submitted()
