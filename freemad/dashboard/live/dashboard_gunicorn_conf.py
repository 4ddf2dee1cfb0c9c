"""gunicorn's settings for the live dashboard: `freemad-dashboard` loads this module.

`freemad-dashboard` passes its options through `FREEMAD_BIND`, `FREEMAD_WORKERS` and the
`FREEMAD_DASHBOARD_*` variables the app reads, and the start token in a pipe. Every open page
holds one of a worker's threads for its event stream, so a worker has many threads
(FREEMAD_DASHBOARD_THREADS), and the app keeps a quarter of them for everything else
(`freemad.dashboard.live.stream_capacity`). The server hooks (`on_starting`, `post_fork`, `pre_exec`,
`on_exit`) are `freemad.dashboard.live.token_handover`'s: the token's way to the workers and the folder
they count open streams in. gunicorn reads every module-level name that matches one of its
settings, so keep helpers private.
"""

from __future__ import annotations

import os as _os

from freemad.dashboard.live import stream_capacity as _capacity
from freemad.dashboard.live.token_handover import (
    on_exit,
    on_reload,
    on_starting,
    post_fork,
    pre_exec,
)
from freemad.gunicorn_common import heartbeat_dir as _heartbeat_dir
from freemad.gunicorn_common import log_level as _log_level

wsgi_app = "freemad.dashboard.live.wsgi:app_from_env()"
bind = [_os.environ.get("FREEMAD_BIND", "127.0.0.1:8001")]
workers = _capacity.workers(_os.environ)
worker_class = "gthread"
# One thread per open event stream (each open page), plus the requests for pages and the API.
threads = _capacity.threads(_os.environ)
# A gthread worker tells the master it is alive between requests and while they run, so this is
# not a limit on how long a stream stays open; the streams' keepalives (15 s) come well within.
timeout = 60
# Streams never end by themselves: on a restart or stop, give them this long, then close them.
graceful_timeout = 5
keepalive = 5
# Each worker builds its own app after the fork: nothing (no SQLite connection) crosses it.
preload_app = False
accesslog = None
errorlog = "-"
loglevel = _log_level()
proc_name = "freemad-dashboard"
# gunicorn >= 25 opens a control socket in $HOME by default, where two servers on one host would
# fight over it; signals (HUP, TERM, TTIN, TTOU) still manage the master.
control_socket_disable = True
worker_tmp_dir = _heartbeat_dir()

__all__ = [
    "accesslog",
    "bind",
    "control_socket_disable",
    "errorlog",
    "graceful_timeout",
    "keepalive",
    "loglevel",
    "on_exit",
    "on_reload",
    "on_starting",
    "post_fork",
    "pre_exec",
    "preload_app",
    "proc_name",
    "threads",
    "timeout",
    "worker_class",
    "worker_tmp_dir",
    "workers",
    "wsgi_app",
]
