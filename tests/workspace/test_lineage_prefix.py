"""A run's branch under its own prefix (evolve.run_branch_prefix): made, recovered, guarded, and
its leftover worktrees known as a run's, not a user's."""

from __future__ import annotations

from freemad.workspace.guard import check_refs
from freemad.workspace.lineage import Lineage, clean_orphans
from freemad.workspace.repository_port import RunRefs
from tests.gittools import git, isolated_git
from tests.workspace.lineage_repos import RUN, lineage, repo, worktrees

__all__ = ["isolated_git", "lineage", "repo", "worktrees"]

OTHER = "0f0f0f0f0f0f0f0f"


def test_a_prefixed_branch_is_made_recovered_and_guarded(lineage, repo, worktrees):
    mine = Lineage.open(repo, OTHER, lineage.seed, worktrees, f"team/runs/{OTHER}")
    assert mine.branch == f"team/runs/{OTHER}"
    assert git(repo, "rev-parse", f"team/runs/{OTHER}").strip() == lineage.seed
    assert "freemad/evolve/" + OTHER not in git(repo, "branch", "--list", "--all")
    (mine.worktree / "app.py").write_text("v1\n")
    v1 = mine.commit(mine.stage(), mine.seed, "v1")
    mine.advance(mine.seed, v1, 1)
    again = Lineage.open(repo, OTHER, lineage.seed, worktrees, f"team/runs/{OTHER}")
    assert again.tip() == v1

    refs = RunRefs(OTHER, lineage.seed, {0: lineage.seed, 1: v1}, None, f"team/runs/{OTHER}")
    assert check_refs(repo, refs, repair=True) == []
    git(repo, "update-ref", f"refs/heads/team/runs/{OTHER}", lineage.seed)
    [found] = check_refs(repo, refs, repair=True)
    assert found.what == f"branch team/runs/{OTHER}"
    assert git(repo, "rev-parse", f"team/runs/{OTHER}").strip() == v1


def test_an_orphan_on_a_prefixed_branch_is_cleaned_only_under_its_prefix(lineage, repo, worktrees):
    """A worktree left on a branch is a run's only under a run prefix: anything else under the
    worktrees folder on another branch could be a person's, and stays."""
    folder = worktrees.resolve() / OTHER
    git(repo, "worktree", "add", "-q", "-b", f"team/runs/{OTHER}", str(folder), lineage.seed)
    assert clean_orphans(repo, worktrees, keep={RUN}) == []
    assert folder.is_dir()
    assert clean_orphans(repo, worktrees, keep={RUN}, prefixes=("freemad/evolve", "team/runs")) == [
        folder
    ]
    assert not folder.exists() and lineage.worktree.is_dir()
