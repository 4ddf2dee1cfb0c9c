"""What the bot's and the dashboard's gunicorn settings share (each settings module keeps its
own declarative names, which gunicorn reads from that module)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

LEVELS = {"debug", "info", "warning", "error", "critical"}


def log_level() -> str:
    """FREEMAD_LOG_LEVEL in gunicorn's words; an unknown one is "info"."""
    level = os.environ.get("FREEMAD_LOG_LEVEL", "info").strip().lower() or "info"
    return level if level in LEVELS else "info"


def heartbeat_dir() -> str | None:
    """Where gunicorn's worker heartbeat files go: tmpfs, where there is one, beats a
    container's overlayfs (not a temporary file of ours)."""
    return "/dev/shm" if os.path.isdir("/dev/shm") else None  # noqa: S108


def run_as_module_again(server: Any) -> None:
    """gunicorn's `pre_exec` hook: USR2 execs a new master with the argv this one started with.
    `python -m gunicorn` (how `freemad bot serve` and `freemad-dashboard` start it) left that
    argv naming gunicorn's `__main__.py`, and Python run on that file puts gunicorn's own folder
    first on `sys.path`, where its `http` package hides the standard library's: the new master
    died importing. It is started as the module again."""
    args = list(server.START_CTX.get("args", ()))
    main = Path(args[1]) if len(args) > 1 else None
    if main is not None and (main.parent.name, main.name) == ("gunicorn", "__main__.py"):
        server.START_CTX["args"] = [args[0], "-m", "gunicorn", *args[2:]]
