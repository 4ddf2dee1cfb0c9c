"""The contract itself: GitHub's REST API description (npm `@octokit/openapi`) refuses what GitHub
would, so the check tests/conftest.py runs on every exchange with the stand-in can fail; every
route of the stand-in is an operation GitHub has; FREE-MAD's client asks for GitHub's media type.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import github
import pytest

from freemad.github import standin_shapes as shapes
from freemad.github.pygithub_forge import MEDIA_TYPE, PyGithubForge
from freemad.github.standin import StandIn, StandInCall
from tests.github.openapi_contract import contract, description_path, problems

pytestmark = pytest.mark.skipif(
    not description_path().is_file(),
    reason=f"{description_path()} is absent: make test installs it from npm "
    "(scripts/install-github-descriptions.sh); without it no exchange is checked",
)

TOKEN = "ghp_ContractTestToken0123456789abcdefWXYZ"
REPO = "octo/widgets"
R = f"/repos/{REPO}"
OURS = {"User-Agent": "freemad", "Accept": MEDIA_TYPE, "X-GitHub-Api-Version": "2022-11-28"}
JSON = {"Content-Type": "application/json; charset=utf-8"}


def call(
    method: str,
    path: str,
    *,
    body: Any = None,
    query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    status: int = 200,
    reply: Any = None,
) -> StandInCall:
    sent = {**OURS, **(JSON if body is not None else {}), **(headers or {})}
    return StandInCall(method, path, query or {}, body, sent, status, reply, JSON if reply else {})


SITE = shapes.Site(api="https://api.github.com", web="https://github.com")


@pytest.fixture
def api() -> Iterator[StandIn]:
    with StandIn(permissions={"alice": "admin"}, token=TOKEN) as standin:
        standin.add_issue(REPO, 1, "one", "")
        yield standin


# -- the check fails where GitHub would -------------------------------------------------------


def test_a_conforming_comment_passes() -> None:
    reply = shapes.comment(SITE, REPO, 1, 9, body="hi", author="freemad", association="NONE")
    assert (
        problems(
            call("POST", f"{R}/issues/1/comments", body={"body": "hi"}, status=201, reply=reply)
        )
        == []
    )


@pytest.mark.parametrize(
    ("exchange", "expected"),
    [
        (call("POST", f"{R}/issues/1/commentz", body={"body": "x"}), "no such operation"),
        (call("DELETE", R + "/pages/builds"), "no such operation"),
        (
            call("POST", f"{R}/issues/one/comments", body={"body": "x"}),
            "path parameter issue_number",
        ),
        (call("GET", f"{R}/pulls", query={"sate": "open"}), "query parameter 'sate'"),
        (call("GET", f"{R}/pulls", query={"state": "merged"}), "query parameter state='merged'"),
        (
            call("POST", f"{R}/issues/1/comments", body={"text": "x"}),
            "'body' is a required property",
        ),
        (call("POST", f"{R}/issues/comments/1/reactions", body={"content": "+2"}), "content"),
        (call("POST", f"{R}/pulls", body={"title": "x", "base": "main"}), "'head'"),
        (call("GET", R, headers={"Accept": "*/*"}), "Accept: '*/*'"),
        (
            call("GET", R, headers={"Accept": "application/vnd.github.squirrel-girl-preview"}),
            "Accept",
        ),
        (call("GET", R, headers={"X-GitHub-Api-Version": "2021-01-01"}), "X-GitHub-Api-Version"),
        (call("GET", R, body={"x": 1}), "where the operation takes none"),
    ],
    ids=lambda v: v if isinstance(v, str) else f"{v.method} {v.path}",
)
def test_a_request_github_would_refuse_is_caught(exchange: StandInCall, expected: str) -> None:
    found = problems(exchange)
    assert any(expected in text for text in found), found


def test_a_reply_short_of_githubs_shape_is_caught() -> None:
    """The stand-in's comment before the contract: no author association, a user without its
    addresses. GitHub's description requires both."""
    old = {"id": 1, "node_id": "IC_1", "url": "u", "html_url": "h", "issue_url": "i", "body": "x"}
    old.update(created_at="2026-01-01T00:00:00Z", updated_at="2026-01-01T00:00:00Z")
    old["user"] = {"login": "freemad", "id": 1, "type": "User", "site_admin": False}
    found = problems(
        call("POST", f"{R}/issues/1/comments", body={"body": "x"}, status=201, reply=old)
    )
    assert any("user: 'avatar_url' is a required property" in text for text in found), found


def test_a_status_github_does_not_give_is_caught() -> None:
    found = problems(
        call("POST", f"{R}/issues/1/comments", body={"body": "x"}, status=200, reply={})
    )
    assert any("status 200 is not one the operation answers" in text for text in found), found


def test_an_unlisted_refusal_must_be_githubs_error_body() -> None:
    """A 404 to a dispatch is not in the description's list for that operation but GitHub gives
    it; its body must be GitHub's generic error."""
    path = f"{R}/actions/workflows/nowhere.yml/dispatches"
    good = call("POST", path, body={"ref": "main"}, status=404, reply={"message": "Not Found"})
    bad = call("POST", path, body={"ref": "main"}, status=404, reply={"error": "nope"})
    assert problems(good) == []
    assert any("without GitHub's `message`" in text for text in problems(bad))


def test_a_probe_that_is_not_freemad_has_only_its_reply_checked() -> None:
    probe = call("GET", R, headers={"User-Agent": "curl/8", "Accept": "*/*"}, reply={"x": 1})
    found = problems(probe)
    assert found and not any("Accept" in text for text in found), found


# -- the stand-in is GitHub's API, route by route --------------------------------------------

SAMPLES = {
    "_get_repo": ("GET", ""),
    "_permission": ("GET", "/collaborators/alice/permission"),
    "_post_comment": ("POST", "/issues/1/comments"),
    "_comment": ("PATCH", "/issues/comments/1"),
    "_react": ("POST", "/issues/comments/1/reactions"),
    "_react_review": ("POST", "/pulls/comments/1/reactions"),
    "_review_comment": ("PATCH", "/pulls/comments/1"),
    "_reply_in_thread": ("POST", "/pulls/1/comments/2/replies"),
    "_post_check_run": ("POST", "/check-runs"),
    "_check_run": ("PATCH", "/check-runs/1"),
    "_list_check_runs": ("GET", "/commits/main/check-runs"),
    "_list_pulls": ("GET", "/pulls"),
    "_open_pull": ("POST", "/pulls"),
    "_pull": ("PATCH", "/pulls/1"),
    "_issue": ("GET", "/issues/1"),
    "_dispatch": ("POST", "/actions/workflows/freemad.yml/dispatches"),
    "_pages": ("GET", "/pages"),
    "_pull_files": ("GET", "/pulls/1/files"),
    "_post_review": ("POST", "/pulls/1/reviews"),
    "_list_comments": ("GET", "/issues/1/comments"),
    "_list_reviews": ("GET", "/pulls/1/reviews"),
    "_list_review_comments": ("GET", "/pulls/1/comments"),
}


@pytest.mark.parametrize(("methods", "pattern", "handler"), StandIn.ROUTES)
def test_every_route_of_the_stand_in_is_an_operation_github_has(
    methods: str, pattern: str, handler: str
) -> None:
    method, rest = SAMPLES[handler]
    assert method in methods.split() and re.fullmatch(pattern, rest)
    for one in methods.split():
        assert contract().operation(one, R + rest) is not None, (one, R + rest)


@pytest.mark.parametrize(("methods", "pattern", "handler"), StandIn.ROUTES)
def test_every_operation_we_use_exists_on_enterprise_server(
    methods: str, pattern: str, handler: str
) -> None:
    ghes = description_path("ghes-3.19")
    if not ghes.is_file():
        pytest.skip(f"{ghes} is absent")
    _, rest = SAMPLES[handler]
    for one in methods.split():
        assert contract("ghes-3.19").operation(one, R + rest) is not None, (one, R + rest)


# -- FREE-MAD's client, end to end ------------------------------------------------------------


def test_pygithub_alone_asks_for_any_media_type_and_a_retired_preview(api: StandIn) -> None:
    """What FREE-MAD's requests were before it set the media type (PyGithub as it comes): the
    contract refuses them."""
    auth = github.Auth.Token(TOKEN)
    client = github.Github(auth=auth, base_url=api.base_url, retry=None)
    api.add_comment(REPO, 1, "/freemad debate", 77)
    try:
        client.get_repo(REPO).get_issue(1).get_comment(77).create_reaction("eyes")
    finally:
        client.close()
    accepts = {c.headers.get("Accept") for c in api.calls}
    assert accepts == {"*/*", "application/vnd.github.squirrel-girl-preview"}
    as_ours = [replace(c, headers={**c.headers, "User-Agent": "freemad"}) for c in api.calls]
    refused = [text for c in as_ours for text in problems(c) if "Accept" in text]
    assert len(refused) == len(api.calls)


def test_freemad_asks_for_githubs_media_type_on_every_request(api: StandIn) -> None:
    api.add_comment(REPO, 1, "/freemad debate", 77)
    with PyGithubForge(TOKEN, base_url=api.base_url, throttle=False) as forge:
        forge.react(REPO, 77, "eyes")
        posted = forge.comment(REPO, 1, "working on it")
        forge.edit_comment(REPO, posted.id, "done")
        forge.permission(REPO, "alice")
        forge.issue(REPO, 1)
    assert len(api.calls) >= 5
    assert {c.headers.get("Accept") for c in api.calls} == {MEDIA_TYPE}
    assert [text for c in api.calls for text in problems(c)] == []
