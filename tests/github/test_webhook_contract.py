"""Our webhook models against GitHub's published webhook schemas (npm `@octokit/openapi-webhooks`,
installed by scripts/install-github-descriptions.sh): every payload GitHub's schema allows for the
events we handle parses, from the least (required fields only, null wherever allowed) to the
fullest; and nothing without a person behind it is ever acted on."""

from __future__ import annotations

from typing import Any

import pytest

from freemad.github.events import (
    MODELS,
    IssueCommentEvent,
    PullRequestEvent,
    PullRequestReviewCommentEvent,
    parse_event,
)
from freemad.github.routing import route
from tests.github.webhook_schemas import description_path, fullest, least, webhooks_of

pytestmark = pytest.mark.skipif(
    not description_path().is_file(),
    reason=f"{description_path()} is absent: make test installs it from npm "
    "(scripts/install-github-descriptions.sh)",
)


def cases() -> list[Any]:
    if not description_path().is_file():
        return []
    return [
        pytest.param(event, action, id=f"{event}.{action}" if action else event)
        for event in MODELS
        for action in sorted(webhooks_of(event))
    ]


def test_the_description_covers_every_event_we_model() -> None:
    assert {event for event in MODELS if webhooks_of(event)} == set(MODELS)


@pytest.mark.parametrize(("event", "action"), cases())
def test_the_least_payload_github_allows_parses(event: str, action: str) -> None:
    parse_event(event, least(webhooks_of(event)[action]))


@pytest.mark.parametrize(("event", "action"), cases())
def test_the_fullest_payload_github_describes_parses(event: str, action: str) -> None:
    parse_event(event, fullest(webhooks_of(event)[action]))


def test_a_label_or_comment_with_no_person_behind_it_starts_nothing() -> None:
    """GitHub's schema lets a pull_request event come without a sender and a comment without a
    user (a deleted account): FREE-MAD then has nobody whose access to check, and does nothing."""
    labeled = least(webhooks_of("pull_request")["labeled"])
    labeled.update(label={"name": "freemad:evolve"})
    labeled.pop("sender", None)
    labeled["pull_request"]["state"] = "open"
    event = parse_event("pull_request", labeled)
    assert isinstance(event, PullRequestEvent) and event.sender is None
    assert route(event).route == "ignore"
    assert "no sender" in route(event).reason
    comment = least(webhooks_of("issue_comment")["created"])
    comment["comment"].update(body="/freemad debate", user=None)
    parsed = parse_event("issue_comment", comment)
    assert isinstance(parsed, IssueCommentEvent)
    assert route(parsed).route == "ignore"
    assert "no author" in route(parsed).reason


def test_the_least_review_comment_github_allows_routes_as_a_comment_on_its_pull_request() -> None:
    """A comment on a pull request's diff comes as `pull_request_review_comment`, with the pull
    request (not an issue) beside the comment; the least of it is a command like any comment."""
    payload = least(webhooks_of("pull_request_review_comment")["created"])
    payload["comment"].update(body="/freemad debate", user={"login": "alice", "id": 1})
    event = parse_event("pull_request_review_comment", payload)
    assert isinstance(event, PullRequestReviewCommentEvent)
    assert route(event).route == "command"
    assert event.pull_request.head.repo is None  # the least: the fork it came from is gone
    payload["comment"]["user"] = None
    assert route(parse_event("pull_request_review_comment", payload)).route == "ignore"
