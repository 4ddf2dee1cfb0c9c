"""FREEMAD_RUN_STORE=branch: the bot's jobs keep runs on the repository's state branch, so a
command on an issue can be worked by any host. Two "hosts" (two state folders, nothing shared
but the git remote and GitHub) take turns on one task: one starts it, the other answers it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from freemad.bot.job import Job
from freemad.bot.ports import Delivery
from freemad.bot.run_store import git_auth_env
from freemad.bot.settings import BotSettings
from freemad.bot.stores import delivery_log
from freemad.errors import ConfigError
from freemad.github.standin import StandIn
from tests.github.payloads import REPO, issue_comment, labeled_issue
from tests.gittools import isolated_git  # noqa: F401  (autouse)

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "autonomous_smoke.yaml"
TOKEN = "ghs_state_branch_token"


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def host(tmp_path: Path, name: str, api: StandIn, remotes: Path, store: str) -> BotSettings:
    return BotSettings.from_env(
        {
            "FREEMAD_WEBHOOK_SECRET": "s",
            "FREEMAD_GITHUB_TOKEN": TOKEN,
            "FREEMAD_GITHUB_API_URL": api.base_url,
            "FREEMAD_STATE_DIR": str(tmp_path / name),
            "FREEMAD_CONFIG": str(CONFIG),
            "FREEMAD_RUN_STORE": store,
            "FREEMAD_GIT_URL": f"{remotes}/{{repo}}.git",
        }
    )


def work(settings: BotSettings, delivery_id: str, event: str, payload: dict[str, Any]) -> str:
    body = json.dumps(payload).encode()
    delivery = Delivery(delivery_id, event, payload.get("action"), 42, REPO, body)
    assert delivery_log(settings).record(delivery)
    return Job(settings).handle(delivery_id)


def state_runs(remote: Path) -> dict[str, dict[str, Any]]:
    listed = git("ls-tree", "-r", "--name-only", "freemad-state", cwd=remote).split()
    return {
        path.split("/")[1]: json.loads(git("show", f"freemad-state:{path}", cwd=remote))
        for path in listed
        if path.endswith("/run.json")
    }


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    path = tmp_path / "remotes" / f"{REPO}.git"
    path.parent.mkdir(parents=True)
    git("init", "-q", "--bare", str(path))
    return path


def test_one_host_starts_a_task_and_another_answers_it(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    with StandIn(token=TOKEN, permissions={"alice": "write"}) as api:
        api.seed(labeled_issue("freemad:plan"))  # the issue exists on GitHub
        first = host(tmp_path, "host-a", api, remote.parent.parent, "branch")
        second = host(tmp_path, "host-b", api, remote.parent.parent, "branch")

        assert work(first, "d-1", "issues", labeled_issue("freemad:plan")) == "done"
        runs = state_runs(remote)
        (task,) = [meta for meta in runs.values() if meta["kind"] == "task"]
        assert task["status"] == "waiting_for_human"
        (link,) = [meta for meta in runs.values() if meta["kind"] == "github_link"]
        assert link["summary"] == {"repo": REPO, "number": 7}  # how the issue finds its task

        answer = issue_comment("/freemad answer Use SQLite.")
        assert work(second, "d-2", "issue_comment", answer) == "done"
        after = state_runs(remote)[task["run_id"]]
        assert after["status"] == "completed"
        # The second host had never seen the task: only the branch could have told it.
        assert not (tmp_path / "host-b" / "runs.db").exists()
        bodies = [c["body"] for c in api.comments.values()]
        assert any("completed" in body for body in bodies), bodies
    # The token went to git in the environment only: nothing on disk holds it.
    for path in (tmp_path / "host-a").rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


def test_without_the_branch_the_second_host_knows_nothing(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The contrast: per-host runs.db, the answer finds no task on the other host."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    with StandIn(token=TOKEN, permissions={"alice": "write"}) as api:
        api.seed(labeled_issue("freemad:plan"))  # the issue exists on GitHub
        first = host(tmp_path, "host-a", api, remote.parent.parent, "local")
        second = host(tmp_path, "host-b", api, remote.parent.parent, "local")
        assert work(first, "d-1", "issues", labeled_issue("freemad:plan")) == "done"
        work(second, "d-2", "issue_comment", issue_comment("/freemad answer Use SQLite."))
        assert git("branch", "--list", cwd=remote) == ""  # nothing pushed
        bodies = [c["body"] for c in api.comments.values()]
        assert not any("completed" in body for body in bodies), bodies


def test_git_gets_the_token_as_a_header_in_its_environment() -> None:
    env = git_auth_env("ghs_abc")
    assert env["GIT_CONFIG_KEY_0"] == "http.extraHeader"
    assert env["GIT_CONFIG_VALUE_0"].startswith("Authorization: Basic ")
    assert env["GIT_TERMINAL_PROMPT"] == "0"


@pytest.mark.parametrize(
    ("api_url", "expected"),
    [
        ("https://api.github.com", "https://github.com/o/r.git"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com/o/r.git"),
    ],
)
def test_the_git_remote_follows_the_api_host(api_url: str, expected: str) -> None:
    settings = BotSettings(
        webhook_secret=cast(Any, "s"), github_token=cast(Any, "t"), github_api_url=api_url
    )
    assert settings.git_remote("o/r") == expected


def test_bad_run_store_settings_are_one_line() -> None:
    base = {"FREEMAD_WEBHOOK_SECRET": "s", "FREEMAD_GITHUB_TOKEN": "t"}
    with pytest.raises(ConfigError, match="FREEMAD_RUN_STORE: expected one of local, branch"):
        BotSettings.from_env({**base, "FREEMAD_RUN_STORE": "s3"})
    with pytest.raises(ConfigError, match=r"needs \{repo\}"):
        BotSettings.from_env({**base, "FREEMAD_GIT_URL": "https://github.com/x.git"})
