"""bot/app.yml, the GitHub App manifest: GitHub's manifest keys only, and exactly the events the
bot acts on and the permissions docs/bot.md lists."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from freemad.github.events import MODELS
from freemad.github.routing import TRIGGER_EVENTS

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = yaml.safe_load((ROOT / "bot" / "app.yml").read_text())
# The parameters of GitHub's App manifest ("Registering a GitHub App from a manifest").
MANIFEST_KEYS = {
    "name",
    "url",
    "hook_attributes",
    "redirect_url",
    "callback_urls",
    "setup_url",
    "description",
    "public",
    "default_events",
    "default_permissions",
    "request_oauth_on_install",
    "setup_on_update",
}


def test_only_github_manifest_keys() -> None:
    assert set(MANIFEST) <= MANIFEST_KEYS
    assert set(MANIFEST["hook_attributes"]) <= {"url", "active"}
    assert MANIFEST["hook_attributes"]["url"].endswith("/webhook")


def test_the_events_are_the_ones_the_bot_acts_on() -> None:
    events = set(MANIFEST["default_events"])
    assert events == set(TRIGGER_EVENTS)
    assert "pull_request_review_comment" in events  # comments on a pull request's diff
    assert events <= set(MODELS)
    docs = (ROOT / "docs" / "bot.md").read_text()
    assert all(f"`{event}" in docs for event in events)


def test_the_permissions_match_the_table_in_docs_bot_md() -> None:
    docs = (ROOT / "docs" / "bot.md").read_text()
    names = {"Issues": "issues", "Pull requests": "pull_requests", "Contents": "contents"}
    names |= {"Metadata": "metadata", "Actions": "actions", "Checks": "checks"}
    rows = re.findall(
        r"^\s*\| (Issues|Pull requests|Contents|Metadata|Actions|Checks) \| ([^|]+) \|",
        docs,
        re.M,
    )
    documented = {
        names[name]: "read" if "Read-only" in access else "write" for name, access in rows
    }
    assert documented == MANIFEST["default_permissions"]
