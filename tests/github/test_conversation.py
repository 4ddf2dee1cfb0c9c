"""The conversation on GitHub through the real client and the loopback stand-in (issues 38.3 and
44.5-6): a debate on a pull request keeps one status comment and a check run on the head commit,
edited as rounds finish; without `checks: write` (GitHub's 403) it goes on without the check run,
saying so in one log line; a command on the diff is answered in its review thread. Every exchange
is held to GitHub's OpenAPI description (tests/conftest.py); the stand-in refuses what GitHub
refuses."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from freemad.github.forge import ForgeError
from freemad.github.pygithub_forge import PyGithubForge
from freemad.github.router import Router
from freemad.github.standin import StandIn
from freemad.github.thread import Settings
from freemad.wiring import ADAPTERS
from tests.github.payloads import (
    REPO,
    as_pull_request_comment,
    issue_comment,
    load_example,
    review_comment,
)
from tests.github.routers import debate_config

TOKEN = "ghp_ConversationTestToken0123456789abcdWXYZ"
HEAD = "c" * 40


@pytest.fixture
def api() -> Iterator[StandIn]:
    with StandIn(permissions={"alice": "write"}, token=TOKEN) as standin:
        standin.add_issue(REPO, 9, "Pick a cache eviction policy", "for the API cache")
        standin.add_pull(
            REPO, 9, head_ref="feature", head_sha=HEAD, base_ref="main", head_repo=REPO
        )
        yield standin


def _handle(api: StandIn, store: Any, tmp_path: Path, event: str, payload: dict[str, Any]) -> Any:
    api.seed(payload)
    with PyGithubForge(TOKEN, base_url=api.base_url, throttle=False) as forge:
        settings = Settings(self_login="freemad[bot]", workspace=tmp_path)
        return Router(debate_config(), forge, store, settings, adapters=ADAPTERS).handle(
            event, payload
        )


def _check_runs(api: StandIn) -> list[Any]:
    return [c for c in api.calls if "/check-runs" in c.path]


def test_a_debate_on_a_pull_request_keeps_one_comment_and_a_check_run(
    api: StandIn, store: Any, tmp_path: Path
) -> None:
    payload = issue_comment("/freemad debate Which policy?", on_pull_request=True)
    payload["issue"]["number"] = 9

    outcome = _handle(api, store, tmp_path, "issue_comment", payload)

    assert outcome.status == "completed"
    posted = api.calls_to("POST", f"/repos/{REPO}/issues/9/comments")
    assert len(posted) == 1  # one status comment, never one per round
    assert posted[0].body["body"].startswith("FREE-MAD is starting a debate")
    edits = [c for c in api.calls if c.method == "PATCH" and "/issues/comments/" in c.path]
    assert "round 1 of 2 finished" in edits[0].body["body"]
    assert "**Winner:**" in edits[-1].body["body"]
    created, *updates = _check_runs(api)
    assert (created.method, created.status) == ("POST", 201)
    assert created.body["head_sha"] == HEAD and created.body["name"] == "FREE-MAD debate"
    assert created.body["status"] == "in_progress"
    assert [u.method for u in updates] == ["PATCH"] * len(updates) and len(updates) >= 2
    assert updates[0].body["output"]["title"] == "Round 1 of 2"
    [run] = api.check_runs.values()
    assert (run["status"], run["conclusion"]) == ("completed", "success")
    assert run["output"]["title"].startswith("Winner: ")


def test_without_checks_write_the_debate_goes_on_without_a_check_run(
    api: StandIn, store: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A token without `checks: write`: a fork's pull request, or an App installed before it
    asked for Checks."""
    api.checks_writable = False
    payload = issue_comment("/freemad debate Which policy?", on_pull_request=True)
    payload["issue"]["number"] = 9

    with caplog.at_level(logging.WARNING, logger="freemad.github"):
        outcome = _handle(api, store, tmp_path, "issue_comment", payload)

    assert outcome.status == "completed" and outcome.comment_url
    [refused] = _check_runs(api)  # one try, no update of a check run that does not exist
    assert refused.status == 403 and api.check_runs == {}
    said = [r.getMessage() for r in caplog.records if "check run" in r.getMessage()]
    assert len(said) == 1 and "checks: write" in said[0]
    last = [c for c in api.calls if c.method == "PATCH"][-1]
    assert "**Winner:**" in last.body["body"]


def test_a_command_on_the_diff_is_answered_in_its_review_thread(
    api: StandIn, store: Any, tmp_path: Path
) -> None:
    payload = review_comment("/freemad debate Which policy?", comment_id=2002)

    outcome = _handle(api, store, tmp_path, "pull_request_review_comment", payload)

    assert outcome.status == "completed"
    assert [c for c in api.calls if c.path.endswith("/issues/9/comments")] == []
    [reply] = api.calls_to("POST", f"/repos/{REPO}/pulls/9/comments/2002/replies")
    assert reply.status == 201 and reply.reply["in_reply_to_id"] == 2002
    edits = [c for c in api.calls if c.method == "PATCH" and "/pulls/comments/" in c.path]
    assert edits and all(c.path.endswith(f"/pulls/comments/{reply.reply['id']}") for c in edits)
    assert "**Winner:**" in api.review_comments[reply.reply["id"]]["body"]


def test_an_outsiders_command_on_the_diff_is_refused_in_its_thread(
    api: StandIn, store: Any, tmp_path: Path
) -> None:
    payload = review_comment("/freemad debate", author="mallory", comment_id=2003)
    outcome = _handle(api, store, tmp_path, "pull_request_review_comment", payload)
    assert outcome.action == "refused"
    [reply] = api.calls_to("POST", f"/repos/{REPO}/pulls/9/comments/2003/replies")
    assert reply.body["body"].startswith("@mallory ")
    assert not [c for c in api.calls if c.method == "POST" and "/issues/" in c.path]


def test_an_outsider_is_refused_once_on_a_pull_request_diff_or_conversation(
    api: StandIn, store: Any, tmp_path: Path
) -> None:
    """The refusal in a review thread is remembered: a second command on the diff, or one in
    the pull request's conversation, gets no second refusal."""
    api.login = "freemad[bot]"  # the App's account, as in production: its markers are believed
    first = review_comment("/freemad debate", author="mallory", comment_id=2003)
    assert _handle(api, store, tmp_path, "pull_request_review_comment", first).action == "refused"
    again = review_comment("/freemad debate please", author="mallory", comment_id=2004)
    outcome = _handle(api, store, tmp_path, "pull_request_review_comment", again)
    assert outcome.action == "refused" and "told already" in outcome.reason
    assert api.calls_to("POST", f"/repos/{REPO}/pulls/9/comments/2004/replies") == []
    listed = api.calls_to("GET", f"/repos/{REPO}/pulls/9/comments")
    assert listed and all(call.status == 200 for call in listed)
    in_conversation = issue_comment("/freemad debate", author="mallory", on_pull_request=True)
    in_conversation["issue"]["number"] = 9
    outcome = _handle(api, store, tmp_path, "issue_comment", in_conversation)
    assert outcome.action == "refused" and "told already" in outcome.reason
    assert api.calls_to("POST", f"/repos/{REPO}/issues/9/comments") == []


def test_githubs_own_comment_example_on_a_pull_request_gets_a_check_run(
    api: StandIn, store: Any, tmp_path: Path
) -> None:
    """GitHub's published issue_comment example, as the comment on a pull request it would be."""
    payload = as_pull_request_comment(load_example("issue_comment.created"))
    payload["comment"]["body"] = "/freemad debate Which policy?"
    repo, number = payload["repository"]["full_name"], payload["issue"]["number"]
    login = payload["comment"]["user"]["login"]
    api.permissions[login] = "write"
    api.add_pull(repo, number, head_ref="f", head_sha="d" * 40, base_ref="main", head_repo=repo)

    outcome = _handle(api, store, tmp_path, "issue_comment", payload)

    assert outcome.status == "completed"
    [run] = api.check_runs.values()
    assert run["head_sha"] == "d" * 40 and run["conclusion"] == "success"


def test_githubs_own_pull_request_label_example_starts_a_comment_and_a_check_run(
    api: StandIn, store: Any, tmp_path: Path
) -> None:
    """GitHub's published pull_request.labeled example, labelled `freemad:debate`: a label has
    no comment to put 👀 on, so the status comment says "starting" at once."""
    payload = load_example("pull_request.labeled")
    payload["label"]["name"] = "freemad:debate"
    payload["pull_request"]["labels"] = [payload["label"]]
    repo, number = payload["repository"]["full_name"], payload["pull_request"]["number"]
    api.permissions[payload["sender"]["login"]] = "write"

    outcome = _handle(api, store, tmp_path, "pull_request", payload)

    assert outcome.status == "completed"
    [posted] = api.calls_to("POST", f"/repos/{repo}/issues/{number}/comments")
    assert posted.body["body"].startswith("FREE-MAD is starting a debate")
    [run] = api.check_runs.values()
    assert run["head_sha"] == payload["pull_request"]["head"]["sha"]
    assert run["conclusion"] == "success" and api.reactions == []


def test_githubs_own_review_comment_example_is_answered_in_its_thread(
    api: StandIn, store: Any, tmp_path: Path
) -> None:
    """GitHub's pull_request_review_comment example, where the fixtures hold one."""
    payload = load_example("pull_request_review_comment.created")
    payload["comment"]["body"] = "/freemad debate Which policy?"
    repo, cid = payload["repository"]["full_name"], payload["comment"]["id"]
    number = payload["pull_request"]["number"]
    api.permissions[payload["comment"]["user"]["login"]] = "write"

    outcome = _handle(api, store, tmp_path, "pull_request_review_comment", payload)

    assert outcome.status == "completed"
    assert api.calls_to("POST", f"/repos/{repo}/pulls/{number}/comments/{cid}/replies")
    assert not [c for c in api.calls if c.path.endswith(f"/issues/{number}/comments")]


# -- the stand-in refuses what GitHub refuses ---------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"head_sha": HEAD}, 422),  # no name
        ({"name": "x", "head_sha": "e" * 40}, 422),  # a commit the repository lacks
        ({"name": "x", "head_sha": HEAD, "status": "completed"}, 422),  # no conclusion
        ({"name": "x", "head_sha": HEAD, "conclusion": "green"}, 422),
        ({"name": "x", "head_sha": HEAD, "output": {"title": "t"}}, 422),  # no summary
        ({"name": "x", "head_sha": HEAD, "output": {"title": "t", "summary": "s" * 65_536}}, 422),
    ],
)
def test_the_stand_in_refuses_a_check_run_github_refuses(
    api: StandIn, body: dict[str, Any], status: int
) -> None:
    """Probed as another client (not FREE-MAD's, whose requests must conform)."""
    sent = requests.post(
        f"{api.base_url}/repos/{REPO}/check-runs",
        json=body,
        headers={"Authorization": f"Bearer {TOKEN}", "User-Agent": "probe/1"},
        timeout=10,
    )
    assert sent.status_code == status and api.check_runs == {}
    assert isinstance(sent.json()["message"], str)


def test_the_stand_in_refuses_a_reply_to_a_comment_not_on_that_pull_requests_diff(
    api: StandIn,
) -> None:
    api.add_review_comment(REPO, 9, "/freemad debate", 2002)
    api.add_comment(REPO, 9, "an issue comment, not on the diff", 3003)
    with PyGithubForge(TOKEN, base_url=api.base_url, throttle=False, retries=0) as forge:
        for number, comment_id in ((9, 3003), (8, 2002)):
            with pytest.raises(ForgeError) as refused:
                forge.reply_in_review_thread(REPO, number, comment_id, "hello")
            assert refused.value.status == 404
        with pytest.raises(ForgeError) as refused:
            forge.edit_review_comment(REPO, 2002, "not FREE-MAD's comment to edit")
        assert refused.value.status == 404
        posted = forge.reply_in_review_thread(REPO, 9, 2002, "hello")
    assert posted.html_url.endswith(f"#discussion_r{posted.id}")
