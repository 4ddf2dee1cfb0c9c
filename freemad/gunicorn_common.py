"""What the bot's and the dashboard's gunicorn settings share (each settings module keeps its
own declarative names, which gunicorn reads from that module)."""

from __future__ import annotations

import os

LEVELS = {"debug", "info", "warning", "error", "critical"}


def log_level() -> str:
    """FREEMAD_LOG_LEVEL in gunicorn's words; an unknown one is "info"."""
    level = os.environ.get("FREEMAD_LOG_LEVEL", "info").strip().lower() or "info"
    return level if level in LEVELS else "info"


def heartbeat_dir() -> str | None:
    """Where gunicorn's worker heartbeat files go: tmpfs, where there is one, beats a
    container's overlayfs (not a temporary file of ours)."""
    return "/dev/shm" if os.path.isdir("/dev/shm") else None  # noqa: S108
