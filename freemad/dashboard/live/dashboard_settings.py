"""What the live dashboard is built from: `DashboardSettings`, the one argument of
`freemad.dashboard.live.server.create_app`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from freemad.dashboard.live.stream_capacity import Caps
from freemad.dashboard.reading.eval_folders import EvalFolder
from freemad.dashboard.reading.sources import Source
from freemad.dashboard.run_records import Warn


@dataclass(frozen=True)
class DashboardSettings:
    """The dashboard's sources and settings.

    `caps` bound the open event streams (default: as for gunicorn's default workers and
    threads), counted in `streams_dir` with the other processes that share it (default: a
    private folder). With `trusted_proxies`, that many proxies in front append to
    X-Forwarded-For and a client's address is taken from it; otherwise the header is ignored.
    With `allow_start` (and a `start_token`), runs start with one of `config_paths` (the first
    the default); with `edit_config` too, the browser may edit those config files
    (`freemad.dashboard.steering.config_editor`). `evals` are evaluation folders, each a page; their `transcripts/` are debate
    sources too. `warn` takes one-line warnings (default: stderr, each once).
    """

    sources: Sequence[Source]
    commit_url: str | None = None
    poll_interval: float = 0.5
    heartbeat: float = 15.0
    allow_start: bool = False
    start_token: str | None = None
    config_paths: Sequence[str] = ()
    edit_config: bool = False
    warn: Warn | None = None
    caps: Caps | None = None
    streams_dir: Path | None = None
    trusted_proxies: int = 0
    evals: Sequence[EvalFolder] = field(default_factory=tuple)
