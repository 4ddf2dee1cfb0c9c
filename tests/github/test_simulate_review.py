"""`freemad github simulate --pr-diff FILE`: the diff served as the pull request's files in the
local stand-in, and the review request FREE-MAD would post, printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import freemad
from tests.github.openapi_contract import contract, description_path
from tests.github.payloads import issue_comment

DIFF = Path(__file__).parents[1] / "debate" / "fixtures" / "review.diff"


def _review_request(out: str) -> dict:
    lines = out.splitlines()
    start = lines.index("  the review request it would post:") + 1
    end = next(i for i in range(start, len(lines)) if lines[i] == "  }") + 1
    return json.loads("\n".join(line[2:] for line in lines[start:end]))


def test_pr_diff_alone_simulates_a_review_comment_and_prints_the_request(tmp_path: Path):
    done = freemad("github", "simulate", "--pr-diff", str(DIFF), cwd=tmp_path, home=tmp_path)
    out = done.stdout
    assert "GET /repos/octo-org/octo-repo/pulls/1/files -> 200" in out
    assert out.count("POST /repos/octo-org/octo-repo/issues/1/comments") == 1  # one status comment
    assert "POST /repos/octo-org/octo-repo/pulls/1/reviews -> 200" in out
    review = _review_request(out)
    assert review["event"] == "COMMENT"
    assert [(c["path"], c["line"]) for c in review["comments"]] == [
        ("app/service.py", 5),
        ("app/service.py", 9),
    ]
    assert json.loads(out[out.rindex("\n{") :])["action"] == "review"
    if description_path().is_file():
        api = contract()
        operation, _ = api.operation("POST", "/repos/octo-org/octo-repo/pulls/1/reviews")
        content = api.resolve(operation.spec["requestBody"])["content"]
        assert api.errors(review, content["application/json"]["schema"]) == []


def test_pr_diff_with_a_payload_of_ones_own(tmp_path: Path):
    payload = issue_comment("/freemad review rounds=0", on_pull_request=True)
    (tmp_path / "event.json").write_text(json.dumps(payload))
    done = freemad(
        "github", "simulate", "--event", "issue_comment", "--payload", "event.json",
        "--pr-diff", str(DIFF), cwd=tmp_path, home=tmp_path,
    )  # fmt: skip
    review = _review_request(done.stdout)
    assert sorted(c["line"] for c in review["comments"]) == [5, 6, 9]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "the diff is empty"),
        (
            "diff --git a/x.png b/x.png\nindex 1..2 100644\nBinary files a/x.png and b/x.png differ\n",
            "only binary files",
        ),
    ],
)
def test_a_diff_with_nothing_to_review_is_a_reply_and_no_review(tmp_path: Path, text, says):
    (tmp_path / "in.diff").write_text(text)
    done = freemad("github", "simulate", "--pr-diff", "in.diff", cwd=tmp_path, home=tmp_path)
    assert "/reviews" not in done.stdout
    assert says in done.stdout and '"action": "replied"' in done.stdout


def test_a_malformed_diff_is_a_usage_error_saying_why(tmp_path: Path):
    # The hunk header promises three new lines and gives two.
    (tmp_path / "in.diff").write_text(
        "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n"
        '@@ -1,1 +1,3 @@\n print("hi")\n+print("there")\n'
    )
    done = freemad(
        "github", "simulate", "--pr-diff", "in.diff", cwd=tmp_path, home=tmp_path, code=2
    )
    said = "freemad: error: not a unified diff FREE-MAD can read: Hunk is shorter than expected\n"
    assert done.stderr == said and done.stdout == ""
    reviewed = freemad("review", "--diff", "in.diff", cwd=tmp_path, home=tmp_path, code=2)
    assert reviewed.stderr == said  # as `freemad review --diff` says it


def test_neither_payload_nor_diff_is_a_usage_error(tmp_path: Path):
    done = freemad("github", "simulate", cwd=tmp_path, home=tmp_path, code=2)
    assert "give --event and --payload together, or --pr-diff FILE alone" in done.stderr
