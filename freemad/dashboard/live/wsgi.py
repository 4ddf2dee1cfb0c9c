"""The live dashboard as gunicorn runs it: `app_from_env()` reads the sources and settings from
FREEMAD_DASHBOARD_* variables (`freemad-dashboard` sets them) and builds the app with
`freemad.dashboard.live.server.create_app`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from flask import Flask

from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import MAX_PROXIES, create_app, stderr_warn
from freemad.dashboard.live.stream_capacity import STREAMS_DIR, Caps, number, setting
from freemad.dashboard.live.token_handover import ALLOW_START, TOKEN
from freemad.dashboard.reading.eval_folders import eval_folders
from freemad.dashboard.reading.sources import build_sources
from freemad.errors import UsageError

TRUSTED_PROXIES = "FREEMAD_DASHBOARD_TRUSTED_PROXIES"
EDIT_CONFIG = "FREEMAD_DASHBOARD_EDIT_CONFIG"  # "1": the pages may edit the config files
CONFIGS = "FREEMAD_DASHBOARD_CONFIGS"  # the configs runs start with, as a JSON list of paths
EVALS = "FREEMAD_DASHBOARD_EVALS"  # evaluation folders (freemad eval --out), a JSON list of paths


def app_from_env(environ: Mapping[str, str] | None = None) -> Flask:
    """The app as gunicorn runs it: sources and settings from FREEMAD_DASHBOARD_* variables.

    Of its own environment (no `environ` given) it takes the start token out as it reads it,
    so no process it starts inherits it."""
    if environ is None:
        token = os.environ.pop(TOKEN, None)
        env: Mapping[str, str] = os.environ
    else:
        token, env = environ.get(TOKEN), environ
    warn = stderr_warn()
    sources = build_sources(
        transcripts=env.get("FREEMAD_DASHBOARD_DIR") or None,
        task_store=env.get("FREEMAD_DASHBOARD_TASK_STORE") or None,
        evolve_store=env.get("FREEMAD_DASHBOARD_EVOLVE_STORE") or None,
        state_dir=env.get("FREEMAD_DASHBOARD_STATE_DIR") or None,
        warn=warn,
        say_missing=False,  # `freemad-dashboard` said so once, before the workers started
    )
    evals = eval_folders(_paths(env, EVALS))
    if not sources and not evals:
        raise UsageError(
            "no source: set FREEMAD_DASHBOARD_DIR, FREEMAD_DASHBOARD_TASK_STORE, "
            f"FREEMAD_DASHBOARD_EVOLVE_STORE, FREEMAD_DASHBOARD_STATE_DIR or {EVALS}"
        )
    return create_app(
        DashboardSettings(
            sources,
            commit_url=env.get("FREEMAD_DASHBOARD_COMMIT_URL") or None,
            poll_interval=_seconds(env, "FREEMAD_DASHBOARD_POLL_INTERVAL", 0.5),
            heartbeat=_seconds(env, "FREEMAD_DASHBOARD_HEARTBEAT", 15.0),
            allow_start=env.get(ALLOW_START, "").strip() == "1",
            edit_config=env.get(EDIT_CONFIG, "").strip() == "1",
            start_token=token or None,
            config_paths=config_paths(env),
            warn=warn,
            caps=Caps.from_env(env),
            streams_dir=Path(env[STREAMS_DIR]) if env.get(STREAMS_DIR) else None,
            trusted_proxies=setting(env, TRUSTED_PROXIES, 0, 0, MAX_PROXIES),
            evals=evals,
        )
    )


def _paths(env: Mapping[str, str], name: str, what: str = "paths") -> list[str]:
    """A JSON list of paths in the variable `name`; none when it is unset or empty."""
    given = env.get(name, "").strip()
    if not given:
        return []
    try:
        paths = json.loads(given)
    except ValueError:
        paths = None
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise UsageError(f"{name} must be a JSON list of {what}")
    return paths


def config_paths(env: Mapping[str, str]) -> list[str]:
    """The configs runs start with: FREEMAD_DASHBOARD_CONFIGS (a JSON list of paths, the first
    the default), else FREEMAD_CONFIG (one)."""
    if not env.get(CONFIGS, "").strip():
        return [env["FREEMAD_CONFIG"]] if env.get("FREEMAD_CONFIG") else []
    paths = _paths(env, CONFIGS, "config paths")
    if not paths:
        raise UsageError(f"{CONFIGS} must be a JSON list of config paths")
    return paths


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    return number(
        env, name, default, float, lambda v: 0 < v <= 3600, "a number of seconds between 0 and 3600"
    )
