"""How the live dashboard answers when it does not serve a page: errors, refusals, headers."""

from __future__ import annotations

from collections.abc import Callable

from flask import Response, jsonify, request
from markupsafe import escape
from werkzeug.exceptions import HTTPException

from freemad.errors import FreemadError
from freemad.store.store_port import StoreUnreadable

Warn = Callable[[str], None]
_JSON_PATHS = ("/api/", "/health", "/events")


class Problem(HTTPException):
    """An answer with a status and one line of explanation (JSON or a small page)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def reason(exc: BaseException) -> str:
    if isinstance(exc, FreemadError):
        return exc.one_line()
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    return " ".join(str(exc).split()) or type(exc).__name__


def names_its_source(exc: BaseException) -> bool:
    """Whether `reason(exc)` already says which source failed: FREE-MAD's errors do, except a
    store's failed read (in SQLite's words); the system's (OSError) do not."""
    return isinstance(exc, FreemadError) and not isinstance(exc, StoreUnreadable)


def read_only_unless(may_start: bool) -> Callable[[], Response | None]:
    def gate() -> Response | None:
        if request.method in ("GET", "HEAD"):
            return None
        rule = request.url_rule  # None when no route takes this method at this path
        if may_start and request.method == "POST" and rule and "POST" in (rule.methods or ()):
            return None  # a route of the start token's (freemad.dashboard.steering.task_steering)
        answer = error(405, "this dashboard is read-only" if not may_start else "not allowed")
        answer.headers["Allow"] = "GET, HEAD"
        return answer

    return gate


def security_headers(answer: Response) -> Response:
    answer.headers.setdefault("X-Content-Type-Options", "nosniff")
    answer.headers.setdefault("Referrer-Policy", "no-referrer")
    answer.headers.setdefault("X-Frame-Options", "DENY")
    if answer.mimetype == "text/html":
        # The page's own policy is in a meta tag; framing can only be refused by a header.
        answer.headers.setdefault("Content-Security-Policy", "frame-ancestors 'none'")
        answer.headers.setdefault("Cache-Control", "no-cache")
    else:
        answer.headers.setdefault(
            "Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"
        )
    return answer


def html(page: str) -> Response:
    return Response(page, mimetype="text/html")


def json_error(code: int, message: str) -> tuple[Response, int]:
    return jsonify({"error": message}), code


def error(code: int, message: str) -> Response:
    line = " ".join(message.split())
    if request.path.startswith(_JSON_PATHS):
        answer = jsonify(
            {"ok": False, "error": line} if request.path == "/health" else {"error": line}
        )
    else:
        answer = html(
            f'<!doctype html><html lang="en"><meta charset="utf-8"><title>{code}</title>'
            f'<p>{escape(line)}</p><p><a href="/index.html">All runs</a></p></html>'
        )
    answer.status_code = code
    return answer


def http_error(exc: HTTPException) -> Response:
    answer = error(exc.code or 500, exc.description or exc.name)
    if exc.code == 405:
        answer.headers["Allow"] = "GET, HEAD"
    return answer


def internal_error(warn: Warn) -> Callable[[Exception], Response]:
    def handle(exc: Exception) -> Response:
        warn(f"{request.method} {request.path}: {type(exc).__name__}: {reason(exc)}")
        return error(500, "internal error")

    return handle
