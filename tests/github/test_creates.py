"""Every create is done once: GitHub sometimes creates a comment (a pull request, a review, a
reply in a review thread, a check run) and still answers 502. The stand-in does that on request
(`fail_next(..., done=True)`); FREE-MAD's forge then finds what it made by the hidden key in its
body (a check run's `external_id`), and creates nothing twice. A workflow dispatch cannot be
found afterwards: it is not sent again."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from freemad.github.forge import ForgeError, ListedComment
from freemad.github.markers import find_key, key_marker, key_of, with_key
from freemad.github.pygithub_forge import PyGithubForge
from freemad.github.standin import StandIn
from tests.github.payloads import ONE_LINE_DIFF as DIFF

TOKEN = "ghp_CreateOnceTestToken0123456789abcdefWXYZ"
REPO = "octo/widgets"
R = f"/repos/{REPO}"
SHA = "a" * 40


@pytest.fixture
def api() -> Iterator[StandIn]:
    with StandIn(token=TOKEN) as standin:
        standin.add_issue(REPO, 4, "four", "")
        yield standin


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def forge(api: StandIn, sleeps: list[float]) -> Iterator[PyGithubForge]:
    with PyGithubForge(TOKEN, base_url=api.base_url, sleep=sleeps.append, throttle=False) as f:
        yield f


def statuses(api: StandIn) -> list[tuple[str, str, int]]:
    return [(c.method, c.path, c.status) for c in api.calls]


def test_a_comment_github_made_but_answered_502_is_found_not_posted_again(
    api: StandIn, forge: PyGithubForge
) -> None:
    api.add_comment(REPO, 4, "someone else's", 77)
    api.fail_next(502, method="POST", path=f"{R}/issues/4/comments", done=True)
    posted = forge.comment(REPO, 4, "FREE-MAD is starting")
    mine = [c for c in api.comments.values() if c["body"].startswith("FREE-MAD")]
    assert len(mine) == 1 and mine[0]["id"] == posted.id
    assert posted.html_url == mine[0]["html_url"]
    assert statuses(api) == [
        ("POST", f"{R}/issues/4/comments", 502),
        ("GET", f"{R}/issues/4/comments", 200),
    ]


def test_without_the_key_the_same_502_would_have_posted_twice(api: StandIn) -> None:
    """The attack on the defence: the same fault, a client that retries blindly (PyGithub's own
    create_comment), two comments. This is what the key prevents."""
    import github

    api.fail_next(502, method="POST", path=f"{R}/issues/4/comments", done=True)
    gh = github.Github(auth=github.Auth.Token(TOKEN), base_url=api.base_url, retry=None, lazy=True)
    issue = gh.get_repo(REPO).get_issue(4)
    with pytest.raises(github.GithubException):
        issue.create_comment("posted blind")
    issue.create_comment("posted blind")
    assert [c["body"] for c in api.comments.values()] == ["posted blind"] * 2


def test_a_comment_github_did_not_make_is_posted_on_the_retry(
    api: StandIn, forge: PyGithubForge, sleeps: list[float]
) -> None:
    api.fail_next(502, method="POST")
    posted = forge.comment(REPO, 4, "hello")
    assert list(api.comments) == [posted.id]
    assert [c.status for c in api.calls] == [502, 200, 201]
    assert len(sleeps) == 1


def test_a_comment_found_on_a_later_page_of_a_long_thread(
    api: StandIn, forge: PyGithubForge
) -> None:
    for n in range(75):  # three pages of 30
        api.add_comment(REPO, 4, f"chatter {n}", 5000 + n)
    api.fail_next(502, method="POST", path=f"{R}/issues/4/comments", done=True)
    posted = forge.comment(REPO, 4, "FREE-MAD here")
    assert sum(c["body"].startswith("FREE-MAD") for c in api.comments.values()) == 1
    assert api.comments[posted.id]["body"].startswith("FREE-MAD here")
    pages = [c.query.get("page", "1") for c in api.calls if c.method == "GET"]
    assert pages == ["1", "2", "3"]


def test_when_it_cannot_look_it_does_not_post_again(api: StandIn, forge: PyGithubForge) -> None:
    api.fail_next(502, method="POST", path=f"{R}/issues/4/comments", done=True)
    api.fail_next(503, method="GET", times=50)
    with pytest.raises(ForgeError) as caught:
        forge.comment(REPO, 4, "once at most")
    assert caught.value.status == 502
    assert "not sent again" in caught.value.one_line()
    assert len(api.comments) == 1
    assert [c.method for c in api.calls].count("POST") == 1


def test_a_pull_request_github_opened_but_answered_502_is_found(
    api: StandIn, forge: PyGithubForge
) -> None:
    """Before, the retry met GitHub's 422 "A pull request already exists" and the run failed."""
    api.fail_next(502, method="POST", path=f"{R}/pulls", done=True)
    ref = forge.open_pull_request(
        REPO, head="freemad/x", base="main", title="t", body="trajectory", draft=True
    )
    assert list(api.pulls) == [(REPO, ref.number)]
    assert [c.status for c in api.calls] == [502, 200]


def test_a_review_github_made_but_answered_502_is_found(api: StandIn, forge: PyGithubForge) -> None:
    api.add_pull(REPO, 9, head_ref="f", head_sha="a" * 40, base_ref="main", head_repo=REPO)
    api.set_pull_diff(REPO, 9, DIFF)
    api.fail_next(502, method="POST", path=f"{R}/pulls/9/reviews", done=True)
    inline = [{"path": "app.py", "line": 2, "side": "RIGHT", "body": "nice"}]
    posted = forge.create_review(
        REPO, 9, commit_id="a" * 40, body="looks fine", event="COMMENT", comments=inline
    )
    (review,) = api.reviews
    assert posted.id == review["id"]
    assert statuses(api)[-1] == ("GET", f"{R}/pulls/9/reviews", 200)


def seed_pull(api: StandIn) -> None:
    api.add_pull(REPO, 9, head_ref="f", head_sha=SHA, base_ref="main", head_repo=REPO)
    api.add_review_comment(REPO, 9, "/freemad debate", 2002)


def test_a_thread_reply_github_made_but_answered_502_is_found_not_posted_again(
    api: StandIn, forge: PyGithubForge
) -> None:
    """Before, the reply was retried blind after the 502: two identical replies in the thread."""
    seed_pull(api)
    api.fail_next(502, method="POST", path=f"{R}/pulls/9/comments/2002/replies", done=True)
    posted = forge.reply_in_review_thread(REPO, 9, 2002, "FREE-MAD is starting")
    mine = [c for c in api.review_comments.values() if c["body"].startswith("FREE-MAD")]
    assert [c["id"] for c in mine] == [posted.id] and key_of(mine[0]["body"]) is not None
    assert statuses(api) == [
        ("POST", f"{R}/pulls/9/comments/2002/replies", 502),
        ("GET", f"{R}/pulls/9/comments", 200),
    ]


def test_a_thread_reply_github_did_not_make_is_posted_on_the_retry(
    api: StandIn, forge: PyGithubForge
) -> None:
    seed_pull(api)
    api.fail_next(502, method="POST")
    posted = forge.reply_in_review_thread(REPO, 9, 2002, "hello")
    assert sorted(api.review_comments) == [2002, posted.id]
    assert [c.status for c in api.calls] == [502, 200, 201]


def test_a_check_run_github_made_but_answered_502_is_found_not_created_again(
    api: StandIn, forge: PyGithubForge
) -> None:
    """Before, the create was retried blind after the 502: two check runs on the commit. The
    run carries a key as its `external_id`; the retry lists the commit's runs of that name."""
    seed_pull(api)
    shown = {"name": "FREE-MAD", "head_sha": SHA, "title": "FREE-MAD", "summary": "starting"}
    other = forge.create_check_run(REPO, **shown)  # an earlier job's, of the same name
    api.fail_next(502, method="POST", path=f"{R}/check-runs", done=True)
    ident = forge.create_check_run(REPO, **shown)
    assert sorted(api.check_runs) == [other, ident]
    assert api.check_runs[ident]["external_id"] != api.check_runs[other]["external_id"]
    listed = f"{R}/commits/{SHA}/check-runs"
    assert statuses(api)[1:] == [("POST", f"{R}/check-runs", 502), ("GET", listed, 200)]
    assert api.calls[-1].query["check_name"] == "FREE-MAD"


def test_a_check_run_github_did_not_make_is_created_on_the_retry(
    api: StandIn, forge: PyGithubForge
) -> None:
    seed_pull(api)
    api.fail_next(502, method="POST")
    ident = forge.create_check_run(REPO, name="FREE-MAD", head_sha=SHA, title="t", summary="s")
    assert list(api.check_runs) == [ident]
    assert [c.status for c in api.calls] == [502, 200, 201]


def test_a_dispatch_answered_502_is_not_sent_again(api: StandIn, forge: PyGithubForge) -> None:
    """GitHub gives no way to find a dispatch afterwards: after a 5xx it may have started the
    run, so the dispatch fails, saying so, instead of starting a second run."""
    api.add_workflow(REPO, "freemad.yml", "on:\n  workflow_dispatch:\n")
    api.fail_next(502, method="POST", done=True)
    with pytest.raises(ForgeError) as caught:
        forge.dispatch_workflow(REPO, "freemad.yml", "main", {})
    assert caught.value.status == 502 and caught.value.maybe_done
    assert "not sent again" in caught.value.one_line()
    assert len(api.dispatches) == 1
    assert [c.method for c in api.calls] == ["POST"]


def test_a_dispatch_whose_answer_was_lost_is_not_sent_again() -> None:
    with LosesAnswers(3.0, token=TOKEN) as api:
        api.add_workflow(REPO, "freemad.yml", "on:\n  workflow_dispatch:\n")
        forge = PyGithubForge(TOKEN, base_url=api.base_url, timeout=1, throttle=False)
        with forge, pytest.raises(ForgeError) as caught:
            forge.dispatch_workflow(REPO, "freemad.yml", "main", {})
        assert caught.value.maybe_done and len(api.dispatches) == 1
        assert [c.method for c in api.calls] == ["POST"]


def test_a_dispatch_that_never_reached_github_is_sent_again(sleeps: list[float]) -> None:
    """A connection refused sent nothing: asking again cannot start a second run."""
    with StandIn(token=TOKEN) as api:
        base_url = api.base_url  # nothing listens there once the stand-in stops
    forge = PyGithubForge(TOKEN, base_url=base_url, retries=2, sleep=sleeps.append)
    with forge, pytest.raises(ForgeError) as caught:
        forge.dispatch_workflow(REPO, "freemad.yml", "main", {})
    assert not caught.value.maybe_done and len(sleeps) == 2


def test_the_key_is_hidden_unique_and_read_back() -> None:
    one, two = with_key("text", "a" * 32), with_key("text", "b" * 32)
    assert one == f"text\n\n{key_marker('a' * 32)}" and key_of(one) == "a" * 32 != key_of(two)
    listed = [ListedComment(1, "u1", one, "x"), ListedComment(2, "u2", two, "x")]
    assert find_key(listed, "b" * 32) == listed[1]
    assert find_key(listed, "c" * 32) is None
    assert key_of("<!-- freemad:key=not-hex -->") is None


class LosesAnswers(StandIn):
    """The stand-in, carrying out the first POST and answering it only after the client gave up
    waiting (a lost answer: GitHub did it, FREE-MAD cannot tell)."""

    def __init__(self, delay: float, **options: Any) -> None:
        super().__init__(**options)
        self.delay, self.lost = delay, 0

    def serve(
        self, method: str, target: str, headers: Mapping[str, str], raw: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        answer = super().serve(method, target, headers, raw)
        if method == "POST" and not self.lost:
            self.lost += 1
            time.sleep(self.delay)
        return answer


def test_a_comment_whose_answer_was_lost_is_found_not_posted_again() -> None:
    """A read timeout after the POST was sent: before, it was not retried at all (the step
    failed though the comment was there); now the comment GitHub made is found and used."""
    with LosesAnswers(3.0, token=TOKEN) as api:
        api.add_issue(REPO, 4, "four", "")
        with PyGithubForge(TOKEN, base_url=api.base_url, timeout=1, throttle=False) as forge:
            posted = forge.comment(REPO, 4, "said once")
        assert list(api.comments) == [posted.id]
        assert [c.method for c in api.calls] == ["POST", "GET"]
