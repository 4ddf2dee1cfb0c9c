"""A code task's branch and worktree on real git repositories: the user's checkout is never touched."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from freemad.errors import FreemadError, UsageError
from freemad.workspace.gitspace import TaskWorkspace
from tests.gittools import add_user_changes, git, isolated_git, snapshot  # noqa: F401 - isolated_git is autouse


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with two commits on main and uncommitted changes of every kind."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("print('v1')\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "mod.py").write_text("X = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    (root / "README.md").write_text("readme\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "second")
    (root / "app.py").write_text("print('user edit, not committed')\n")
    add_user_changes(root)
    return root


@pytest.fixture
def worktrees(tmp_path: Path) -> Path:
    return tmp_path / "worktrees"


def registered(root: Path) -> dict[str, str]:
    """Registered worktree path -> its branch (or 'detached')."""
    found: dict[str, str] = {}
    path = ""
    for line in git(root, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = str(Path(line.split(" ", 1)[1]).resolve())
            found[path] = "detached"
        elif line.startswith("branch "):
            found[path] = line.split(" ", 1)[1]
    return found


def assert_healthy(ws: TaskWorkspace, root: Path) -> None:
    assert registered(root)[str(ws.worktree)] == f"refs/heads/{ws.branch}"
    assert not (root / ".git" / "worktrees" / ws.worktree.name / "locked").exists()
    assert git(ws.worktree, "status", "--porcelain") == ""
    assert (ws.worktree / "README.md").read_text() == "readme\n"


# --- where a task works -------------------------------------------------------------------------


def test_outside_a_repository_there_is_no_task_workspace(tmp_path, worktrees):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert TaskWorkspace.open(plain, "t1", worktrees) is None
    assert not worktrees.exists()


def test_the_worktrees_folder_must_be_outside_the_repository(repo):
    with pytest.raises(ValueError, match="outside"):
        TaskWorkspace.open(repo, "t1", repo / "wt")
    with pytest.raises(ValueError, match="outside"):
        TaskWorkspace.open(repo, "t1", repo / ".git" / "wt")


@pytest.mark.parametrize("task_id", ["", "../x", "a/b", "-x", "a..b", "x.lock", "a b"])
def test_a_task_id_that_cannot_name_a_branch_is_refused(repo, worktrees, task_id):
    with pytest.raises(ValueError):
        TaskWorkspace.open(repo, task_id, worktrees)


def test_a_repository_without_a_commit_gets_a_clear_error(tmp_path, worktrees):
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with pytest.raises(UsageError, match="no commit yet"):
        TaskWorkspace.open(empty, "t1", worktrees)


def test_redirecting_git_variables_are_refused(repo, worktrees, monkeypatch):
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    with pytest.raises(UsageError, match="GIT_INDEX_FILE"):
        TaskWorkspace.open(repo, "t1", worktrees)


# --- the whole life of a task's workspace -------------------------------------------------------


def test_a_task_works_on_its_own_branch_and_leaves_the_checkout_as_it_was(repo, worktrees):
    before = snapshot(repo)
    ws = TaskWorkspace.open(repo, "t1", worktrees)
    assert ws is not None
    assert ws.branch == "freemad/task/t1"
    assert ws.path == ws.worktree == worktrees.resolve() / "t1"
    assert ws.repo_root == repo.resolve()
    assert ws.base_commit == before["head"].strip()  # type: ignore[union-attr]
    assert_healthy(ws, repo)
    # The task starts from the last commit: the user's uncommitted work is not in it.
    assert (ws.path / "app.py").read_text() == "print('v1')\n"
    assert not (ws.path / "staged.txt").exists()
    assert not (ws.path / "untracked.txt").exists()

    (ws.path / "app.py").write_text("print('v2')\n")
    (ws.path / "pkg" / "new.py").write_text("Y = 2\n")
    (ws.path / "README.md").unlink()
    sha = ws.commit("item-1: make v2")
    assert sha is not None
    assert ws.commit("nothing new") is None
    assert git(repo, "rev-parse", "refs/heads/freemad/task/t1").strip() == sha
    assert git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s", sha).strip() == (
        "FREE-MAD <freemad@freemad.invalid>|FREE-MAD <freemad@freemad.invalid>|item-1: make v2"
    )
    diff = ws.diff()
    assert "+print('v2')" in diff
    assert "b/pkg/new.py" in diff
    assert "deleted file mode" in diff
    assert diff.endswith("\n")

    again = TaskWorkspace.open(repo, "t1", worktrees)
    assert again == ws
    ws.remove()
    assert not ws.worktree.exists()
    assert str(ws.worktree) not in registered(repo)
    assert git(repo, "rev-parse", "refs/heads/freemad/task/t1").strip() == sha
    ws.remove()  # removing twice is harmless
    assert snapshot(repo) == before


def test_commits_ignore_the_users_identity_signing_and_hooks(repo, worktrees):
    git(repo, "config", "user.useConfigOnly", "true")
    git(repo, "config", "commit.gpgsign", "true")
    git(repo, "config", "gpg.program", "false")
    for hook in ("pre-commit", "commit-msg", "post-commit"):
        path = repo / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\ntouch '{repo}/hook-{hook}-ran'\nexit 1\n")
        path.chmod(0o755)
    before = snapshot(repo)
    ws = TaskWorkspace.open(repo, "t2", worktrees)
    assert ws is not None
    (ws.path / "app.py").write_text("print('signed? no')\n")
    sha = ws.commit("no signature, no hooks")
    assert sha is not None
    assert git(repo, "cat-file", "commit", sha).count("gpgsig") == 0
    assert not list(repo.glob("hook-*"))
    assert snapshot(repo) == before


def test_a_workspace_root_in_a_subfolder_maps_into_the_worktree(repo, worktrees):
    ws = TaskWorkspace.open(repo / "pkg", "t3", worktrees)
    assert ws is not None
    assert ws.path == ws.worktree / "pkg"
    assert (ws.path / "mod.py").read_text() == "X = 1\n"


def test_separate_tasks_get_separate_branches_and_worktrees(repo, worktrees):
    one = TaskWorkspace.open(repo, "one", worktrees)
    two = TaskWorkspace.open(repo, "two", worktrees)
    assert one is not None and two is not None
    (one.path / "a.txt").write_text("a\n")
    assert one.commit("a") is not None
    assert two.commit("nothing") is None
    assert not (two.path / "a.txt").exists()


# --- recovery after a crash at any point --------------------------------------------------------


def _open(repo: Path, worktrees: Path, task_id: str = "t1") -> TaskWorkspace:
    ws = TaskWorkspace.open(repo, task_id, worktrees)
    assert ws is not None
    return ws


def test_a_branch_whose_worktree_folder_vanished_gets_a_new_worktree(repo, worktrees):
    before = snapshot(repo)
    ws = _open(repo, worktrees)
    (ws.path / "done.txt").write_text("committed work\n")
    sha = ws.commit("work")
    shutil.rmtree(ws.worktree)  # the folder is gone, the registration stays behind
    again = _open(repo, worktrees)
    assert again == ws
    assert_healthy(again, repo)
    assert (again.path / "done.txt").read_text() == "committed work\n"
    assert git(again.worktree, "rev-parse", "HEAD").strip() == sha
    assert snapshot(repo) == before


def test_a_worktree_folder_that_is_no_longer_registered_is_rebuilt(repo, worktrees):
    before = snapshot(repo)
    ws = _open(repo, worktrees)
    shutil.rmtree(repo / ".git" / "worktrees" / "t1")
    assert str(ws.worktree) not in registered(repo)
    again = _open(repo, worktrees)
    assert_healthy(again, repo)
    assert snapshot(repo) == before


def test_a_creation_cut_short_is_redone(repo, worktrees):
    """`worktree add` killed midway leaves our lock and a partial checkout."""
    before = snapshot(repo)
    target = worktrees / "t1"
    reason = "freemad: creating the worktree of task t1"
    git(repo, "branch", "freemad/task/t1")
    git(repo, "update-ref", "refs/freemad/base/t1", "HEAD")
    git(repo, "worktree", "add", "--lock", "--reason", reason, str(target), "freemad/task/t1")
    (target / "README.md").unlink()  # the checkout never got this far
    ws = _open(repo, worktrees)
    assert_healthy(ws, repo)
    assert snapshot(repo) == before


def test_an_unfinished_registration_without_a_gitdir_is_cleared(repo, worktrees):
    """Killed right after git made the admin folder and its lock, before anything else."""
    before = snapshot(repo)
    admin = repo / ".git" / "worktrees" / "t1"
    admin.mkdir(parents=True)
    (admin / "locked").write_text("freemad: creating the worktree of task t1\n")
    (worktrees / "t1").mkdir(parents=True)
    (worktrees / "t1" / ".git").write_text(f"gitdir: {admin}\n")
    ws = _open(repo, worktrees)
    assert_healthy(ws, repo)
    assert [p.name for p in (repo / ".git" / "worktrees").iterdir()] == ["t1"]
    assert snapshot(repo) == before


def test_a_registration_killed_before_its_lock_reason_was_written_is_cleared(repo, worktrees):
    """git truncates `locked`, then writes the reason: a kill in between leaves it empty."""
    before = snapshot(repo)
    (repo / ".git" / "worktrees" / "t1").mkdir(parents=True)
    (repo / ".git" / "worktrees" / "t1" / "locked").write_text("")
    ws = _open(repo, worktrees)
    assert_healthy(ws, repo)
    assert [p.name for p in (repo / ".git" / "worktrees").iterdir()] == ["t1"]
    assert snapshot(repo) == before


def test_a_users_worktree_locked_without_a_reason_is_kept(repo, worktrees, tmp_path):
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "t1"), "HEAD")
    git(repo, "worktree", "lock", str(tmp_path / "t1"))
    assert (repo / ".git" / "worktrees" / "t1" / "locked").read_text() == ""
    ws = _open(repo, worktrees)  # its registration is then t11: t1 is the user's
    assert registered(repo)[str(ws.worktree)] == "refs/heads/freemad/task/t1"
    assert registered(repo)[str((tmp_path / "t1").resolve())] == "detached"
    assert (repo / ".git" / "worktrees" / "t1" / "locked").read_text() == ""


def test_a_base_without_its_branch_makes_the_branch_at_the_base(repo, worktrees):
    """Killed between recording the base and creating the branch, while the user moved on."""
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-ref", "refs/freemad/base/t1", base)
    git(repo, "commit", "-q", "-m", "the user commits their staged file")
    ws = _open(repo, worktrees)
    assert ws.base_commit == base
    assert git(repo, "rev-parse", "refs/heads/freemad/task/t1").strip() == base


def test_a_branch_without_a_recorded_base_uses_the_merge_base(repo, worktrees):
    start = git(repo, "rev-parse", "HEAD~1").strip()
    git(repo, "branch", "freemad/task/t1", start)
    ws = _open(repo, worktrees)
    assert ws.base_commit == start
    assert git(repo, "rev-parse", "refs/freemad/base/t1").strip() == start


def test_locks_left_by_a_killed_commit_are_cleared(repo, worktrees):
    ws = _open(repo, worktrees)
    (repo / ".git" / "worktrees" / "t1" / "index.lock").write_text("")
    (repo / ".git" / "worktrees" / "t1" / "HEAD.lock").write_text("")
    (repo / ".git" / "refs" / "heads" / "freemad" / "task" / "t1.lock").write_text("")
    (ws.path / "after-crash.txt").write_text("x\n")
    again = _open(repo, worktrees)
    assert again.commit("after the crash") is not None


def test_uncommitted_work_in_a_healthy_worktree_survives_reopening(repo, worktrees):
    ws = _open(repo, worktrees)
    (ws.path / "in-progress.txt").write_text("not committed yet\n")
    again = _open(repo, worktrees)
    assert (again.path / "in-progress.txt").read_text() == "not committed yet\n"


def test_a_foreign_folder_in_the_way_is_never_deleted(repo, worktrees):
    (worktrees / "t1").mkdir(parents=True)
    (worktrees / "t1" / "precious.txt").write_text("mine\n")
    with pytest.raises(FreemadError, match="not a task worktree"):
        TaskWorkspace.open(repo, "t1", worktrees)
    assert (worktrees / "t1" / "precious.txt").read_text() == "mine\n"


_CHILD = """
import sys
from pathlib import Path
from freemad.workspace.gitspace import TaskWorkspace
repo, worktrees = Path(sys.argv[1]), Path(sys.argv[2])
print("ready", flush=True)
ws = TaskWorkspace.open(repo, "killed", worktrees)
(ws.path / "work.txt").write_text("the work\\n")
ws.commit("the work")
print("done", flush=True)
"""


def test_kill_9_at_any_point_then_open_again_recovers(repo, worktrees):
    before = snapshot(repo)
    for step in range(20):  # kills spread from before the first git call to after the commit
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(repo), str(worktrees)],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        time.sleep(step * 0.004)
        os.killpg(child.pid, signal.SIGKILL)  # the runner and its git processes, all at once
        child.wait()
        child.stdout.close()
        ws = _open(repo, worktrees, "killed")
        assert registered(repo)[str(ws.worktree)] == "refs/heads/freemad/task/killed"
        # Nothing a kill left in .git/worktrees survives: the task's registration is the only one.
        assert [p.name for p in (repo / ".git" / "worktrees").iterdir()] == ["killed"]
        (ws.path / "work.txt").write_text("the work\n")
        ws.commit("the work")
        assert git(ws.worktree, "status", "--porcelain") == ""
        assert git(repo, "show", "freemad/task/killed:work.txt") == "the work\n"
        assert snapshot(repo) == before
        ws.remove()
        assert not (repo / ".git" / "worktrees").exists()
        git(repo, "branch", "-D", "freemad/task/killed")
        git(repo, "update-ref", "-d", "refs/freemad/base/killed")
