"""The review's exchanges with GitHub through the real client and the loopback stand-in: the PR's
files, paged as GitHub pages them, and the review's request body held to GitHub's published
OpenAPI description (`@octokit/openapi`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from freemad.github.forge import ForgeError
from freemad.github.pygithub_forge import PyGithubForge
from freemad.github.review_post import diff_from_files
from freemad.github.standin import StandIn
from tests.github.openapi_contract import contract, description_path, problems

TOKEN = "ghp_ReviewTestToken0123456789abcdefWXYZ"
REPO = "octo/widgets"
DIFF = (Path(__file__).parents[1] / "debate" / "fixtures" / "review.diff").read_text()
needs_description = pytest.mark.skipif(
    not description_path().is_file(),
    reason=f"{description_path()} is absent: make github-descriptions installs it from npm",
)


@pytest.fixture
def api() -> Iterator[StandIn]:
    with StandIn(permissions={"alice": "write"}, token=TOKEN) as standin:
        standin.add_pull(
            REPO, 7, head_ref="feature", head_sha="c" * 40, base_ref="main", head_repo=REPO
        )
        yield standin


def _many_files(count: int) -> str:
    return "".join(
        f"diff --git a/f{i}.py b/f{i}.py\n--- a/f{i}.py\n+++ b/f{i}.py\n@@ -1 +1 @@\n-a\n+b{i}\n"
        for i in range(count)
    )


def test_the_files_of_a_pull_request_every_page_of_them(api: StandIn) -> None:
    api.set_pull_diff(REPO, 7, _many_files(35) + DIFF)
    with PyGithubForge(TOKEN, base_url=api.base_url, throttle=False) as forge:
        files = forge.pull_request_files(REPO, 7)
    assert len(files) == 36 and files[-1].filename == "app/service.py"
    pages = [c for c in api.calls if c.path == f"/repos/{REPO}/pulls/7/files"]
    assert len(pages) == 2  # GitHub's 30 a page: the client followed the Link
    assert files[0].patch == "@@ -1,1 +1,1 @@\n-a\n+b0"
    rebuilt, unseen = diff_from_files(files[-1:])
    assert unseen == []
    assert "+    except:\n" in rebuilt and rebuilt.startswith("diff --git a/app/service.py")


@needs_description
def test_the_review_request_body_is_valid_under_githubs_description(api: StandIn) -> None:
    api.set_pull_diff(REPO, 7, DIFF)
    comments = [
        {
            "path": "app/service.py",
            "line": 9,
            "side": "RIGHT",
            "body": "Bare except.\n\n```suggestion\n    except Exception:\n```",
        },
    ]
    with PyGithubForge(TOKEN, base_url=api.base_url, throttle=False) as forge:
        posted = forge.create_review(
            REPO, 7, commit_id="c" * 40, body="summary", event="COMMENT", comments=comments
        )
    [call] = api.calls_to("POST", f"/repos/{REPO}/pulls/7/reviews")
    assert call.status == 200 and posted.html_url.endswith(f"#pullrequestreview-{posted.id}")
    assert problems(call) == []
    # The check is not vacuous: GitHub's schema for this body refuses what it must.
    api_description = contract()
    operation, _ = api_description.operation("POST", f"/repos/{REPO}/pulls/7/reviews")
    schema = api_description.resolve(operation.spec["requestBody"])["content"]["application/json"][
        "schema"
    ]
    assert api_description.errors(call.body, schema) == []
    assert api_description.errors({**call.body, "event": "MERGE"}, schema)
    assert api_description.errors({**call.body, "comments": [{"line": 9}]}, schema)


def test_a_comment_off_the_diff_is_refused_whole(api: StandIn) -> None:
    api.set_pull_diff(REPO, 7, DIFF)
    off = [{"path": "app/service.py", "line": 40, "side": "RIGHT", "body": "x"}]
    with (
        PyGithubForge(TOKEN, base_url=api.base_url, throttle=False) as forge,
        pytest.raises(ForgeError) as refused,
    ):
        forge.create_review(REPO, 7, commit_id="c" * 40, body="s", event="COMMENT", comments=off)
    assert refused.value.status == 422 and "part of the diff" in str(refused.value)
    assert api.reviews == []
