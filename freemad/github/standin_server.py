"""The stand-in's HTTP front: a server on 127.0.0.1 that hands every request, whole, to an
`Answerer` (the stand-in's `serve`) and writes back what it answers."""

from __future__ import annotations

from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, cast


class Answerer(Protocol):
    def serve(
        self, method: str, target: str, headers: Mapping[str, str], raw: bytes
    ) -> tuple[int, dict[str, str], bytes]: ...


class LoopbackServer(ThreadingHTTPServer):
    """On a free port of 127.0.0.1; `server_address[1]` says which."""

    daemon_threads = True

    def __init__(self, answerer: Answerer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answerer = answerer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "GitHub.com"

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        answerer = cast(LoopbackServer, self.server).answerer
        status, headers, data = answerer.serve(self.command, self.path, dict(self.headers), raw)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the answerer records every request."""
