"""`freemad github simulate`: the whole flow on a laptop, against the loopback stand-in of GitHub."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import MOCK_AGENT
from tests.github.payloads import issue_comment, labeled_issue, review_comment

FREEMAD = str(Path(sys.executable).parent / "freemad")


def simulate(
    tmp_path: Path, event: str, payload: Any, *extra: str
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "event.json"
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return subprocess.run(
        [FREEMAD, "github", "simulate", "--event", event, "--payload", str(path), *extra],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_labelled_issue_shows_the_comment_it_would_post(tmp_path: Path) -> None:
    done = simulate(tmp_path, "issues", labeled_issue("freemad:debate"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "GET /repos/octo-org/octo-repo/collaborators/alice/permission -> 200"
    assert "POST /repos/octo-org/octo-repo/issues/7/comments -> 201" in lines
    assert "**Winner:**" in done.stdout
    outcome = json.loads(done.stdout[done.stdout.rindex("\n{") :])
    assert outcome["action"] == "debate" and outcome["status"] == "completed"


def test_a_reader_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    comment = issue_comment("/freemad plan Design the cache", author="bob")
    done = simulate(tmp_path, "issue_comment", comment, "--permission", "read")
    assert done.returncode == 0, done.stderr
    assert "@bob Only people with write access" in done.stdout
    assert json.loads(done.stdout[done.stdout.rindex("\n{") :])["action"] == "refused"


def test_help_is_answered_and_a_broken_payload_is_one_line(tmp_path: Path) -> None:
    done = simulate(tmp_path, "issue_comment", issue_comment("/freemad help"))
    assert done.returncode == 0 and "/freemad answer" in done.stdout
    broken = simulate(tmp_path, "issues", "{not json")
    assert broken.returncode == 2
    assert (
        broken.stderr.startswith("freemad: error: issues payload")
        and broken.stderr.count("\n") == 1
    )


def test_a_command_on_a_pull_requests_diff_is_answered_in_its_review_thread(tmp_path: Path) -> None:
    payload = review_comment("/freemad debate rounds=0 Pick one")
    done = simulate(tmp_path, "pull_request_review_comment", payload)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "POST /repos/octo-org/octo-repo/pulls/comments/2002/reactions -> 201" in lines
    assert "POST /repos/octo-org/octo-repo/pulls/9/comments/2002/replies -> 201" in lines
    assert not any("/issues/9/comments" in line for line in lines)
    outcome = json.loads(done.stdout[done.stdout.rindex("\n{") :])
    assert outcome["action"] == "debate" and outcome["status"] == "completed"


def test_a_plan_without_a_config_runs_on_the_built_in_agents(tmp_path: Path) -> None:
    """The docs call no config a good first run: the built-in mock agents take the task roles."""
    done = simulate(tmp_path, "issue_comment", issue_comment("/freemad plan Design the cache"))
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout[done.stdout.rindex("\n{") :])
    assert outcome["action"] == "task" and outcome["run_id"]
    assert outcome["status"] == "waiting_for_human"  # the canned reviewer asks you a question
    assert "FREE-MAD plan task" in done.stdout


def test_the_run_page_is_linked_when_pages_url_is_set(tmp_path: Path) -> None:
    config = {
        "agents": [
            {"id": "a", "cli_command": f"{MOCK_AGENT} --persona iterative", "cli_mode_arg": True},
            {"id": "b", "cli_command": f"{MOCK_AGENT} --persona memoized", "cli_mode_arg": True},
        ],
        "security": {"cli_allowed_commands": [MOCK_AGENT]},
        "output": {"save_transcript": False},
        "github": {"pages_url": "https://octo-org.github.io/octo-repo/"},
    }
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(config))
    payload = issue_comment("/freemad debate rounds=0 Pick one")
    done = simulate(tmp_path, "issue_comment", payload, "--config", "cfg.yaml")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout[done.stdout.rindex("\n{") :])["run_id"]
    page = f"https://octo-org.github.io/octo-repo/runs/{run_id}.html"
    assert f"[The run's page]({page})" in done.stdout
