"""GitHub's 65,536-character limit on a body: the stand-in refuses a longer one as GitHub does
(422, in the shape the REST description gives), and FREE-MAD's forge keeps every comment, review
and pull request body within it, saying what it cut."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from freemad.github.body_limit import MAX_BODY, fit_body, size
from freemad.github.pygithub_forge import PyGithubForge
from freemad.github.standin import StandIn
from tests.github.payloads import ONE_LINE_DIFF as DIFF

TOKEN = "ghp_BodyLimitTestToken0123456789abcdefWXYZ"
REPO = "octo/widgets"
R = f"/repos/{REPO}"


@pytest.fixture
def api() -> Iterator[StandIn]:
    with StandIn(token=TOKEN) as standin:
        standin.add_issue(REPO, 1, "one", "")
        yield standin


@pytest.fixture
def forge(api: StandIn) -> Iterator[PyGithubForge]:
    with PyGithubForge(TOKEN, base_url=api.base_url, sleep=lambda s: None, throttle=False) as f:
        yield f


def post(
    api: StandIn, path: str, body: dict[str, object], method: str = "POST"
) -> requests.Response:
    headers = {"Authorization": f"token {TOKEN}", "Accept": "application/vnd.github+json"}
    headers |= {"User-Agent": "freemad", "X-GitHub-Api-Version": "2022-11-28"}
    return requests.request(method, api.base_url + path, json=body, headers=headers, timeout=10)


# -- the stand-in refuses what GitHub refuses ----------------------------------------------------


def test_the_stand_in_refuses_a_comment_one_character_over_the_limit(api: StandIn) -> None:
    at_limit = post(api, f"{R}/issues/1/comments", {"body": "x" * MAX_BODY})
    over = post(api, f"{R}/issues/1/comments", {"body": "x" * (MAX_BODY + 1)})
    assert at_limit.status_code == 201
    assert over.status_code == 422
    error = over.json()["errors"][0]
    assert error["message"] == "Body is too long (maximum is 65536 characters)"
    assert len(api.comments) == 1
    edited = post(
        api, f"{R}/issues/comments/{at_limit.json()['id']}", {"body": "y" * 70_000}, "PATCH"
    )
    assert edited.status_code == 422
    assert api.comments[at_limit.json()["id"]]["body"] == "x" * MAX_BODY


def test_the_stand_in_refuses_a_long_pull_request_or_review_body(api: StandIn) -> None:
    opened = post(
        api, f"{R}/pulls", {"head": "b", "base": "main", "title": "t", "body": "z" * 70_000}
    )
    assert opened.status_code == 422
    assert "too long" in opened.json()["errors"][0]["message"]
    api.add_pull(REPO, 2, head_ref="f", head_sha="a" * 40, base_ref="main", head_repo=REPO)
    api.set_pull_diff(REPO, 2, DIFF)
    review = post(api, f"{R}/pulls/2/reviews", {"event": "COMMENT", "body": "r" * 70_000})
    assert review.status_code == 422
    assert api.reviews == [] and (REPO, 1) not in api.pulls


# -- FREE-MAD's forge sends what GitHub takes, and says what it cut ------------------------------


def test_a_comment_over_the_limit_is_cut_to_fit_and_says_so(
    api: StandIn, forge: PyGithubForge
) -> None:
    text = "".join(f"line {n}: {'word ' * 20}\n" for n in range(1000))  # about 108,000 characters
    posted = forge.comment(REPO, 1, text)
    kept = api.comments[posted.id]["body"]
    assert len(kept) <= MAX_BODY
    assert kept.startswith(text[:60_000])
    assert "FREE-MAD cut the last" in kept and "65,536-character limit" in kept
    cut = int(kept.split("FREE-MAD cut the last ")[1].split(" characters")[0].replace(",", ""))
    assert cut == len(text) - len(kept.split("\n\n---\n")[0])
    forge.edit_comment(REPO, posted.id, text + "more")
    assert len(api.comments[posted.id]["body"]) <= MAX_BODY
    assert [c.status for c in api.calls] == [201, 200]


def test_pull_request_and_review_bodies_are_cut_to_fit(api: StandIn, forge: PyGithubForge) -> None:
    ref = forge.open_pull_request(
        REPO, head="freemad/x", base="main", title="t", body="p" * 90_000, draft=False
    )
    assert len(api.pulls[(REPO, ref.number)]["body"]) <= MAX_BODY
    forge.edit_pull_request(REPO, ref.number, body="q" * 90_000)
    assert api.pulls[(REPO, ref.number)]["body"].startswith("q" * 60_000)
    api.set_pull_diff(REPO, ref.number, DIFF)
    inline = [{"path": "app.py", "line": 2, "side": "RIGHT", "body": "c" * 80_000}]
    forge.create_review(
        REPO, ref.number, commit_id="a" * 40, body="r" * 80_000, event="COMMENT", comments=inline
    )
    (review,) = api.reviews
    assert len(review["body"]) <= MAX_BODY
    assert len(review["comments"][0]["body"]) <= MAX_BODY
    assert all(c.status in (200, 201) for c in api.calls)


def test_an_open_code_block_and_details_are_closed_where_the_cut_falls() -> None:
    text = "## Result\n<details><summary>log</summary>\n\n```text\n" + "output line\n" * 10_000
    fitted = fit_body(text, 2_000)
    before_note = fitted.split("\n\n---\n")[0]
    assert size(fitted) <= 2_000
    assert before_note.endswith("output line\n```\n</details>")
    whole = "```text\nshort\n```\n" + "plain line\n" * 500
    assert fit_body(whole, 1_000).split("\n\n---\n")[0].count("```") == 2  # nothing to close


def test_characters_beyond_the_basic_plane_count_twice() -> None:
    """GitHub may count a character outside the Basic Multilingual Plane as two (UTF-16): the
    guard counts it so, never as one, so a body it passes is one GitHub takes however it counts."""
    emoji = "🙂" * 40_000  # 40,000 characters, 80,000 UTF-16 code units
    fitted = fit_body(emoji)
    assert size(fitted) <= MAX_BODY < size(emoji)
    assert fit_body("é" * MAX_BODY) == "é" * MAX_BODY


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["a", "\n", "```", "~~~", " ", "🙂", "<details>", "</details>"]),
        max_size=1_000,
    ).map("".join),
    st.integers(min_value=400, max_value=2_500),
    st.integers(min_value=0, max_value=100),
)
def test_whatever_the_text_the_result_fits(text: str, limit: int, reserve: int) -> None:
    fitted = fit_body(text, limit, reserve=reserve)
    assert size(fitted) <= limit - reserve
    if size(text) <= limit - reserve:
        assert fitted == text
    else:
        assert "FREE-MAD cut the last" in fitted
