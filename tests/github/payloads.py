"""Webhook payloads for the GitHub tests: small ones of our own, and GitHub's examples when present.

Our own payloads carry only the fields FREE-MAD reads, so the tests that use them always run.
GitHub's examples (octokit/webhooks) live beside the checkout at ../shared/fixtures and are read
in place, never copied; tests that need them skip where they are absent.
"""

from __future__ import annotations

import copy
import json
import zlib
from pathlib import Path
from typing import Any

import pytest

WEBHOOKS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "github" / "webhooks"
EXAMPLES = WEBHOOKS / "examples"
SCHEMAS = WEBHOOKS / "schemas"
NO_FIXTURES = f"GitHub's webhook examples are absent (expected at {WEBHOOKS})"

REPO = "octo-org/octo-repo"
# A pull request's whole diff, one line added: for reviews a test posts on it.
ONE_LINE_DIFF = """\
diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,1 +1,2 @@
 print("hi")
+print("there")
"""


def example_files() -> list[Path]:
    return sorted(EXAMPLES.glob("*.json")) if EXAMPLES.is_dir() else []


def example_params() -> list[Any]:
    """One pytest param per example file, or a single skipped param saying where they should be."""
    files = example_files()
    if not files:
        return [pytest.param(None, id="no-fixtures", marks=pytest.mark.skip(reason=NO_FIXTURES))]
    return [pytest.param(path, id=path.name) for path in files]


def event_name(path: Path) -> str:
    """`issue_comment.created.with-installation.json` -> `issue_comment`."""
    return path.name.split(".")[0]


def load_example(name: str) -> dict[str, Any]:
    """The example `name` (file name without `.json`), or skip the test when fixtures are absent."""
    path = EXAMPLES / f"{name}.json"
    if not EXAMPLES.is_dir():
        pytest.skip(NO_FIXTURES)
    if not path.is_file():
        pytest.skip(f"GitHub's webhook examples at {EXAMPLES} hold no {path.name}")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def as_pull_request_comment(issue_comment: dict[str, Any]) -> dict[str, Any]:
    """An issue_comment payload turned into a comment on a pull request, as GitHub sends one."""
    payload = copy.deepcopy(issue_comment)
    issue = payload["issue"]
    html_url = issue["html_url"].replace("/issues/", "/pull/")
    issue["pull_request"] = {
        "url": issue["url"].replace("/issues/", "/pulls/"),
        "html_url": html_url,
        "diff_url": f"{html_url}.diff",
        "patch_url": f"{html_url}.patch",
    }
    return payload


def user(login: str = "alice", kind: str = "User") -> dict[str, Any]:
    return {"login": login, "id": zlib.crc32(login.encode()), "type": kind}


def repository() -> dict[str, Any]:
    return {
        "id": 17273051,
        "name": "octo-repo",
        "full_name": REPO,
        "owner": user("octo-org", "Organization"),
        "default_branch": "main",
        "private": False,
        "html_url": f"https://github.com/{REPO}",
        "clone_url": f"https://github.com/{REPO}.git",
    }


def issue(number: int = 7, *, labels: tuple[str, ...] = (), state: str = "open") -> dict[str, Any]:
    return {
        "number": number,
        "title": "Pick a cache eviction policy",
        "body": "LRU or LFU for the session cache?",
        "user": user(),
        "labels": [{"name": name} for name in labels],
        "state": state,
        "html_url": f"https://github.com/{REPO}/issues/{number}",
    }


def labeled_issue(
    label: str = "freemad:debate", *, sender: str = "alice", state: str = "open"
) -> dict[str, Any]:
    return {
        "action": "labeled",
        "issue": issue(labels=(label,), state=state),
        "label": {"name": label},
        "repository": repository(),
        "sender": user(sender),
        "installation": {"id": 42},
    }


def issue_comment(
    body: str = "/freemad debate",
    *,
    author: str = "alice",
    action: str = "created",
    on_pull_request: bool = False,
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "action": action,
        "issue": issue(),
        "comment": {
            "id": 1001,
            "body": body,
            "user": user(author),
            "html_url": f"https://github.com/{REPO}/issues/7#issuecomment-1001",
            "author_association": "MEMBER",
        },
        "repository": repository(),
        "sender": user(author),
    }
    if action == "edited":
        payload["changes"] = {"body": {"from": "/freemad plan"}}
    if on_pull_request:
        payload["issue"]["html_url"] = f"https://github.com/{REPO}/pull/7"
        payload["issue"]["url"] = f"https://api.github.com/repos/{REPO}/issues/7"
        payload = as_pull_request_comment(payload)
    return payload


def _branch(ref: str, sha: str) -> dict[str, Any]:
    return {"ref": ref, "sha": sha, "repo": repository()}


def pull_request(
    action: str = "labeled",
    *,
    label: str | None = "freemad:evolve",
    sender: str = "alice",
    state: str = "open",
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "action": action,
        "number": 9,
        "pull_request": {
            "number": 9,
            "title": "Speed up slow_sum",
            "body": None,
            "user": user(),
            "head": _branch("speed-up", "a" * 40),
            "base": _branch("main", "b" * 40),
            "html_url": f"https://github.com/{REPO}/pull/9",
            "draft": False,
            "state": state,
            "labels": [] if label is None else [{"name": label}],
        },
        "repository": repository(),
        "sender": user(sender),
    }
    if label is not None:
        payload["label"] = {"name": label}
    return payload


def review_comment(
    body: str = "/freemad debate",
    *,
    author: str = "alice",
    action: str = "created",
    comment_id: int = 2002,
) -> dict[str, Any]:
    """A pull_request_review_comment: a comment on pull request #9's diff, with the fields we read."""
    pull = pull_request(label=None)["pull_request"]
    payload: dict[str, Any] = {
        "action": action,
        "comment": {
            "id": comment_id,
            "body": body,
            "user": user(author),
            "html_url": f"https://github.com/{REPO}/pull/9#discussion_r{comment_id}",
            "author_association": "MEMBER",
        },
        "pull_request": pull,
        "repository": repository(),
        "sender": user(author),
    }
    if action == "edited":
        payload["changes"] = {"body": {"from": "/freemad plan"}}
    return payload


def workflow_dispatch(inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "inputs": inputs,
        "ref": "refs/heads/main",
        "workflow": ".github/workflows/freemad.yml",
        "repository": repository(),
        "sender": user(),
    }
