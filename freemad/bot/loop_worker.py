"""The bot's gunicorn worker when acknowledging never waits on the network (the local executor):
one asyncio event loop per process, requests parsed by llhttp (httptools), the WSGI app called
in the loop's own thread.

gthread hands every request on a kept-alive connection from its poller thread to a pool thread
and back and parses it in Python: about 0.45 ms of CPU per request here before the app runs,
more than the bot's own work (docs/benchmarks.md). An acknowledgement is a signature, a JSON
parse and one local SQLite commit, a fraction of a millisecond with nothing to wait for, so a
process can answer its connections one request at a time in one thread. `gunicorn_conf` picks
this worker unless each submit waits on GitHub (the actions executor), where the thread worker
lets other acknowledgements go on meanwhile.

What gthread does for us, this worker does too: the heartbeat, `max_requests` recycling and a
graceful stop that answers every request already on its way (on a kept-alive connection, with
`Connection: close`) before the process ends, and the request-line, header-count and
header-size limits of gunicorn's settings. On top of them: a request must send its headers within
`HEADER_SECONDS` of its first byte and may pause no longer than `BODY_IDLE_SECONDS` inside its
body; no body larger than the app's `MAX_CONTENT_LENGTH`, no head longer than the limits allow
in all, and no more than `BODY_BUDGET` bodies' worth across connections is held in memory. A
slow or oversized client costs a socket and never stalls the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
import socket
import sys
import time
from datetime import timedelta
from email.utils import formatdate
from typing import Any, NamedTuple

import httptools
from gunicorn.workers import base  # type: ignore[import-untyped]  # gunicorn ships no types

from freemad.bot.gunicorn_worker import end_process
from freemad.bot.settings import DEFAULT_MAX_BODY

# From the first byte of a request to the end of its headers (nginx's client_header_timeout).
HEADER_SECONDS = 10.0
# The longest pause between two reads of a request's body (nginx's client_body_timeout).
BODY_IDLE_SECONDS = 10.0
# How long a stopping worker keeps an idle kept-alive connection open (at most its keep-alive
# timeout) for a request a sender may already have sent: it is answered with Connection: close.
STOP_LINGER_SECONDS = 2.0

# Body bytes a worker holds for requests not yet answered, in multiples of the app's body limit:
# what gthread's four threads could hold at once. Past it a request is refused (503), so a
# thousand slow uploads cannot fill the memory.
BODY_BUDGET = 4
# The header block when a gunicorn limit is 0 (none): llhttp hands a header to us only whole, so
# without a cap a header sent forever would grow in memory until its deadline.
UNLIMITED_HEAD = 1024 * 1024

_REASONS = {
    400: "Bad Request",
    408: "Request Timeout",
    414: "URI Too Long",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
_NO_BODY = frozenset({204, 304})


class EventLoopWorker(base.Worker):  # type: ignore[misc]  # gunicorn's untyped class
    """A gunicorn worker serving a quick WSGI app from one event loop, one request at a time."""

    connections: set[_Connection]

    def run(self) -> None:
        self.connections = set()
        self.accepting: set[asyncio.Task[Any]] = set()
        self.listening: list[socket.socket] = []
        self.watching = False
        self.max_body = _max_body(self.wsgi)
        # gunicorn's settings, read once: each lookup on its Config is a call.
        cfg = self.cfg
        self.limits = _Limits(
            cfg.limit_request_line, cfg.limit_request_fields, cfg.limit_request_field_size
        )
        self.keepalive = cfg.keepalive
        self.max_head = _max_head(self.limits)
        self.body_budget = BODY_BUDGET * self.max_body
        self.buffered = 0  # body bytes held by all connections
        self.loop = loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._stopping = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, self.stop)
        try:
            loop.run_until_complete(self._serve())
        finally:
            loop.close()
        # Reached only through the graceful path, as in gunicorn_worker: end the process now,
        # without the second of interpreter teardown the master would wait for.
        end_process(self)

    def stop(self) -> None:
        """Stop accepting; answer what is on its way; then end (SIGTERM, or a recycle)."""
        self.alive = False
        self._stopping.set()

    def answered(self) -> None:
        """Count a response; the one that reaches max_requests starts the recycle."""
        self.nr += 1
        if self.nr >= self.max_requests and self.alive:
            self.log.info("Autorestarting worker after current request.")
            self.stop()

    async def _serve(self) -> None:
        loop = self.loop
        # Accepting by hand rather than asyncio's create_server: a Server closed to stop the
        # accepts resets every socket it accepted but has not yet given a protocol, which a
        # recycle under load always has a few of (tests/bot/test_recycling.py).
        self.listening = [listener.sock for listener in self.sockets]
        for sock in self.listening:
            sock.setblocking(False)
        self._accepting(True)
        beat = min(1.0, max(self.timeout / 2.0, 0.1))
        while self.alive:
            self.notify()
            if os.getppid() != self.ppid:
                self.log.info("Parent changed, shutting down: %s", self)
                break
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), beat)
        self.alive = False
        self._accepting(False)  # the master keeps the sockets: their queues wait for the next
        while self.accepting:  # sockets accepted already get their protocol
            await asyncio.wait(self.accepting)
        linger_until = loop.time() + STOP_LINGER_SECONDS
        for connection in list(self.connections):
            connection.stopping(linger_until)
        deadline = loop.time() + self.cfg.graceful_timeout
        while self.connections and loop.time() < deadline:
            self.notify()
            await asyncio.sleep(0.01)
        for connection in list(self.connections):
            connection.abort()

    def _accepting(self, on: bool) -> None:
        """Watch the listening sockets for connections, or stop (at the limit, or stopping)."""
        if on == self.watching or (on and not self.alive):
            return
        self.watching = on
        for sock in self.listening:
            if on:
                self.loop.add_reader(sock.fileno(), self._accept, sock)
            else:
                self.loop.remove_reader(sock.fileno())

    def closed(self, connection: _Connection) -> None:
        self.connections.discard(connection)
        self._accepting(True)

    def _accept(self, listening: socket.socket) -> None:
        """Take what the listening socket has queued, up to the connection limit."""
        for _ in range(self.cfg.backlog):
            if len(self.connections) + len(self.accepting) >= self.cfg.worker_connections:
                # The rest wait in the kernel's queue, for this worker (`closed`) or another.
                self._accepting(False)
                return
            try:
                sock, _ = listening.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:  # out of file descriptors, for one: try again later
                self.log.warning("cannot accept a connection: %s", exc)
                return
            task = self.loop.create_task(
                self.loop.connect_accepted_socket(lambda: _Connection(self), sock)
            )
            self.accepting.add(task)
            task.add_done_callback(self._accepted)

    def _accepted(self, task: asyncio.Task[Any]) -> None:
        self.accepting.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.log.warning("cannot open a connection: %s", task.exception())
            self._accepting(True)


class _Limits(NamedTuple):
    """gunicorn's request limits (0: none)."""

    line: int
    fields: int
    field_size: int


class _Refused(Exception):
    """Raised in a parser callback to stop parsing: the request gets `status` and the connection
    is closed."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Closed(Exception):
    """Raised in a parser callback once the connection is answered for the last time."""


class _Connection(asyncio.Protocol):
    """One client connection: parse, call the app when a request is whole, answer, repeat."""

    def __init__(self, worker: EventLoopWorker) -> None:
        self.worker = worker
        self.transport: Any = None
        self.closing = False
        self.busy = False  # a request has begun and is not answered yet
        self.timer: asyncio.TimerHandle | None = None
        self.deadline = 0.0  # for headers, or the end of keep-alive
        self.last_read = 0.0
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.header_count = 0
        self.in_head = True  # reading a request line and headers (or waiting for one)
        self.head_bytes = 0
        self.body: list[bytes] = []
        self.body_size = 0
        self.held = 0  # of the worker's buffered bytes
        self.started = 0.0
        self.expect_continue = False

    # asyncio's side

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        worker = self.worker
        worker.connections.add(self)
        self.parser = httptools.HttpRequestParser(self)
        peer = transport.get_extra_info("peername")
        self.remote = peer if isinstance(peer, tuple) else ("", 0)
        here = transport.get_extra_info("sockname")
        self.server = here if isinstance(here, tuple) else ("localhost", 0)
        now = worker.loop.time()
        # Accepted just before the worker stopped: served all the same, and closed after.
        self._expire_at(now + (HEADER_SECONDS if worker.alive else STOP_LINGER_SECONDS))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        if self.timer is not None:
            self.timer.cancel()
        self._release_body()
        self.worker.closed(self)

    def pause_writing(self) -> None:  # a client that sends without reading its answers
        self.transport.pause_reading()

    def resume_writing(self) -> None:
        if not self.closing:
            self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        self.last_read = self.worker.loop.time()
        if self.in_head:
            self.head_bytes += len(data)
            if self.head_bytes > self.worker.max_head:
                self._refuse(431)
                return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            if isinstance(cause, _Refused):
                self._refuse(cause.status)
            elif not isinstance(cause, _Closed):
                self.worker.log.error("cannot parse a request: %s", type(cause).__name__)
                self._refuse(400)
        except httptools.HttpParserUpgrade:
            self._close()  # answered as a plain request already; no protocol switch here
        except httptools.HttpParserError:
            self._refuse(400)

    # httptools' side (each call is inside feed_data)

    def on_message_begin(self) -> None:
        self.busy = True
        self.started = time.time()
        self.url = b""
        self.headers = []
        self.header_count = 0
        self.body = []
        self.body_size = 0
        self.expect_continue = False
        self._expire_at(self.last_read + HEADER_SECONDS)

    def on_url(self, url: bytes) -> None:
        self.url += url
        limit = self.worker.limits.line
        if limit and len(self.url) > limit:
            raise _Refused(414)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.header_count += 1
        if b"_" not in name:  # as gunicorn: X_Forwarded_For must not pass for X-Forwarded-For
            self.headers.append((name, value))
        _, fields, size = self.worker.limits
        if (size and len(name) + len(value) > size) or (fields and self.header_count > fields):
            raise _Refused(431)

    def on_headers_complete(self) -> None:
        self.in_head = False
        self.head_bytes = 0
        length = None
        for name, value in self.headers:
            lowered = name.lower()
            if lowered == b"content-length":
                length = int(value)  # llhttp accepted it, so it is digits
            elif lowered == b"expect":
                self.expect_continue = value.strip().lower() == b"100-continue"
        if length is not None and length > self.worker.max_body:
            self._answer_too_large(length)
        if self.expect_continue:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self._expire_at(None)  # the body's deadline moves with each read (_expired)

    def on_body(self, chunk: bytes) -> None:
        worker = self.worker
        self.body_size += len(chunk)
        if self.body_size > worker.max_body:
            self._answer_too_large(self.body_size)
        if worker.buffered + len(chunk) > worker.body_budget:
            worker.log.warning("request bodies past %d bytes held: one refused", worker.body_budget)
            raise _Refused(503)
        worker.buffered += len(chunk)
        self.held += len(chunk)
        self.body.append(chunk)

    def on_message_complete(self) -> None:
        self.in_head = True  # the next request, if any, begins with its head
        environ = self._environ(io.BytesIO(b"".join(self.body)), self.body_size)
        self.body = []
        try:
            self._answer(environ)
        finally:
            self._release_body()

    def _release_body(self) -> None:
        self.worker.buffered -= self.held
        self.held = 0

    # the request's answer

    def _environ(self, body: io.BytesIO, length: int) -> dict[str, Any]:
        parser = self.parser
        url = self.url
        path, _, query = url.partition(b"?")
        path = path.partition(b"#")[0]
        if path.startswith((b"http://", b"https://")):  # absolute form
            path = b"/" + path.split(b"/", 3)[-1] if path.count(b"/") >= 3 else b"/"
        version = parser.get_http_version()
        environ: dict[str, Any] = {
            "REQUEST_METHOD": parser.get_method().decode("latin-1"),
            "SCRIPT_NAME": "",
            "PATH_INFO": _unquote(path).decode("latin-1"),
            "QUERY_STRING": query.decode("latin-1"),
            "RAW_URI": url.decode("latin-1"),
            "SERVER_NAME": str(self.server[0]),
            "SERVER_PORT": str(self.server[1]),
            "SERVER_PROTOCOL": f"HTTP/{version}",
            "REMOTE_ADDR": str(self.remote[0]),
            "REMOTE_PORT": str(self.remote[1]),
            "CONTENT_LENGTH": str(length),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": body,
            "wsgi.input_terminated": True,
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": False,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
        }
        for raw_name, raw_value in self.headers:
            name = raw_name.decode("latin-1").upper().replace("-", "_")
            value = raw_value.decode("latin-1")
            if name == "CONTENT_TYPE":
                environ[name] = value
            elif name != "CONTENT_LENGTH":
                key = "HTTP_" + name
                environ[key] = f"{environ[key]},{value}" if key in environ else value
        return environ

    def _answer(self, environ: dict[str, Any], *, last: bool = False) -> None:
        worker = self.worker
        status, code, headers, body = _call(worker, environ)
        keep = (
            not last
            and worker.alive
            and worker.nr + 1 < worker.max_requests  # the answer that starts a recycle closes
            and worker.keepalive > 0
            and code != 500
            and self.parser.should_keep_alive()
        )
        self._write(environ, status, code, headers, body, keep)
        self.busy = False
        worker.answered()
        if not keep:
            self._close()
            raise _Closed
        self._expire_at(worker.loop.time() + worker.keepalive)

    def _write(
        self,
        environ: dict[str, Any],
        status: str,
        code: int,
        headers: list[tuple[str, str]],
        body: bytes,
        keep: bool,
    ) -> None:
        lines = [f"HTTP/1.1 {status}", f"Date: {_date()}"]
        has_length = False
        for name, value in headers:
            lowered = name.lower()
            if lowered in ("connection", "transfer-encoding", "keep-alive"):
                continue  # hop-by-hop: the server's to say
            has_length = has_length or lowered == "content-length"
            lines.append(f"{name}: {value}")
        bodiless = code in _NO_BODY or code < 200
        if not has_length and not bodiless:
            lines.append(f"Content-Length: {len(body)}")
        if not keep:
            lines.append("Connection: close")
        elif environ["SERVER_PROTOCOL"] == "HTTP/1.0":
            lines.append("Connection: keep-alive")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        sent = b"" if bodiless or environ["REQUEST_METHOD"] == "HEAD" else body
        self.transport.write(head + sent)
        log = self.worker.log
        if log.access_log_enabled:
            took = timedelta(seconds=max(0.0, time.time() - self.started))
            response = _Logged(status, len(sent), headers)
            log.access(response, _LoggedRequest(self.headers), environ, took)

    def _answer_too_large(self, size: int) -> None:
        """The app says why (it refuses a length past its limit without reading a byte), and the
        rest of the body is never read."""
        self.expect_continue = False
        environ = self._environ(io.BytesIO(b""), size)
        # A chunked body is presented by the length it reached: a WSGI app reads no length from
        # a request that says it is chunked (werkzeug's content_length is then None).
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        self.body = []
        self._release_body()
        self._answer(environ, last=True)

    def _refuse(self, code: int) -> None:
        """A request the parser or a limit refused, answered without the app."""
        reason = _REASONS.get(code, "Bad Request")
        body = f"{code} {reason}\n".encode("ascii")
        head = (
            f"HTTP/1.1 {code} {reason}\r\nDate: {_date()}\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        self.transport.write(head.encode("ascii") + body)
        peer = self.remote[0] or "-"
        self.worker.log.warning("Invalid request from ip=%s: %d %s", peer, code, reason)
        self._close()

    # closing

    def stopping(self, linger_until: float) -> None:
        """The worker stops: an idle connection gets until `linger_until` (or its keep-alive
        end, if sooner) for a request already on its way; a busy one finishes its request."""
        if not self.busy and not self.closing:
            self._expire_at(min(self.deadline, linger_until))

    def abort(self) -> None:
        self.closing = True
        if self.transport is not None:
            self.transport.abort()

    def _close(self) -> None:
        self.closing = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.transport.close()  # after what is buffered is written

    def _expire_at(self, deadline: float | None) -> None:
        """Arm the connection's one timer: at `deadline`, or, with None, for the body's next
        read."""
        if self.timer is not None:
            self.timer.cancel()
        loop = self.worker.loop
        if deadline is None:
            self.deadline = 0.0
            self.timer = loop.call_at(self.last_read + BODY_IDLE_SECONDS, self._expired)
        else:
            self.deadline = deadline
            self.timer = loop.call_at(deadline, self._expired)

    def _expired(self) -> None:
        self.timer = None
        if self.closing:
            return
        loop = self.worker.loop
        if self.deadline == 0.0:  # in a body: measured from its last read
            due = self.last_read + BODY_IDLE_SECONDS
            if loop.time() < due:
                self.timer = loop.call_at(due, self._expired)
                return
        if self.busy:
            self._refuse(408)
        else:
            self._close()  # idle: keep-alive over, or a connection that never sent a request


class _Logged(NamedTuple):
    """What gunicorn's access logger reads of a response."""

    status: str
    sent: int
    headers: list[tuple[str, str]]

    @property
    def response_length(self) -> int:
        return self.sent


class _LoggedRequest:
    """What gunicorn's access logger reads of a request: its headers, decoded only if a log
    format asks for one (FREE-MAD's JSON access line reads the environ instead)."""

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self.raw = raw

    @property
    def headers(self) -> list[tuple[str, str]]:
        return [(n.decode("latin-1").upper(), v.decode("latin-1")) for n, v in self.raw]


def _call(
    worker: EventLoopWorker, environ: dict[str, Any]
) -> tuple[str, int, list[tuple[str, str]], bytes]:
    """The WSGI app's answer, whole: status line, code, headers, body. A failing app, or one that
    answers with a status or a header that would split the response, is a 500."""
    answer: list[Any] = []
    written: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        answer[:] = [status, headers]
        return written.append

    try:
        result = worker.wsgi(environ, start_response)
        try:
            body = b"".join([*written, *result])
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        status, headers = answer
        code = int(status.split(None, 1)[0])
        if not 100 <= code <= 999 or any(c in status for c in "\r\n\0"):
            raise ValueError(f"not a status line: {status[:100]!r}")
        status.encode("latin-1")  # what WSGI allows on the wire; anything else is the app's error
        for name, value in headers:
            if any(c in name or c in value for c in "\r\n\0") or ":" in name:
                raise ValueError(f"a response header cannot carry {name!r}")
            name.encode("latin-1")
            value.encode("latin-1")
        return status, code, list(headers), body
    except Exception:
        worker.log.exception(
            "Error handling request %s %s", environ["REQUEST_METHOD"], environ["RAW_URI"][:200]
        )
        return (
            "500 Internal Server Error",
            500,
            [("Content-Type", "text/plain")],
            b"Internal Server Error\n",
        )


def _max_head(limits: _Limits) -> int:
    """The most a request line and its headers can take within gunicorn's limits."""
    if not all(limits):
        return UNLIMITED_HEAD
    return limits.line + limits.fields * (limits.field_size + 4) + 4


def _max_body(app: Any) -> int:
    """The app's own body limit (Flask's MAX_CONTENT_LENGTH), or GitHub's 25 MB."""
    config = getattr(app, "config", None)
    limit = config.get("MAX_CONTENT_LENGTH") if isinstance(config, dict) else None
    return int(limit) if isinstance(limit, int) and limit >= 0 else DEFAULT_MAX_BODY


_dated = [0, ""]


def _date() -> str:
    now = int(time.time())
    if _dated[0] != now:
        _dated[:] = [now, formatdate(now, usegmt=True)]
    return str(_dated[1])


def _unquote(path: bytes) -> bytes:
    if b"%" not in path:
        return path
    from urllib.parse import unquote_to_bytes

    return unquote_to_bytes(path)
