"""`freemad-dashboard`: the live dashboard (every run as a page that updates itself) on gunicorn."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from collections.abc import Callable

import click

from freemad.cli.options import F, listen_options, store_options
from freemad.errors import FreemadError, UsageError

GUNICORN_CONF = "python:freemad.dashboard.live.dashboard_gunicorn_conf"
WSGI_APP = "freemad.dashboard.live.wsgi:app_from_env()"
PROG = "freemad-dashboard"
_URL = re.compile(r"https?://[^\s\"'<>]+")
# What the options decide; anything of these the caller's environment holds is dropped first.
_SETTINGS = (
    "FREEMAD_DASHBOARD_DIR",
    "FREEMAD_DASHBOARD_TASK_STORE",
    "FREEMAD_DASHBOARD_EVOLVE_STORE",
    "FREEMAD_DASHBOARD_STATE_DIR",
    "FREEMAD_DASHBOARD_COMMIT_URL",
    "FREEMAD_DASHBOARD_ALLOW_START",
    "FREEMAD_DASHBOARD_EDIT_CONFIG",
    "FREEMAD_DASHBOARD_TOKEN",
    "FREEMAD_DASHBOARD_TOKEN_FD",
    "FREEMAD_DASHBOARD_STREAMS_DIR",
    "FREEMAD_DASHBOARD_CONFIGS",
    "FREEMAD_DASHBOARD_EVALS",
)


def _number(name: str, low: int, help: str, top: int = 65536) -> Callable[[F], F]:
    """An option of a whole number from `low` to `top`; None when not given (its variable or
    the default decides)."""
    return click.option(name, type=click.IntRange(low, top), default=None, metavar="N", help=help)


@click.command(
    PROG,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option("--dir", "transcripts", metavar="DIR", help="Folder of JSON debate transcripts.")
@store_options
@click.option(
    "--state-dir", metavar="DIR", help="A checkout of the GitHub state branch (freemad-state)."
)
@click.option(
    "--commit-url",
    metavar="URL",
    help="A commit's web page with {commit} for its hash; evolve versions link to it.",
)
@click.option(
    "--eval",
    "evals",
    metavar="DIR",
    multiple=True,
    help="An evaluation's folder (freemad eval run/rescore --out): a page of its report.json "
    "(read afresh on every visit), its transcripts/ as debates; repeat for several.",
)
@listen_options(port=8001, workers="gunicorn worker processes (default: FREEMAD_WORKERS, else 2).")
@_number(
    "--max-streams",
    0,
    "Live pages (event streams) held open at once, all workers together; one more is refused "
    "with 503, and 0 turns live updates off (default: FREEMAD_DASHBOARD_MAX_STREAMS, else the "
    "workers' threads less a quarter each: 48 with the defaults).",
)
@_number(
    "--max-streams-per-client",
    1,
    "Of those, from one client address (an IPv6 client's /64); one more is refused with 429 "
    "(default: FREEMAD_DASHBOARD_MAX_STREAMS_PER_CLIENT, else a quarter of --max-streams).",
)
@_number(
    "--trusted-proxies",
    0,
    "Reverse proxies in front that append the client's address to X-Forwarded-For; only with "
    "this is a client's address read from it (default: FREEMAD_DASHBOARD_TRUSTED_PROXIES, else "
    "0: the header is ignored).",
    top=10,
)
@click.option(
    "--allow-start",
    is_flag=True,
    help="Let the pages start debates and tasks and steer tasks and evolve runs (POST "
    "/api/debates, /api/tasks..., /api/evolve/ID/VERB; always with one of the server's "
    "configs), and show the configs at /config.html.",
)
@click.option(
    "--edit-config",
    is_flag=True,
    help="With --allow-start: let the pages edit the --config files (/config/edit.html): "
    "checked before saving, the last 10 versions kept. Whoever holds the token then decides "
    "the agents' commands.",
)
@click.option(
    "--token-env",
    metavar="NAME",
    default="FREEMAD_DASHBOARD_TOKEN",
    show_default=True,
    help="Environment variable holding the token every POST must bear.",
)
@click.option(
    "--config",
    "config_paths",
    metavar="FILE",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Config whose runs are served when no source is named, and that the runs "
    "--allow-start starts use; repeat it to offer several, named in the start forms by their "
    "file's stem, the first the default (default: FREEMAD_CONFIG, else one found from the "
    "current folder upward, else built-in).",
)
def command(
    *,
    transcripts: str | None,
    task_store: str | None,
    evolve_store: str | None,
    state_dir: str | None,
    commit_url: str | None,
    evals: tuple[str, ...],
    host: str,
    port: int,
    workers: int | None,
    max_streams: int | None,
    max_streams_per_client: int | None,
    trusted_proxies: int | None,
    allow_start: bool,
    edit_config: bool,
    token_env: str,
    config_paths: tuple[str, ...],
) -> None:
    """Serve every debate, task and evolve run as a page that updates itself while it runs.

    Read-only unless --allow-start. Also: GET /api/runs, /api/runs/ID, /api/tasks,
    /api/evolve, /health, and /events (Server-Sent Events). FREEMAD_DASHBOARD_THREADS (32)
    is how many requests and open pages each worker serves at once; a quarter of them never
    hold an open page, so pages and /health answer however many are open. A refused event
    stream (429, 503) says why and when to try again; its page works without live updates.

    With no source named, it serves the runs of the config found from the current folder
    upward (its output.transcript_dir, task.store_path and evolve.store_path); a source not
    named is the config's, where it exists, as `freemad site build` reads them.

    \b
    Examples:
      freemad-dashboard
      freemad-dashboard --dir transcripts --task-store .freemad/tasks/tasks.db
      FREEMAD_DASHBOARD_TOKEN=$(openssl rand -hex 32) freemad-dashboard --dir transcripts --allow-start
      freemad-dashboard --dir transcripts --allow-start --config fast.yaml --config thorough.yaml
      freemad-dashboard --eval eval-fast --eval eval-thorough
    """
    from pathlib import Path

    from freemad.dashboard.live.dashboard_settings import DashboardSettings
    from freemad.dashboard.live.server import MAX_PROXIES, create_app, stderr_warn
    from freemad.dashboard.live.stream_capacity import MAX_PER_CLIENT, MAX_STREAMS, Caps, setting
    from freemad.dashboard.live.wsgi import EVALS, TRUSTED_PROXIES
    from freemad.dashboard.reading.eval_folders import eval_folders
    from freemad.dashboard.reading.sources import build_sources

    config_path = config_paths[0] if config_paths else None
    say_missing = any((transcripts, task_store, evolve_store, state_dir))
    folders = eval_folders(evals)  # each a folder, else one line
    if state_dir is None:
        transcripts, task_store, evolve_store = _config_sources(
            config_path,
            transcripts,
            task_store,
            evolve_store,
            nothing_named=not say_missing and not folders,
        )
    named = {
        "FREEMAD_DASHBOARD_DIR": transcripts,
        "FREEMAD_DASHBOARD_TASK_STORE": task_store,
        "FREEMAD_DASHBOARD_EVOLVE_STORE": evolve_store,
        "FREEMAD_DASHBOARD_STATE_DIR": state_dir,
    }
    if commit_url is not None and (not _URL.fullmatch(commit_url) or "{commit}" not in commit_url):
        raise click.BadParameter(
            "an http(s) URL with {commit} where the hash goes", param_hint="--commit-url"
        )
    if edit_config and not allow_start:
        raise click.UsageError(
            "--edit-config needs --allow-start: every edit must bear the start token"
        )
    token = os.environ.get(token_env, "") if allow_start else ""
    if allow_start and not token.strip():
        raise UsageError(
            f"--allow-start needs a token in the environment variable {token_env} "
            "(it is never read from the command line)"
        )
    if allow_start and not transcripts:
        raise click.UsageError("--allow-start needs --dir: started debates are written there")
    configs = _configs(config_paths)
    # Everything gunicorn's workers will do at boot, done once here so a mistake is one line.
    sources = build_sources(
        transcripts=transcripts,
        task_store=task_store,
        evolve_store=evolve_store,
        state_dir=state_dir,
        warn=stderr_warn(),
        say_missing=say_missing,
    )
    env = _caller_env(
        token_env if allow_start else None,
        {
            "FREEMAD_WORKERS": workers,
            MAX_STREAMS: max_streams,
            MAX_PER_CLIENT: max_streams_per_client,
            TRUSTED_PROXIES: trusted_proxies,
        },
    )
    caps = Caps.from_env(env)  # FREEMAD_DASHBOARD_MAX_STREAMS=x is one line here
    create_app(
        DashboardSettings(
            sources,
            commit_url=commit_url,
            allow_start=allow_start,
            edit_config=edit_config,
            start_token=token,
            config_paths=configs,
            caps=caps,
            trusted_proxies=setting(env, TRUSTED_PROXIES, 0, 0, MAX_PROXIES),
            evals=folders,
        )
    )
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    _check_port(host, port, bind)

    for name, value in named.items():
        if value:
            env[name] = str(Path(value).absolute())
    if commit_url:
        env["FREEMAD_DASHBOARD_COMMIT_URL"] = commit_url
    if folders:
        env[EVALS] = json.dumps([str(f.path.absolute()) for f in folders])
    if allow_start:
        env.update(_start_env(token, configs))
    if edit_config:
        env["FREEMAD_DASHBOARD_EDIT_CONFIG"] = "1"
    env["FREEMAD_BIND"] = bind
    mode = (
        f"runs may be started and steered{' and configs edited' if edit_config else ''} "
        f"with the token in ${token_env}"
        if allow_start
        else "read-only"
    )
    click.echo(f"FREE-MAD dashboard on http://{bind}/ ({mode})")
    click.echo(caps.describe())
    argv = [sys.executable, "-m", "gunicorn", "--config", GUNICORN_CONF, WSGI_APP]
    sys.stdout.flush()
    sys.stderr.flush()
    # gunicorn becomes this process, so signals (SIGTERM, SIGHUP, SIGTTIN) reach its master.
    os.execve(sys.executable, argv, env)  # noqa: S606  # no shell: a fixed argv


def _configs(given: tuple[str, ...]) -> list[str]:
    """The configs runs start with, the first the default: those given, else FREEMAD_CONFIG,
    else one found from the current folder upward; none for the built-in mock agents."""
    from freemad.config.discover import find_config

    if given:
        return list(given)
    found = find_config(None).path
    return [str(found)] if found is not None else []


def _start_env(token: str, configs: list[str]) -> dict[str, str]:
    """What gunicorn's workers need to start runs: the flag, the pipe the token is read from,
    and the configs (their paths absolute, as a JSON list; the first also as FREEMAD_CONFIG)."""
    from freemad.dashboard.live.token_handover import TOKEN_FD, token_pipe
    from freemad.dashboard.live.wsgi import CONFIGS
    from freemad.dashboard.steering.start_configs import config_path

    env = {"FREEMAD_DASHBOARD_ALLOW_START": "1", TOKEN_FD: str(token_pipe(token))}
    if configs:
        absolute = [config_path(c) or c for c in configs]
        env["FREEMAD_CONFIG"] = absolute[0]
        env[CONFIGS] = json.dumps(absolute)
    return env


def _caller_env(token_env: str | None, chosen: dict[str, int | None]) -> dict[str, str]:
    """This process's environment for gunicorn: less what the options decide and the variable
    the start token was read from (it goes to gunicorn in a pipe, in no environment), with the
    numbers the options chose."""
    dropped = (*_SETTINGS, token_env) if token_env else _SETTINGS
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update((name, str(value)) for name, value in chosen.items() if value is not None)
    return env


def _check_port(host: str, port: int, bind: str) -> None:
    """Fail with one line now rather than let gunicorn retry a taken port for seconds."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host}: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise FreemadError(f"cannot listen on {bind}: {exc.strerror or exc}") from None


def _config_sources(
    config_path: str | None,
    transcripts: str | None,
    task_store: str | None,
    evolve_store: str | None,
    *,
    nothing_named: bool,
) -> tuple[str | None, str | None, str | None]:
    """The runs to serve from the config found here: all its sources when `nothing_named`,
    each read once it exists; else its own beside the named ones, as `site build` reads them."""
    from pathlib import Path

    from freemad.cli.loading import load_config
    from freemad.config.discover import beside_named, state_paths

    config = load_config(config_path).config
    if not nothing_named:
        return beside_named(config, transcripts, task_store, evolve_store)
    defaults = state_paths(config)
    if not any(path and Path(path).exists() for path in defaults.values()):
        raise click.UsageError(
            "no runs yet here (no transcripts or stores of the config found from this "
            "folder); name at least one source: --dir, --task-store, --evolve-store, "
            "--state-dir or --eval (one that does not exist yet is read once it does)"
        )
    return defaults["transcripts"], defaults["task_store"], defaults["evolve_store"]


def main(argv: list[str] | None = None) -> None:
    """Run the command; errors become one line on stderr and an exit status (freemad.cli.run)."""
    from freemad.cli.run import run_cli

    run_cli(command, sys.argv[1:] if argv is None else argv, PROG)


if __name__ == "__main__":
    main()
