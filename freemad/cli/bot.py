"""`freemad bot ...`: the webhook bot's web edge (gunicorn) and its queue worker."""

from __future__ import annotations

import os
import sys

import click

from freemad.cli.options import listen_options

GUNICORN_CONF = "python:freemad.bot.gunicorn_conf"
WSGI_APP = "freemad.bot.web:app_from_env()"


@click.group("bot")
def bot_group() -> None:
    """FREE-MAD as a GitHub App: a webhook endpoint and the workers behind it.

    Settings come from the environment: FREEMAD_WEBHOOK_SECRET, FREEMAD_GITHUB_TOKEN or
    FREEMAD_APP_ID + FREEMAD_APP_PRIVATE_KEY, FREEMAD_EXECUTOR (local or actions),
    FREEMAD_STATE_DIR, FREEMAD_CONFIG, FREEMAD_QUEUE_URL (see docs/bot.md).

    \b
    Examples:
      freemad bot serve --host 0.0.0.0 --port 8000
      freemad bot worker
    """


@bot_group.command("serve", short_help="Serve POST /webhook and GET /healthz with gunicorn.")
@listen_options(
    port=8000,
    workers="gunicorn worker processes (default: FREEMAD_WORKERS, else CPUs + 1, at most 8).",
)
def serve(host: str, port: int, workers: int | None) -> None:
    """Serve POST /webhook and GET /healthz with gunicorn.

    The web process verifies, records and enqueues each delivery; `freemad bot worker`
    (FREEMAD_EXECUTOR=local) or GitHub Actions (FREEMAD_EXECUTOR=actions) does the work.
    """
    from freemad.bot.settings import BotSettings

    # Fail here with one line, not in every gunicorn worker as it boots.
    BotSettings.from_env(os.environ)
    env = dict(os.environ)
    env["FREEMAD_BIND"] = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if workers is not None:
        env["FREEMAD_WORKERS"] = str(workers)
    argv = [sys.executable, "-m", "gunicorn", "--config", GUNICORN_CONF, WSGI_APP]
    sys.stdout.flush()
    sys.stderr.flush()
    # gunicorn becomes this process, so signals (SIGTERM, SIGHUP, SIGTTIN) reach its master.
    os.execve(sys.executable, argv, env)  # noqa: S606  # no shell: a fixed argv


@bot_group.command(
    "worker",
    short_help="Work the local queue (FREEMAD_EXECUTOR=local).",
    add_help_option=False,  # `--help` is the worker's own (argparse), like its other options
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def worker(args: tuple[str, ...]) -> None:
    """Work the local queue (FREEMAD_EXECUTOR=local): run each accepted delivery.

    Options (see `freemad bot worker --help`) go to the worker as they are.
    """
    from freemad.bot.worker import main

    sys.exit(main(list(args)))
