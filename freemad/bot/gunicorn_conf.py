"""gunicorn's settings for the bot's web edge: `freemad bot serve` loads this module.

`gunicorn -c python:freemad.bot.gunicorn_conf` runs the bot alone, from any installation; the
repository's deployment file `bot/gunicorn.conf.py` (not in the package) only star-imports this
module. `freemad bot serve` passes its options through `FREEMAD_BIND` and `FREEMAD_WORKERS`.
gunicorn reads every module-level name that matches one of its settings, so keep helpers private.
"""

from __future__ import annotations

import importlib as _importlib
import json as _json
import os as _os
from datetime import datetime as _datetime
from datetime import timezone as _timezone
from typing import Any

from gunicorn import glogging as _glogging  # type: ignore[import-untyped]  # gunicorn ships no types

from freemad.bot.json_logs import JsonLogFormatter as _JsonLogFormatter
from freemad.gunicorn_common import heartbeat_dir as _heartbeat_dir
from freemad.gunicorn_common import log_level as _log_level
from freemad.gunicorn_common import run_as_module_again as _run_as_module_again

_MAX_WORKERS = 8
# What a worker's app needs, imported once by the master (`on_starting`): each worker, the ones
# that replace recycled workers included, forks with them loaded and builds its app in
# milliseconds instead of importing for ~0.7 s while nothing accepts (docs/benchmarks.md).
_APP_MODULES = (
    "flask",
    "huey",
    "huey.storage",
    "freemad.bot.web",
    "freemad.bot.executors",
    "freemad.bot.stores",
)


def _workers() -> int:
    """FREEMAD_WORKERS, or CPUs + 1 capped at 8. Acknowledging is CPU-bound (a signature, a
    JSON parse, one SQLite commit, under 1 ms with gunicorn's share): one process more than the
    cores covers the moments one waits on the acknowledgement lock, and more only add
    contention (docs/benchmarks.md)."""
    value = _os.environ.get("FREEMAD_WORKERS", "").strip()
    if value:
        return max(1, int(value))
    return min((_os.cpu_count() or 1) + 1, _MAX_WORKERS)


class JsonLogger(_glogging.Logger):  # type: ignore[misc]  # subclassing gunicorn's untyped class
    """gunicorn's logger with JSON lines: errors on stderr, one access line per request on stdout."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        handler = self._get_gunicorn_handler(self.error_log)
        if handler is not None:
            handler.setFormatter(_JsonLogFormatter())

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        if not self.access_log_enabled:
            return
        try:
            self.access_log.info(_json.dumps(_access_entry(resp, environ, request_time)))
        except Exception:
            self.error_log.exception("cannot write the access log")


def _access_entry(resp: Any, environ: dict[str, Any], request_time: Any) -> dict[str, Any]:
    status = resp.status.split(None, 1)[0] if isinstance(resp.status, str) else resp.status
    entry: dict[str, Any] = {
        "time": _datetime.now(_timezone.utc).isoformat(),
        "level": "INFO",
        "logger": "gunicorn.access",
        "message": "request",
        "remote": environ.get("REMOTE_ADDR"),
        "method": environ.get("REQUEST_METHOD"),
        "path": environ.get("PATH_INFO"),  # never the query string: it may carry a token
        "status": int(status) if status is not None else None,
        "bytes": getattr(resp, "sent", None),
        "duration_ms": round(request_time.total_seconds() * 1000, 3),
        "user_agent": environ.get("HTTP_USER_AGENT"),
    }
    for key, header in (
        ("delivery_id", "HTTP_X_GITHUB_DELIVERY"),
        ("event", "HTTP_X_GITHUB_EVENT"),
    ):
        if header in environ:
            entry[key] = str(environ[header])[:200]
    return entry


pre_exec = _run_as_module_again  # USR2: the new master


def on_starting(server: Any) -> None:
    """In the master, before any worker forks: import what the app needs (not the app itself:
    each worker builds its own, so no SQLite connection crosses a fork). A module that cannot be
    imported is left to the worker, which says why it failed to boot, as it would without this."""
    for name in _APP_MODULES:
        try:
            _importlib.import_module(name)
        except ImportError:
            return


wsgi_app = "freemad.bot.web:app_from_env()"
bind = [_os.environ.get("FREEMAD_BIND", "127.0.0.1:8000")]
workers = _workers()
# gunicorn's gthread worker (its own HTTP parser and limits), ending its process as soon as a
# recycle has answered every request (gunicorn_worker.py). Four threads: an acknowledgement of the
# actions executor waits on GitHub, and the others go on meanwhile (docs/bot.md, "Run").
worker_class = "freemad.bot.gunicorn_worker.RecyclingThreadWorker"
threads = 4
timeout = 30
graceful_timeout = 30
keepalive = 5
# What gunicorn's parser refuses, its own defaults made explicit (docs/bot.md, "Limits"): a
# request line over 4,094 bytes (414), more than 100 header fields or one over 8,190 bytes
# (431); chunked trailers count against the same limits. The body's is FREEMAD_MAX_BODY (413).
limit_request_line = 4094
limit_request_fields = 100
limit_request_field_size = 8190
# Connections a worker holds at once (kept-alive ones included); the rest wait in the backlog.
worker_connections = 1000
# Recycle workers now and then, staggered so they do not all restart at once.
max_requests = 1000
max_requests_jitter = 100
# Each worker builds its own app after the fork: nothing (no SQLite connection) crosses it.
preload_app = False
accesslog = "-"
errorlog = "-"
loglevel = _log_level()
logger_class = JsonLogger
proc_name = "freemad-bot"
# gunicorn >= 25 opens a control socket in $HOME by default, where two bots on one host (or two
# test runs) would fight over it; signals (HUP, TERM, TTIN, TTOU) still manage the master.
control_socket_disable = True
worker_tmp_dir = _heartbeat_dir()

__all__ = [
    "JsonLogger",
    "accesslog",
    "bind",
    "control_socket_disable",
    "errorlog",
    "graceful_timeout",
    "keepalive",
    "limit_request_field_size",
    "limit_request_fields",
    "limit_request_line",
    "logger_class",
    "loglevel",
    "max_requests",
    "max_requests_jitter",
    "on_starting",
    "pre_exec",
    "preload_app",
    "proc_name",
    "threads",
    "timeout",
    "worker_class",
    "worker_connections",
    "worker_tmp_dir",
    "workers",
    "wsgi_app",
]
