"""The forge port over PyGithub, against the loopback stand-in: real HTTP, PyGithub by base URL."""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from freemad.github.forge import ForgeError, PostedComment, PullRequestRef
from freemad.github.markers import key_marker, key_of
from freemad.github.pygithub_forge import PyGithubForge
from freemad.github.standin import StandIn
from tests.conftest import FIXTURES

TOKEN = "ghp_FreemadTestToken0123456789abcdefWXYZ"
REPO = "octo/widgets"
R = f"/repos/{REPO}"
PR = {"head": "freemad/x", "base": "main", "title": "t", "body": "b", "draft": False}
REST = FIXTURES / "github" / "rest"
PERMISSIONS = {"alice": "admin", "mona": "maintain", "bob": "write", "tri": "triage", "rea": "read"}


def rest_fixture(name: str) -> list[dict]:
    path = REST / name
    if not path.is_file():
        pytest.skip(f"{path} is absent: the shared GitHub fixtures lie beside the checkout")
    return json.loads(path.read_text())


def with_issues(standin: StandIn) -> StandIn:
    """Issues 1 to 9 exist: GitHub answers 404 to a comment on one that does not."""
    for number in range(1, 10):
        standin.add_issue(REPO, number, f"issue {number}", "")
    return standin


@pytest.fixture
def api() -> Iterator[StandIn]:
    with StandIn(permissions=PERMISSIONS, token=TOKEN) as standin:
        yield with_issues(standin)


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def forge(api: StandIn, sleeps: list[float]) -> Iterator[PyGithubForge]:
    with PyGithubForge(TOKEN, base_url=api.base_url, sleep=sleeps.append, throttle=False) as f:
        yield f


def seen(api: StandIn) -> list[tuple[str, str, int]]:
    return [(c.method, c.path, c.status) for c in api.calls]


def rate_limited(seconds: float) -> dict[str, str]:
    return {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time() + seconds))}


# -- every method, as GitHub sees it ---------------------------------------------------------


@pytest.mark.parametrize(
    ("login", "expected"),
    [
        ("alice", "admin"),
        ("mona", "maintain"),
        ("bob", "write"),
        ("tri", "triage"),
        ("rea", "read"),
    ],
)
def test_permission_reads_role_name(api, forge, login, expected) -> None:
    assert forge.permission(REPO, login) == expected
    assert seen(api) == [("GET", f"{R}/collaborators/{login}/permission", 200)]


def test_permission_of_a_non_collaborator_is_none(api, forge) -> None:
    assert forge.permission(REPO, "stranger") is None
    assert seen(api) == [("GET", f"{R}/collaborators/stranger/permission", 404)]


def test_a_custom_role_falls_back_to_its_permission(api, forge) -> None:
    api.fail_next(200, body={"permission": "write", "role_name": "security-engineer"})
    assert forge.permission(REPO, "sec") == "write"


def test_comment_posts_the_body_and_returns_id_and_url(api, forge) -> None:
    posted = forge.comment(REPO, 7, "**FREE-MAD** is on it")
    assert isinstance(posted, PostedComment)
    assert seen(api) == [("POST", f"{R}/issues/7/comments", 201)]
    # The text, then the hidden key a retry finds the comment by (test_creates.py).
    sent = api.calls[0].body["body"]
    assert sent == f"**FREE-MAD** is on it\n\n{key_marker(str(key_of(sent)))}"
    assert api.comments[posted.id]["body"] == sent
    assert posted.html_url.endswith(f"/{REPO}/issues/7#issuecomment-{posted.id}")


def test_edit_comment_patches_it_in_place(api, forge) -> None:
    first = forge.comment(REPO, 7, "working")
    edited = forge.edit_comment(REPO, first.id, "done")
    assert edited == first
    assert seen(api)[-1] == ("PATCH", f"{R}/issues/comments/{first.id}", 200)
    assert api.calls[-1].body == {"body": "done"}
    assert api.comments[first.id]["body"] == "done"


def test_editing_a_missing_comment_is_a_404_with_a_hint(forge) -> None:
    with pytest.raises(ForgeError) as caught:
        forge.edit_comment(REPO, 999, "x")
    assert caught.value.status == 404
    message = f"GitHub answered 404 to PATCH {R}/issues/comments/999: Not Found ("
    assert caught.value.one_line().startswith(message)


def test_react_posts_eyes_and_a_repeat_is_harmless(api, forge) -> None:
    posted = forge.comment(REPO, 3, "/freemad run")
    forge.react(REPO, posted.id, "eyes")
    forge.react(REPO, posted.id, "eyes")
    calls = api.calls_to("POST", f"{R}/issues/comments/{posted.id}/reactions")
    assert [c.body for c in calls] == [{"content": "eyes"}] * 2
    assert [c.status for c in calls] == [201, 200]
    assert [r["content"] for r in api.reactions] == ["eyes"]


def test_a_reaction_on_a_review_comment_goes_to_the_pull_request_comments(api, forge) -> None:
    """A comment on a pull request's diff has its own reactions endpoint; the issue comments'
    one does not know it (GitHub answers 404 there)."""
    api.add_review_comment(REPO, 9, "/freemad debate", 2002)
    forge.react_to_review_comment(REPO, 2002, "eyes")
    forge.react_to_review_comment(REPO, 2002, "eyes")
    calls = api.calls_to("POST", f"{R}/pulls/comments/2002/reactions")
    assert [(c.body, c.status) for c in calls] == [
        ({"content": "eyes"}, 201),
        ({"content": "eyes"}, 200),
    ]
    with pytest.raises(ForgeError) as wrong_door:
        forge.react(REPO, 2002, "eyes")
    assert wrong_door.value.status == 404
    with pytest.raises(ForgeError) as missing:
        forge.react_to_review_comment(REPO, 3003, "eyes")
    assert missing.value.status == 404
    assert seen(api)[-1] == ("POST", f"{R}/pulls/comments/3003/reactions", 404)


def test_open_pull_request_sends_every_field(api, forge) -> None:
    ref = forge.open_pull_request(REPO, **{**PR, "draft": True})
    assert isinstance(ref, PullRequestRef)
    assert seen(api) == [("POST", f"{R}/pulls", 201)]
    sent = api.calls[0].body
    assert sent == {
        **PR,
        "draft": True,
        "body": f"{PR['body']}\n\n{key_marker(str(key_of(sent['body'])))}",
    }
    assert ref.html_url.endswith(f"/{REPO}/pull/{ref.number}")


def test_a_second_pull_request_is_a_one_line_422_not_retried(api, forge, sleeps) -> None:
    forge.open_pull_request(REPO, **PR)
    with pytest.raises(ForgeError) as caught:
        forge.open_pull_request(REPO, **PR)
    assert str(caught.value) == (
        f"GitHub answered 422 to POST {R}/pulls: "
        "Validation Failed (A pull request already exists for octo:freemad/x.)"
    )
    assert len(api.calls) == 2
    assert sleeps == []


def test_edit_pull_request_patches_the_body(api, forge) -> None:
    ref = forge.open_pull_request(REPO, **PR)
    forge.edit_pull_request(REPO, ref.number, body="new")
    assert seen(api)[-1] == ("PATCH", f"{R}/pulls/{ref.number}", 200)
    assert api.calls[-1].body == {"body": "new"}
    assert api.pulls[(REPO, ref.number)]["body"] == "new"


def test_find_pull_request_filters_by_owner_branch_and_base(api, forge) -> None:
    ref = forge.open_pull_request(REPO, **PR)
    assert forge.find_pull_request(REPO, head="freemad/x", base="main") == ref
    assert forge.find_pull_request(REPO, head="octo:freemad/x", base="main") == ref
    assert forge.find_pull_request(REPO, head="freemad/x", base="develop") is None
    assert forge.find_pull_request(REPO, head="fork:freemad/x", base="main") is None
    assert seen(api)[1] == ("GET", f"{R}/pulls", 200)
    assert api.calls[1].query == {"state": "open", "head": "octo:freemad/x", "base": "main"}


FREEMAD_YML = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "freemad.yml"


def test_dispatch_workflow_posts_ref_and_inputs_and_returns_the_run_started(api, forge) -> None:
    api.add_workflow(REPO, "freemad.yml", FREEMAD_YML.read_text())
    run_url = forge.dispatch_workflow(REPO, "freemad.yml", "main", {"mode": "plan", "issue": "7"})
    assert seen(api) == [("POST", f"{R}/actions/workflows/freemad.yml/dispatches", 200)]
    inputs = {"mode": "plan", "issue": "7"}
    assert api.calls[0].body == {"ref": "main", "inputs": inputs, "return_run_details": True}
    [dispatch] = api.dispatches
    assert run_url == f"{api.origin}/{REPO}/actions/runs/{dispatch['run_id']}"


def test_a_dispatch_answered_204_names_no_run() -> None:
    """GitHub Enterprise Server (and github.com before return_run_details) answers 204 with no
    body: the dispatch is made all the same, and there is no run to name."""
    with (
        StandIn(prefix="/api/v3", token=TOKEN) as ghes,
        PyGithubForge(TOKEN, base_url=ghes.base_url, throttle=False) as forge,
    ):
        ghes.add_workflow(REPO, "freemad.yml", FREEMAD_YML.read_text())
        assert forge.dispatch_workflow(REPO, "freemad.yml", "main", {"mode": "plan"}) is None
        assert seen(ghes) == [("POST", f"{R}/actions/workflows/freemad.yml/dispatches", 204)]
        assert ghes.calls[0].body["return_run_details"] is True  # asked, and not answered
        assert len(ghes.dispatches) == 1


def test_a_github_refusing_return_run_details_is_asked_again_without_it(api, forge) -> None:
    api.add_workflow(REPO, "freemad.yml", FREEMAD_YML.read_text())
    path = f"{R}/actions/workflows/freemad.yml/dispatches"
    refusal = {"message": 'Invalid request.\n\n"return_run_details" is not a permitted key.'}
    api.fail_next(422, body=refusal, method="POST", path=path)
    assert forge.dispatch_workflow(REPO, "freemad.yml", "main", {"mode": "plan"}) is None
    assert [c.status for c in api.calls] == [422, 204]
    asked, again = (set(c.body) for c in api.calls)
    assert (asked, again) == ({"ref", "inputs", "return_run_details"}, {"ref", "inputs"})
    assert len(api.dispatches) == 1


@pytest.mark.parametrize(
    ("workflow", "inputs", "said"),
    [
        ("on: [push]", {}, "Workflow does not have 'workflow_dispatch' trigger"),
        (FREEMAD_YML.name, {"task": "t-1"}, 'Unexpected inputs provided: ["task"]'),
        (
            "on:\n  workflow_dispatch:\n    inputs:\n      goal: {required: true}",
            {},
            "Required input 'goal' not provided",
        ),
    ],
)
def test_a_dispatch_github_would_refuse_is_refused(api, forge, workflow, inputs, said) -> None:
    text = FREEMAD_YML.read_text() if workflow == FREEMAD_YML.name else workflow
    api.add_workflow(REPO, "w.yml", text)
    with pytest.raises(ForgeError, match="422") as refused:
        forge.dispatch_workflow(REPO, "w.yml", "main", inputs)
    assert said in str(refused.value)
    assert api.dispatches == []


def test_a_dispatch_of_a_workflow_file_that_does_not_exist_is_404(api, forge) -> None:
    with pytest.raises(ForgeError, match="404"):
        forge.dispatch_workflow(REPO, "nowhere.yml", "main", {})


def test_a_refused_dispatch_raises(api, forge) -> None:
    api.fail_next(404)
    with pytest.raises(ForgeError, match=r"^GitHub answered 404 to POST .*/dispatches: Not Found"):
        forge.dispatch_workflow(REPO, "missing.yml", "main", {})


def test_requests_carry_the_token_but_calls_leave_it_out(api, forge) -> None:
    forge.permission(REPO, "alice")
    headers = {k.lower(): v for k, v in api.calls[0].headers.items()}
    assert "authorization" not in headers
    assert headers["x-github-api-version"] == "2022-11-28"
    wrong = PyGithubForge("ghp_NotTheRightToken0000", base_url=api.base_url, throttle=False)
    with wrong, pytest.raises(ForgeError, match="401") as caught:
        wrong.permission(REPO, "alice")
    assert caught.value.hint and "token" in caught.value.hint


# -- GitHub Enterprise Server: a base URL with a path ---------------------------------------


def test_a_base_url_with_a_path_prefix_is_used_for_every_request(sleeps) -> None:
    with StandIn(prefix="/api/v3", permissions=PERMISSIONS) as api:
        with_issues(api)
        assert api.base_url.endswith("/api/v3")
        with PyGithubForge(TOKEN, base_url=api.base_url, sleep=sleeps.append, throttle=False) as f:
            posted = f.comment(REPO, 1, "hello")
            f.edit_comment(REPO, posted.id, "bye")  # follows the URL the comment came back with
            assert f.permission(REPO, "mona") == "maintain"
        assert [c.status for c in api.calls] == [201, 200, 200]
        outside = PyGithubForge(TOKEN, base_url=api.origin, sleep=sleeps.append, throttle=False)
        with outside, pytest.raises(ForgeError, match="404"):
            outside.comment(REPO, 1, "outside the prefix")


# -- retries ------------------------------------------------------------------------------------


def test_two_502s_then_success(api, forge, sleeps) -> None:
    api.fail_next(502, times=2, method="POST")
    posted = forge.comment(REPO, 4, "after a hiccup")
    # Before each retry, the comments are listed for the key: GitHub had not made it.
    assert [c.status for c in api.calls] == [502, 200, 502, 200, 201]
    assert list(api.comments) == [posted.id]
    first, second = sleeps  # exponential steps of 1 s and 2 s, jittered within their upper half
    assert 0.5 <= first <= 1.0 <= second <= 2.0


def test_retries_run_out_with_the_last_error(api, sleeps) -> None:
    api.fail_next(503, times=10)
    forge = PyGithubForge(TOKEN, base_url=api.base_url, retries=2, sleep=sleeps.append)
    with forge, pytest.raises(ForgeError) as caught:
        forge.permission(REPO, "alice")
    assert (caught.value.status, caught.value.hint) == (503, "gave up after 3 attempts")
    assert (len(api.calls), len(sleeps)) == (3, 2)


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_slept_exactly(api, forge, sleeps, status) -> None:
    api.fail_next(status, {"Retry-After": "7"})
    assert forge.permission(REPO, "bob") == "write"
    assert sleeps == [7.0]
    assert [c.status for c in api.calls] == [status, 200]


def test_403_with_no_requests_left_waits_for_the_reset(api, forge, sleeps) -> None:
    api.fail_next(403, rate_limited(30))
    forge.comment(REPO, 2, "after the reset")
    (waited,) = sleeps
    assert 28 <= waited <= 32
    assert [c.status for c in api.calls] == [403, 201]


def test_a_reset_hours_away_fails_at_once_saying_when(api, forge, sleeps) -> None:
    headers = rate_limited(2 * 3600)
    api.fail_next(403, headers)
    with pytest.raises(ForgeError) as caught:
        forge.comment(REPO, 2, "never sent")
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(int(headers["X-RateLimit-Reset"])))
    assert f"rate limit exhausted (403 to POST {R}/issues/2/comments)" in str(caught.value)
    assert f"resets at {when}" in str(caught.value)
    assert sleeps == []
    assert len(api.calls) == 1


def test_a_secondary_rate_limit_without_headers_waits_a_minute(api, forge, sleeps) -> None:
    api.fail_next(403)  # the stand-in's default 403 body is the secondary-limit message
    assert forge.permission(REPO, "alice") == "admin"
    assert sleeps == [60.0]


def test_a_plain_403_is_not_retried(api, forge, sleeps) -> None:
    api.fail_next(403, body={"message": "Resource not accessible by integration"})
    with pytest.raises(ForgeError, match="Resource not accessible by integration") as caught:
        forge.dispatch_workflow(REPO, "freemad.yml", "main", {})
    assert caught.value.hint and "permission" in caught.value.hint
    assert len(api.calls) == 1
    assert sleeps == []


def test_an_unreachable_server_is_retried_then_reported(sleeps) -> None:
    with StandIn() as gone:
        url = gone.base_url
    forge = PyGithubForge(TOKEN, base_url=url, retries=1, sleep=sleeps.append, timeout=5)
    with forge, pytest.raises(ForgeError, match="could not be reached for GET") as caught:
        forge.permission(REPO, "alice")
    assert len(sleeps) == 1
    assert "\n" not in str(caught.value)


# -- the token never shows ------------------------------------------------------------------


def test_the_token_never_appears_in_logs_or_errors(api, caplog, sleeps) -> None:
    for name in (None, "github", "urllib3", "freemad.github"):
        caplog.set_level(logging.DEBUG, logger=name)
    errors: list[ForgeError] = []
    with PyGithubForge(TOKEN, base_url=api.base_url, sleep=sleeps.append, throttle=False) as forge:
        api.fail_next(502)
        forge.comment(REPO, 1, "hello")
        api.fail_next(422, body={"message": f"token {TOKEN} is not allowed here"})
        api.fail_next(500, times=9)
        for action in (lambda: forge.comment(REPO, 1, "x"), lambda: forge.permission(REPO, "a")):
            with pytest.raises(ForgeError) as caught:
                action()
            errors.append(caught.value)
        # Anything else that logs the token on these loggers is masked too.
        logging.getLogger("github.Requester").debug("Authorization: token %s", TOKEN)
        logging.getLogger("freemad.github").warning("oops %s", TOKEN)
    assert any(r.name == "github.Requester" for r in caplog.records)
    assert any(r.name.startswith("urllib3") for r in caplog.records)
    assert TOKEN not in caplog.text
    assert all(TOKEN not in r.getMessage() for r in caplog.records)
    assert "[REDACTED]" in caplog.text
    for error in errors:
        assert TOKEN not in str(error)
        assert TOKEN not in error.one_line()
    assert "token [REDACTED] is not allowed here" in str(errors[0])


# -- recorded reality: octokit's fixtures --------------------------------------------------


def test_a_recorded_422_becomes_one_line(api, forge) -> None:
    (exchange,) = rest_fixture("errors.json")
    api.fail_next(exchange["status"], exchange["headers"], body=exchange["response"])
    with pytest.raises(ForgeError) as caught:
        forge.comment(REPO, 1, "x")
    message = "Validation Failed (Label color invalid)"
    assert str(caught.value) == f"GitHub answered 422 to POST {R}/issues/1/comments: {message}"
    assert len(api.calls) == 1


def test_our_422_has_the_recorded_shape(api) -> None:
    (exchange,) = rest_fixture("errors.json")
    status, _, ours = _request(api, "POST", f"{R}/issues/comments/1/reactions", {"content": "?"})
    recorded = exchange["response"]
    assert status == exchange["status"]
    assert set(ours) == set(recorded)
    assert set(ours["errors"][0]) == set(recorded["errors"][0])


def test_our_rate_limit_headers_and_repository_match_the_recording(api) -> None:
    (exchange,) = rest_fixture("get-repository.json")
    recorded = {k for k in exchange["headers"] if k.startswith("x-ratelimit-")}
    status, headers, repository = _request(api, "GET", R)
    assert status == 200
    assert {k.lower() for k in headers if k.lower().startswith("x-ratelimit-")} == recorded
    # has_discussions came to GitHub's API after this recording; its description requires it now
    # (the contract in tests/conftest.py holds the rest of the shape to the description).
    assert set(repository) - set(exchange["response"]) == {"has_discussions"}
    assert set(repository["owner"]) <= set(exchange["response"]["owner"])


def test_recorded_rate_limit_headers_drive_the_wait(api, forge, sleeps) -> None:
    (exchange,) = rest_fixture("get-repository.json")
    headers = dict(exchange["headers"], **{"x-ratelimit-remaining": "0"})
    headers["x-ratelimit-reset"] = str(int(time.time()) + 30)
    api.fail_next(403, headers)
    assert forge.permission(REPO, "alice") == "admin"
    (waited,) = sleeps
    assert 28 <= waited <= 32
    # The recording's own reset lies far beyond any wait: a clear error, not a crash.
    api.fail_next(403, dict(exchange["headers"], **{"x-ratelimit-remaining": "0"}))
    with pytest.raises(ForgeError, match="rate limit exhausted"):
        forge.permission(REPO, "alice")


def _request(
    api: StandIn, method: str, path: str, body: object = None
) -> tuple[int, dict[str, str], dict]:
    """A request without PyGithub, to look at exactly what the stand-in serves."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"token {TOKEN}", "Content-Type": "application/json"}
    request = urllib.request.Request(api.api_url(path), data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), json.loads(error.read())


def test_a_comment_on_an_issue_that_does_not_exist_is_refused_as_github_does(
    forge: PyGithubForge, api: StandIn
) -> None:
    with pytest.raises(ForgeError) as refused:
        forge.comment(REPO, 4040, "x")
    assert refused.value.status == 404
    assert [c.status for c in api.calls if c.method == "POST"] == [404]
