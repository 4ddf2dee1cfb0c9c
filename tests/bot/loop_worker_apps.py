"""WSGI apps that misbehave, for the event-loop worker's tests (tests/bot/test_loop_worker.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

StartResponse = Callable[..., Any]


def healthy(start_response: StartResponse) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Type", "application/json")])
    return [b'{"ok": true}']


def broken(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    """Raises out of the app, where the bot's Flask app would have answered a JSON 500."""
    if environ["PATH_INFO"] == "/healthz":
        return healthy(start_response)
    raise RuntimeError("the app fails")


def splitting(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    """Answers with a header that would end the head early and add one of its own."""
    if environ["PATH_INFO"] == "/healthz":
        return healthy(start_response)
    start_response("200 OK", [("X-Echo", "a\r\nSet-Cookie: session=forged")])
    return [b"never sent"]


def bad_status(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    """Answers with a status line that smuggles a header of its own."""
    if environ["PATH_INFO"] == "/healthz":
        return healthy(start_response)
    start_response("200 OK\r\nSet-Cookie: session=forged", [])
    return [b"never sent"]


def unencodable(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    """Answers with a header value WSGI cannot put on the wire (not Latin-1)."""
    if environ["PATH_INFO"] == "/healthz":
        return healthy(start_response)
    start_response("200 OK", [("X-Drink", "caf\u00e9 \u2615")])
    return [b"never sent"]
