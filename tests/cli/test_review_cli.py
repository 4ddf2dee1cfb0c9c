"""`freemad review --diff FILE`: the review debate run locally, as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import freemad

DIFF = Path(__file__).parents[1] / "debate" / "fixtures" / "review.diff"


def test_the_default_mock_agents_review_a_diff_with_no_config_and_no_login(tmp_path: Path):
    done = freemad("review", "--diff", str(DIFF), cwd=tmp_path, home=tmp_path)
    out = done.stdout
    assert out.startswith("<!-- freemad:review -->\n### FREE-MAD review")
    assert "**2 finding(s)** survived a debate of 3 agent(s) over 2 round(s)" in out
    assert "| mock-recursive | 1 | 1 | yes |" in out  # its stance: it took up a peer's review
    assert "| `app/service.py:6` | minor | 7.50 | mock-recursive | no |" in out
    assert "```suggestion\n    except Exception:\n```" in out


def test_json_output_and_rounds(tmp_path: Path):
    done = freemad(
        "review",
        "--diff",
        "-",
        "--rounds",
        "0",
        "--json",
        cwd=tmp_path,
        home=tmp_path,
        stdin=DIFF.read_text(),
    )
    review = json.loads(done.stdout)
    assert review["event"] == "COMMENT"
    # With no critique round nobody withdraws: all three of round 0's findings survive.
    assert sorted(f["line"] for f in review["findings"]) == [5, 6, 9]
    assert {f["placed"] for f in review["findings"]} == {"inline"}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "the diff is empty"),
        (
            "diff --git a/x.png b/x.png\nindex 1..2 100644\nBinary files a/x.png and b/x.png differ\n",
            "only binary files",
        ),
        ("not a diff at all\n", "not a unified diff"),
    ],
)
def test_a_diff_with_nothing_to_review_is_one_line_and_exit_2(tmp_path: Path, text, says):
    (tmp_path / "in.diff").write_text(text)
    done = freemad("review", "--diff", "in.diff", cwd=tmp_path, home=tmp_path, code=2)
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("freemad: error: ") and says in line


def test_a_missing_or_non_utf8_diff_is_a_clear_error(tmp_path: Path):
    done = freemad("review", "--diff", "nope.diff", cwd=tmp_path, home=tmp_path, code=2)
    assert "cannot read the diff 'nope.diff'" in done.stderr
    (tmp_path / "bad.diff").write_bytes(b"\xff\xfe--- a/x\n")
    done = freemad("review", "--diff", "bad.diff", cwd=tmp_path, home=tmp_path, code=2)
    assert "not UTF-8 text" in done.stderr


def test_what_is_printed_is_redacted_with_the_configs_patterns(tmp_path: Path):
    import yaml

    mock = Path(__file__).parents[2] / "freemad" / "config" / "mock_agents.yaml"
    data = yaml.safe_load(mock.read_text())
    data["security"]["redact_patterns"] = ["Unfinished work"]
    data["output"] = {"save_transcript": False}
    (tmp_path / "freemad.yaml").write_text(yaml.safe_dump(data))
    done = freemad("review", "--diff", str(DIFF), cwd=tmp_path, home=tmp_path)
    assert "Unfinished work" not in done.stdout and "[REDACTED]" in done.stdout
