"""`freemad github ...`: the Action's entry point, and a local dry run of the whole flow."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

import click

from freemad.cli.options import config_option
from freemad.errors import UsageError


@click.group("github")
def github_group() -> None:
    """FREE-MAD on GitHub: labels and /freemad comments start and steer runs.

    \b
    Try the flow offline, with a local stand-in for GitHub that shows what would be posted:
      freemad github simulate --event issues --payload event.json
    """


@github_group.command("action")
def action() -> None:
    """Handle the event of the GitHub Actions job this runs in (action.yml calls it).

    Reads GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_REPOSITORY, GITHUB_WORKSPACE, GITHUB_OUTPUT,
    GITHUB_STEP_SUMMARY and the INPUT_* variables of the action's inputs.
    """
    from freemad.github.action import run_action

    sys.exit(run_action(os.environ))


@github_group.command("simulate")
@click.option("--event", "event_name", help="The event name: issues, issue_comment, ...")
@click.option("--payload", type=click.Path(exists=True, dir_okay=False), help="Webhook JSON.")
@click.option(
    "--pr-diff",
    "pr_diff",
    type=click.Path(exists=True, dir_okay=False),
    help="A unified diff served as the pull request's files; without --event and --payload, "
    "a `/freemad review` comment on that pull request is simulated.",
)
@config_option("Config file.")
@click.option(
    "--permission",
    type=click.Choice(["admin", "maintain", "write", "triage", "read", "none"]),
    default="write",
    show_default=True,
    help="The sender's access to the repository, as GitHub would report it.",
)
def simulate(
    event_name: str | None,
    payload: str | None,
    pr_diff: str | None,
    config_path: str | None,
    permission: str,
) -> None:
    """Run EVENT with PAYLOAD through the router against a local stand-in for GitHub's API,
    then print every request FREE-MAD made and what it would have posted.

    \b
    With --pr-diff FILE the pull request shows that diff; a review prints the request body
    of the review it would post:
      freemad github simulate --pr-diff change.diff
    """
    from freemad.cli.github_review import review_comment_payload, serve_pull_diff
    from freemad.cli.loading import load_config
    from freemad.github.pygithub_forge import PyGithubForge
    from freemad.github.router import Router
    from freemad.github.standin import StandIn
    from freemad.github.thread import Settings
    from freemad.wiring import ADAPTERS, open_store

    config = load_config(config_path).config
    if (event_name is None) != (payload is None) or (payload is None and pr_diff is None):
        raise UsageError("give --event and --payload together, or --pr-diff FILE alone")
    if payload is None:
        event_name, body = "issue_comment", review_comment_payload()
    else:
        body = Path(payload).read_bytes()
    assert event_name is not None
    try:
        sender = str(json.loads(body).get("sender", {}).get("login", ""))
    except (ValueError, AttributeError):
        sender = ""
    with (
        StandIn(permissions={sender: permission} if sender else {}) as api,
        tempfile.TemporaryDirectory(prefix="freemad-simulate-") as folder,
        open_store(Path(folder) / "runs.db") as store,
        PyGithubForge("simulated-token", base_url=api.base_url, throttle=False) as forge,
    ):
        with contextlib.suppress(ValueError, LookupError, TypeError, AttributeError):
            data = json.loads(body)
            api.seed(data)  # what the event is about (its issue, pull request, comment) exists
        if pr_diff is not None:
            serve_pull_diff(api, json.loads(body), Path(pr_diff))
        settings = Settings(self_login="freemad[bot]", workspace=Path.cwd())
        pages = (config.github.pages_url or "").rstrip("/")
        if pages:  # as the Action and the bot link it; without one there is no site to link
            settings.run_url = lambda kind, run_id: f"{pages}/runs/{run_id}.html"
        router = Router(config, forge, store, settings, adapters=ADAPTERS)
        outcome = router.handle(event_name, body)
        for call in api.calls:
            click.echo(f"{call.method} {call.path} -> {call.status}")
            text = call.body.get("body") if isinstance(call.body, dict) else None
            if call.method == "POST" and call.path.endswith("/reviews"):
                click.echo("  the review request it would post:")
                review = json.dumps(call.body, indent=2, ensure_ascii=False)
                click.echo("  " + "\n  ".join(review.splitlines()))
            elif text:
                click.echo("  " + "\n  ".join(str(text).splitlines()))
    summary = {
        "action": outcome.action,
        "reason": outcome.reason,
        "run_id": outcome.run_id,
        "status": outcome.status,
        "final_answer": outcome.final_answer,
    }
    click.echo(json.dumps(summary, indent=2))
    if outcome.action == "refused" and permission in ("admin", "maintain", "write"):
        raise UsageError("refused although the sender may write: see the reply above")


def _generation() -> None:
    from freemad.cli.github_generation import generation_group

    github_group.add_command(generation_group)


_generation()
