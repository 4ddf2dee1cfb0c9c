"""The start token's way from `freemad-dashboard` to gunicorn's workers, and the streams' folder.

The token never travels in an environment variable that outlives a moment: a process's starting
environment stays readable (`/proc/PID/environ`) by every process of the same user for as long
as it runs, the agent CLIs of the debates it starts included. So `freemad-dashboard` writes the
token into a pipe and passes only the pipe's number (FREEMAD_DASHBOARD_TOKEN_FD); gunicorn's
master reads it once at start (`on_starting`) and keeps it in memory; each worker finds it in
its environment as FREEMAD_DASHBOARD_TOKEN just after the fork (`post_fork`), where
`app_from_env` takes it out again before anything is started. A master that re-executes itself
(USR2) is handed a fresh pipe (`pre_exec`).

The master also makes the folder the workers count open streams in
(`freemad.dashboard.live.stream_capacity`) and removes it when it exits. These are gunicorn's server hooks;
`dashboard_gunicorn_conf` names them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import MutableMapping
from typing import Any

from freemad.dashboard.live.stream_capacity import STREAMS_DIR, THREADS, WORKERS
from freemad.errors import UsageError
from freemad.gunicorn_common import heartbeat_dir, run_as_module_again

TOKEN = "FREEMAD_DASHBOARD_TOKEN"  # noqa: S105  # the names of variables
TOKEN_FD = "FREEMAD_DASHBOARD_TOKEN_FD"  # noqa: S105
ALLOW_START = "FREEMAD_DASHBOARD_ALLOW_START"
MAX_TOKEN = 4096  # bytes: far more than a token needs, far less than a pipe holds unread

_held: dict[str, str] = {}  # the master's: the token, the streams' folder


def token_pipe(token: str) -> int:
    """The read end of a pipe holding `token`, to be inherited by the next program exec'd."""
    data = token.encode("utf-8")
    if len(data) > MAX_TOKEN:
        raise UsageError(f"the start token has {len(data)} bytes; at most {MAX_TOKEN}")
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    os.set_inheritable(read, True)
    return read


def take_token(environ: MutableMapping[str, str]) -> str | None:
    """The token handed over in a pipe (or, run without `freemad-dashboard`, in the variable),
    with both variables taken out of `environ`."""
    token = environ.pop(TOKEN, None)
    number = environ.pop(TOKEN_FD, "").strip()
    if not number:
        return token or None
    try:
        fd = int(number)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise UsageError(f"{TOKEN_FD}={number} is not a pipe")
    except (ValueError, OSError):
        raise UsageError(f"{TOKEN_FD}={number} is not an open pipe") from None
    try:
        data = b""
        while len(data) <= MAX_TOKEN:
            chunk = os.read(fd, MAX_TOKEN + 1)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace") or None


def on_starting(server: Any) -> None:
    """In the master, before any worker: take the token, make the streams' folder, and say the
    numbers gunicorn runs with (command-line settings may have changed them)."""
    token = take_token(os.environ)
    server.cfg.env_orig.pop(TOKEN, None)  # what a re-executed master starts with
    server.cfg.env_orig.pop(TOKEN_FD, None)
    if token:
        _held["token"] = token
    folder = tempfile.mkdtemp(prefix="freemad-dashboard-streams-", dir=heartbeat_dir())
    _held["folder"] = folder
    os.environ[STREAMS_DIR] = folder
    os.environ[WORKERS] = str(server.cfg.workers)
    os.environ[THREADS] = str(server.cfg.threads)
    # The configs runs start with, read here once: every worker forks with them (`configs`).
    paths = _start_configs(os.environ)
    if paths is not None:
        from freemad.dashboard.steering.start_configs import read_at_start
        from freemad.errors import FreemadError

        # One that cannot be read: each worker reads it, and fails to boot saying why.
        with contextlib.suppress(FreemadError):
            read_at_start(paths)


def on_reload(server: Any) -> None:
    """HUP, in the master: read the configs again for the workers it starts next; one that
    cannot be read now keeps them all as they were, with one line in the log."""
    paths = _start_configs(os.environ)
    if paths is None:
        return
    from freemad.dashboard.steering.start_configs import read_again

    failed = read_again(paths)
    if failed is not None:
        server.log.warning("kept the configs read before: %s", failed)


def _start_configs(environ: MutableMapping[str, str]) -> list[str | None] | None:
    """The configs runs may start with, when they may (--allow-start); else None."""
    if environ.get(ALLOW_START, "").strip() != "1":
        return None
    from freemad.dashboard.live.wsgi import config_paths

    try:
        return list(config_paths(environ))
    except UsageError:
        return None  # the workers say what is wrong with the variable


def post_fork(server: Any, worker: Any) -> None:
    """In a new worker: the token, for `app_from_env` to take."""
    if "token" in _held:
        os.environ[TOKEN] = _held["token"]


def pre_exec(server: Any) -> None:
    """In the process about to become a new master (USR2): the token in a fresh pipe, and
    gunicorn run as the module again (`run_as_module_again`)."""
    run_as_module_again(server)
    if "token" in _held:
        server.cfg.env_orig[TOKEN_FD] = str(token_pipe(_held["token"]))


def on_exit(server: Any) -> None:
    if "folder" in _held:
        shutil.rmtree(_held.pop("folder"), ignore_errors=True)
