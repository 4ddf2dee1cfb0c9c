"""An evolve run's lineage after crashes: locks and leftovers of kill -9, creations cut short,
foreign folders, orphan worktrees."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from freemad.errors import FreemadError
from freemad.workspace.lineage import Lineage, clean_orphans, resolve_seed
from tests.gittools import git, isolated_git, snapshot
from tests.workspace.lineage_repos import RUN, lineage, remove, repo, worktrees

__all__ = ["isolated_git", "lineage", "repo", "worktrees"]


def test_locks_and_leftovers_of_a_kill_are_recovered(lineage, repo, worktrees):
    admin = repo / ".git" / "worktrees" / RUN
    (admin / "index.lock").write_text("")
    (admin / "HEAD.lock").write_text("")
    (repo / ".git" / "refs" / "heads" / "freemad" / "evolve" / f"{RUN}.lock").write_text("")
    again = Lineage.open(repo, RUN, lineage.seed, worktrees)
    again.prepare(again.seed)
    (admin / "index.lock").write_text("")  # a kill between two steps of an iteration
    again.prepare(again.seed)
    (again.worktree / "app.py").write_text("v1\n")
    v1 = again.commit(again.stage(), again.seed, "v1")
    again.advance(again.seed, v1, 1)
    remove(again.worktree)  # the folder is gone, its registration is not
    assert admin.exists()
    again = Lineage.open(repo, RUN, lineage.seed, worktrees)
    again.prepare(v1)
    assert (again.worktree / "app.py").read_text() == "v1\n"
    assert again.tip() == v1  # the branch was not moved back to the seed


def test_a_creation_cut_short_is_redone(repo, worktrees):
    seed = resolve_seed(repo, "HEAD")
    target = worktrees / RUN
    reason = f"freemad: creating the worktree of evolve run {RUN}"
    git(repo, "worktree", "add", "--detach", "--lock", "--reason", reason, str(target), seed)
    (target / "app.py").unlink()  # the checkout was not finished
    lineage = Lineage.open(repo, RUN, seed, worktrees)
    lineage.prepare(seed)
    assert not (repo / ".git" / "worktrees" / RUN / "locked").exists()
    assert git(lineage.worktree, "status", "--porcelain") == ""


def test_a_foreign_folder_in_the_way_is_never_deleted(repo, worktrees):
    (worktrees / RUN).mkdir(parents=True)
    (worktrees / RUN / "precious.txt").write_text("mine\n")
    with pytest.raises(FreemadError, match="not a worktree of ours"):
        Lineage.open(repo, RUN, resolve_seed(repo, "HEAD"), worktrees)
    assert (worktrees / RUN / "precious.txt").read_text() == "mine\n"


def test_the_worktrees_folder_must_be_outside_the_repository(repo):
    with pytest.raises(ValueError, match="must be outside"):
        Lineage.open(repo, RUN, resolve_seed(repo, "HEAD"), repo / "wt")


def test_remove_and_clean_orphans(lineage, repo, worktrees):
    other_run = "0f0f0f0f0f0f0f0f"
    other = Lineage.open(repo, other_run, lineage.seed, worktrees)
    assert clean_orphans(repo, worktrees, keep={RUN}) == [other.worktree]
    assert not other.worktree.exists() and lineage.worktree.is_dir()
    assert other_run not in git(repo, "worktree", "list")
    assert git(repo, "rev-parse", other.branch).strip() == lineage.seed  # the branch stays
    lineage.remove()
    lineage.remove()
    assert not lineage.worktree.exists() and not (repo / ".git" / "worktrees").exists()
    assert git(repo, "rev-parse", lineage.branch).strip() == lineage.seed


def test_candidate_worktrees_live_and_go_with_their_run(lineage, repo, worktrees):
    """A generation's candidate k works in `<run>.c<k>` beside the run's own worktree: the same
    branch, its own files, kept while its run is busy and cleaned up as an orphan after."""
    assert lineage.candidate(0) is lineage
    second = lineage.candidate(2)
    assert second.worktree == worktrees.resolve() / f"{RUN}.c2"
    assert second.branch == lineage.branch and second.seed == lineage.seed
    (second.worktree / "app.py").write_text("candidate 2\n")
    tree = second.stage()
    assert second.changed_paths(tree, lineage.seed) == ["app.py"]
    assert (lineage.worktree / "app.py").read_text() != "candidate 2\n"
    assert lineage.candidate(2).worktree == second.worktree  # recovered, not made twice
    assert clean_orphans(repo, worktrees, keep={RUN}) == []
    assert second.worktree.is_dir()
    assert sorted(clean_orphans(repo, worktrees, keep=set())) == sorted(
        [lineage.worktree, second.worktree]
    )
    with pytest.raises(ValueError, match="negative"):
        lineage.candidate(-1)


_CHILD = """
import sys
from pathlib import Path
from freemad.workspace.lineage import Lineage, resolve_seed
repo, worktrees, version = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
seed = resolve_seed(repo, "HEAD")
print("ready", flush=True)
lineage = Lineage.open(repo, "{run}", seed, worktrees)
tip = lineage.tip()
lineage.prepare(tip)
(lineage.worktree / "app.py").write_text(f"v{{version}}\\n")
lineage.restore_protected(["tests"])
tree = lineage.stage()
lineage.advance(tip, lineage.commit(tree, tip, f"v{{version}}"), version)
print("done", flush=True)
"""


def test_kill_9_at_any_point_then_open_and_prepare_recover(repo, worktrees):
    before = snapshot(repo)
    seed = resolve_seed(repo, "HEAD")
    for step in range(16):  # kills spread from before the first git call to after the tag
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _CHILD.format(run=RUN),
                str(repo),
                str(worktrees),
                str(step + 1),
            ],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        time.sleep(step * 0.012)
        os.killpg(child.pid, signal.SIGKILL)  # the runner and its git processes, all at once
        child.wait()
        child.stdout.close()
        lineage = Lineage.open(repo, RUN, seed, worktrees)
        assert [p.name for p in (repo / ".git" / "worktrees").iterdir()] == [RUN]
        tip = lineage.tip()
        lineage.prepare(tip)
        assert git(lineage.worktree, "status", "--porcelain", "--ignored") == ""
        (lineage.worktree / "app.py").write_text(f"again {step}\n")
        commit = lineage.commit(lineage.stage(), tip, "again")
        lineage.advance(tip, commit, 100 + step)
        assert snapshot(repo) == before
        if step % 2:
            lineage.remove()  # the next kill may then land in the worktree's creation
