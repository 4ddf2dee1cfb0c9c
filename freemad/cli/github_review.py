"""`freemad github simulate --pr-diff FILE`: a pull request that shows FILE's diff in the
stand-in, and the `/freemad review` comment that asks for its review when no payload is given."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from freemad.core.review_diff import DiffError, parse_diff
from freemad.errors import UsageError
from freemad.github.standin import StandIn

REPO = "octo-org/octo-repo"
NUMBER = 1


def review_comment_payload(login: str = "you") -> bytes:
    """An issue_comment with `/freemad review`, on pull request #1 of a sample repository."""
    user = {"login": login, "id": 1, "type": "User"}
    web = f"https://github.com/{REPO}"
    payload = {
        "action": "created",
        "issue": {
            "number": NUMBER,
            "title": "A pull request to review",
            "body": "",
            "user": user,
            "labels": [],
            "state": "open",
            "html_url": f"{web}/pull/{NUMBER}",
            "pull_request": {
                "url": f"https://api.github.com/repos/{REPO}/pulls/{NUMBER}",
                "html_url": f"{web}/pull/{NUMBER}",
                "diff_url": f"{web}/pull/{NUMBER}.diff",
                "patch_url": f"{web}/pull/{NUMBER}.patch",
            },
        },
        "comment": {
            "id": 1001,
            "body": "/freemad review",
            "user": user,
            "html_url": f"{web}/pull/{NUMBER}#issuecomment-1001",
        },
        "repository": {
            "id": 1,
            "name": "octo-repo",
            "full_name": REPO,
            "default_branch": "main",
            "private": False,
            "html_url": web,
            "clone_url": f"{web}.git",
        },
        "sender": user,
    }
    return json.dumps(payload).encode()


def serve_pull_diff(api: StandIn, payload: Mapping[str, Any], diff: Path) -> None:
    """The payload's pull request, open, showing `diff` as its files; UsageError for a text that
    is not a diff (the stand-in would show it as no files at all)."""
    try:
        text = diff.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the diff {str(diff)!r}: {exc}") from None
    if text.strip():  # an empty diff is a pull request's to show: FREE-MAD replies to it
        try:
            parse_diff(text)
        except DiffError as exc:  # as `freemad review --diff` says it, not "the diff is empty"
            raise UsageError(str(exc)) from None
    try:
        repo = str(payload["repository"]["full_name"])
        found = payload.get("pull_request") or payload.get("issue") or {}
        number = int(found["number"])
    except (KeyError, TypeError, ValueError):
        raise UsageError("--pr-diff needs a payload about a pull request") from None
    if (repo, number) not in api.pulls:
        api.add_pull(
            repo, number, head_ref="feature", head_sha="f" * 40, base_ref="main", head_repo=repo
        )
    api.set_pull_diff(repo, number, text)
    click.echo(f"pull request {repo}#{number} shows {diff} ({len(text)} characters)")
