"""A code task's work kept on origin under a hidden ref, and published as a branch and a pull
request only after approval: real git (a bare repository as origin, clones as job workspaces),
the real task runtime with the task mock, and a recording forge or the loopback stand-in."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from freemad.config import FreemadConfig
from freemad.errors import UsageError
from freemad.github.forge import RecordingForge
from freemad.github.publish import publish_task, stash_task_branch
from freemad.github.pulls import BranchOnly
from freemad.github.pygithub_forge import PyGithubForge
from freemad.github.standin import StandIn
from freemad.store import SqliteStore
from freemad.tasks.task_runner import TaskRunner
from freemad.wiring import ADAPTERS
from tests.conftest import make_config

PY = sys.executable
REPO = "octo/widgets"
TOKEN = "ghp_FreemadTestToken0123456789abcdefWXYZ"
GOAL = "Add calc.add for @octocat <b>now</b>"


def git(where: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def mock(*args: str) -> str:
    return shlex.join(["freemad-task-mock", *args])


@dataclass
class Job:
    root: Path
    bare: Path
    config: FreemadConfig
    store: SqliteStore

    def clone(self, name: str) -> Path:
        where = self.root / name
        command = ["git", "clone", "-q", "--single-branch", "--no-tags", str(self.bare), str(where)]
        subprocess.run(command, check=True)
        return where

    def refs(self, prefix: str) -> dict[str, str]:
        out = git(self.bare, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
        return dict(line.split() for line in out.splitlines())

    def code_task(self, workspace: Path) -> str:
        runner = TaskRunner(self.config, self.store, adapters=ADAPTERS)
        state = runner.start("code", GOAL, workspace)
        assert state.status.value == "completed", state.question
        return state.task_id


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    (seed / "README.md").write_text("# calc\n")
    git(seed, "add", "-A")
    git(seed, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(seed, "push", "-q", str(bare), "main")
    coder = mock("--write", "src/calc.py=def add(a, b): return a + b")
    agents = [
        {"id": "planner", "cli_command": mock("--approve"), "roles": ["planner", "researcher"]},
        {"id": "reviewer", "cli_command": mock("--approve"), "roles": ["reviewer"]},
        {"id": "coder", "cli_command": coder, "roles": ["implementer"]},
    ]
    config = make_config(  # only freemad-task-mock allowed; bubblewrap where it runs
        agents,
        task={
            "store_path": str(tmp_path / "state" / "tasks.db"),
            "artifacts_dir": str(tmp_path / "state" / "artifacts"),
            "worktrees_dir": str(tmp_path / "worktrees"),
            "tool_policy": {"allow_workspace_write": True, "allowed_write_roots": ["src"]},
        },
    )
    store = SqliteStore(config.task.store_path, config.task.artifacts_dir)
    yield Job(tmp_path, bare, config, store)
    store.close()


def test_a_stashed_task_is_on_origin_under_a_hidden_ref_and_no_branch(job: Job) -> None:
    workspace = job.clone("job1")
    task_id = job.code_task(workspace)
    tip = git(workspace, "rev-parse", f"freemad/task/{task_id}")

    assert stash_task_branch(workspace, task_id) == tip
    assert stash_task_branch(workspace, task_id) == tip  # again: nothing new, no error

    assert job.refs("refs/freemad/") == {f"refs/freemad/tasks/{task_id}": tip}
    assert list(job.refs("refs/heads/")) == ["refs/heads/main"]
    assert git(job.bare, "show", f"{tip}:src/calc.py") == "def add(a, b): return a + b"
    assert stash_task_branch(workspace, "0123456789abcdef") is None  # no such task branch


def test_publishing_waits_for_approval_then_opens_one_pr(job: Job) -> None:
    workspace = job.clone("job1")
    task_id = job.code_task(workspace)
    tip = stash_task_branch(workspace, task_id)
    forge = RecordingForge()
    later = job.clone("job2")  # the approving comment runs in a fresh job

    with pytest.raises(UsageError, match="not approved for publishing") as caught:
        publish_task(job.config, job.store, forge, REPO, task_id, later, base="main")
    assert "/freemad approve publish" in caught.value.one_line()
    assert forge.calls == [] and list(job.refs("refs/heads/")) == ["refs/heads/main"]

    TaskRunner(job.config, job.store).approve(task_id, "publish")
    pull = publish_task(job.config, job.store, forge, REPO, task_id, later, base="main", issue=4)

    branch = f"freemad/task/{task_id}"
    assert job.refs(f"refs/heads/{branch}") == {f"refs/heads/{branch}": tip}
    [opened] = forge.calls_to("open_pull_request")
    assert opened.args["head"] == branch and opened.args["base"] == "main"
    assert opened.args["draft"] is False
    assert opened.args["title"] == f"FREE-MAD: {GOAL}"
    body = opened.args["body"]
    assert task_id in body and "on #4" in body and "`src/calc.py`" in body
    assert "@octocat" not in body and "<b>" not in body  # untrusted text is escaped
    assert "@&#8203;octocat" in body and "&lt;b&gt;" in body

    again = publish_task(job.config, job.store, forge, REPO, task_id, later, base="main")
    assert again == pull and len(forge.calls_to("open_pull_request")) == 1


def test_where_actions_may_not_open_prs_the_branch_is_pushed_and_linked(job: Job) -> None:
    workspace = job.clone("job1")
    task_id = job.code_task(workspace)
    tip = stash_task_branch(workspace, task_id)
    TaskRunner(job.config, job.store).approve(task_id, "publish")
    forge = RecordingForge(actions_may_open_pulls=False)
    later = job.clone("job2")

    result = publish_task(job.config, job.store, forge, REPO, task_id, later, base="main")

    branch = f"freemad/task/{task_id}"
    assert isinstance(result, BranchOnly)
    assert result.compare_url == f"https://github.com/{REPO}/compare/main...{branch}?expand=1"
    assert "Workflow permissions" in result.reason
    assert job.refs(f"refs/heads/{branch}") == {f"refs/heads/{branch}": tip}  # pushed all the same


def test_a_task_that_did_not_complete_or_plan_cannot_be_published(job: Job) -> None:
    workspace = job.clone("job1")
    runner = TaskRunner(job.config, job.store, adapters=ADAPTERS)
    state = runner.start("plan", "Plan calc.add", workspace)
    with pytest.raises(UsageError, match="only a completed code task"):
        publish_task(
            job.config, job.store, RecordingForge(), REPO, state.task_id, workspace, base="main"
        )
    with pytest.raises(UsageError, match="not a task id"):
        stash_task_branch(workspace, "--upload-pack=evil")


def test_publishing_through_pygithub_against_the_stand_in(job: Job) -> None:
    workspace = job.clone("job1")
    task_id = job.code_task(workspace)
    stash_task_branch(workspace, task_id)
    TaskRunner(job.config, job.store).approve(task_id, "publish")

    with (
        StandIn(permissions={"alice": "admin"}, token=TOKEN) as api,
        PyGithubForge(TOKEN, base_url=api.base_url, throttle=False) as forge,
    ):
        first = publish_task(job.config, job.store, forge, REPO, task_id, workspace, base="main")
        second = publish_task(job.config, job.store, forge, REPO, task_id, workspace, base="main")

    assert first == second
    [(where, pull)] = list(api.pulls.items())
    assert where == (REPO, first.number)
    assert pull["head"]["ref"] == f"freemad/task/{task_id}" and pull["base"]["ref"] == "main"
    assert pull["draft"] is False and pull["title"].startswith("FREE-MAD: Add calc.add")
    posts = [c for c in api.calls if c.method == "POST" and c.path.endswith("/pulls")]
    assert len(posts) == 1
