"""The bot's gunicorn worker: gunicorn's gthread (its parser, its limits), minus the second a
recycled worker spent dying, with each response sent in one piece. It parses nothing itself.

A worker that reaches `max_requests` stops accepting, answers each request still arriving on its
kept-alive connections with `Connection: close` and closes them (gunicorn's gthread does that
from 27.0.1), and then has nothing left to do. Python's own teardown after that took about a
second here (in the interpreter's own finalization, after the exit functions: freeing every
module and closing the last SQLite connections, which checkpoints their WAL) while the master,
waiting for the process to end, started no replacement: with one worker, every delivery stalled
behind it. This worker ends its process as soon as its last connection is closed. Everything a
202 promised is committed by then, and the log handlers are flushed first.

When a signal stops it (SIGTERM stops the whole server; a reload replaces this worker), it first
accepts every connection the kernel has already queued on the listening sockets. Then it closes
its copies of those sockets. Once every process has closed them, a new connection is refused at
once; before this, it was queued and then reset, and the request it carried was lost
(tests/bot/test_recycling.py).

gunicorn writes a response's header block and its body in two sends; `_OneSend` joins them.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
from typing import Any, NoReturn

from gunicorn.workers import gthread  # type: ignore[import-untyped]  # gunicorn ships no types


class RecyclingThreadWorker(gthread.ThreadWorker):  # type: ignore[misc]  # gunicorn's untyped class
    """gthread's worker that exits at once after a graceful stop (a recycle or SIGTERM)."""

    signalled = False  # SIGTERM came, and the listening sockets are not yet let go

    @classmethod
    def check_config(cls, cfg: Any, log: Any) -> None:
        super().check_config(cfg, log)
        # Before 27, gthread closed the connections it kept alive the moment it stopped, and a
        # request already on its way on one of them got no answer (tests/bot/test_recycling.py).
        if cfg.max_requests and not hasattr(gthread, "STOP_KEEPALIVE_LINGER"):
            log.warning(
                "this gunicorn drops requests on kept-alive connections when a worker recycles;"
                " install gunicorn 27.0.1 or later, or set max_requests to 0"
            )

    def handle_exit(self, sig: int, frame: Any) -> None:
        self.signalled = True
        super().handle_exit(sig, frame)

    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled)
        if not enabled and not self.alive and self.signalled:
            self.signalled = False
            self._take_the_backlog_and_let_go()

    def _take_the_backlog_and_let_go(self) -> None:
        """Serve what the kernel accepted on our listening sockets (each answered with
        `Connection: close`: the worker is stopping), then close our copies of them."""
        for listener in self.sockets:
            while True:
                try:
                    client, address = listener.accept()  # non-blocking: EAGAIN when empty
                except OSError:
                    break
                self.nr_conns += 1
                client.setblocking(True)
                self.enqueue_req(gthread.TConn(self.cfg, client, address, listener.getsockname()))
            listener.close()

    def handle_request(self, req: Any, conn: Any) -> Any:
        # The response's header block and its body leave in one send (see _OneSend).
        raw = conn.sock
        conn.sock = combined = _OneSend(raw)
        try:
            answered = super().handle_request(req, conn)
        except BaseException:
            conn.sock = raw  # what gunicorn writes or closes now goes to the socket itself
            raise
        conn.sock = raw
        combined.flush()
        return answered

    def run(self) -> None:
        super().run()
        # Reached only through the graceful path: every connection answered or closed. An error
        # raises instead, so the master still sees its exit status.
        end_process(self)


def end_process(worker: Any) -> NoReturn:
    """End a worker's process after its graceful stop, without the interpreter's teardown. The
    exit functions (coverage's, a thread pool's join) are quick and still run."""
    worker.log.info("Worker exiting (pid: %s)", worker.pid)
    atexit._run_exitfuncs()
    _flush_logs()
    os._exit(0)


def _flush_logs() -> None:
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            with contextlib.suppress(Exception):  # a broken stream must not keep us alive
                handler.flush()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


class _OneSend:
    """A response's socket that holds its first write (gunicorn sends the header block apart)
    until the second (the body), so a small response leaves in one send: one system call and one
    segment on the wire, and one wake-up of the sender reading it, where there were two each.

    Anything else asked of the socket sends what is held first, so a file sent with sendfile
    still follows its headers.
    """

    __slots__ = ("_held", "_sock")

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self._held: bytes | None = b""  # None once the first two writes went out

    def sendall(self, data: bytes) -> None:
        if self._held is None:
            self._sock.sendall(data)
        elif not self._held:
            self._held = bytes(data)
        else:
            held, self._held = self._held, None
            self._sock.sendall(held + data)

    def flush(self) -> None:
        held, self._held = self._held, None
        if held:
            self._sock.sendall(held)

    def __getattr__(self, name: str) -> Any:
        self.flush()
        return getattr(self._sock, name)
