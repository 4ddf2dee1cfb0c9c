"""The repository port: what the runtimes ask of git on the user's repositories. A code task's
branch and worktree; an evolve run's seed, lineage (branch, tags, worktree) and the guard on
them. The surfaces hand the runtimes the GitPython adapter (`freemad.workspace.repositories`,
through `freemad.wiring`); the runtimes never import git.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from freemad.core.evolve.git_names import DEFAULT_BRANCH_PREFIX


@dataclass(frozen=True, slots=True)
class Tampering:
    """One ref or file that is not what the store or the snapshot says."""

    what: str
    found: str
    expected: str

    def line(self) -> str:
        return f"{self.what} is {self.found}, expected {self.expected}"


@dataclass(frozen=True, slots=True)
class RunRefs:
    """An evolve run's refs as the store has them: the branch at the last admitted version (at
    `seed` before the baseline is admitted), a tag per admitted version {version: commit}, and
    `pending`, an admission judged but not yet recorded as a version (version, commit)."""

    run_id: str
    seed: str
    admitted: Mapping[int, str]
    pending: tuple[int, str] | None = None
    branch: str = ""  # the run's branch as its start recorded it; "": the default prefix's


class TaskWorktree(Protocol):
    """Where a code task writes: `path` is the workspace root's place inside the task's worktree,
    on the task's own branch."""

    @property
    def path(self) -> Path: ...
    @property
    def branch(self) -> str: ...
    @property
    def git_dir(self) -> Path:
        """The repository's own git folder: hidden from agents and commands."""
        ...

    def commit(self, message: str) -> str | None:
        """Commit everything in the worktree on the task branch; None when nothing changed."""
        ...

    def diff(self) -> str:
        """The task branch against the commit it started from."""
        ...


class RunLineage(Protocol):
    """One evolve run's branch, tags and worktree (outside the repository)."""

    @property
    def worktree(self) -> Path: ...
    @property
    def common(self) -> Path:
        """The repository's git folder, which no sandboxed call may see."""
        ...

    def candidate(self, index: int) -> RunLineage:
        """The lineage seen through candidate `index`'s own worktree (0: this one); created, or
        after a crash recovered, beside it."""
        ...

    def prepare(self, commit: str) -> None:
        """Make the worktree exactly `commit`, whatever the worker or a crash left in it."""
        ...

    def restore_protected(self, paths: Sequence[str]) -> None:
        """Put every protected path back as it is in the seed, or absent when the seed lacks it."""
        ...

    def stage(self) -> str:
        """Stage everything, leave the worktree holding exactly the index; the tree id."""
        ...

    def confine(self, tree: str, base_commit: str, editable: Sequence[str]) -> list[str]:
        """Take every path of `tree` no `editable` glob matches back from `base_commit`; the
        paths taken back."""
        ...

    def protected_ids(self, tree: str, paths: Sequence[str]) -> dict[str, str]:
        """{path: object id of path in `tree`, or "absent"}."""
        ...

    def escaping_symlinks(self) -> list[str]:
        """Symlinks whose target is absolute or resolves outside the worktree."""
        ...

    def changed_paths(self, tree: str, base_commit: str) -> list[str]:
        """Paths that differ between `base_commit` and `tree`."""
        ...

    def diff(self, tree: str, base_commit: str) -> str:
        """The unified diff from `base_commit` to `tree`, cut when long."""
        ...

    def commit(self, tree: str, parent: str, message: str) -> str:
        """A commit of `tree` on `parent`; moves no ref."""
        ...

    def advance(self, expected_tip: str, commit: str, version: int) -> None:
        """Fast-forward the branch from `expected_tip` to `commit` and tag it; safe to repeat."""
        ...

    def remove(self) -> None:
        """Remove the worktree; the branch and tags stay."""
        ...


class GitFolderCheck(Protocol):
    """What in a repository's git folder could make FREE-MAD's own git run code, as it was."""

    def check(self, *, repair: bool) -> list[Tampering]:
        """What changed since; with `repair`, put back as it was."""
        ...


class Repositories(Protocol):
    """Git on the user's repositories, as the task and evolve runtimes need it."""

    def task_worktree(
        self, workspace_root: Path, task_id: str, worktrees_dir: Path
    ) -> TaskWorktree | None:
        """Create, or after a crash recover, a code task's branch and worktree; None when
        `workspace_root` is not in a git repository (the task then works in place)."""
        ...

    def resolve_seed(self, repo_path: Path, seed_ref: str) -> str:
        """The full id of the commit `seed_ref` names in the repository at `repo_path`."""
        ...

    def dirty_paths(self, repo_path: Path) -> list[str]:
        """What `git status` lists: changed, staged and untracked paths."""
        ...

    def missing_paths(self, repo_path: Path, commit: str, paths: Sequence[str]) -> list[str]:
        """The `paths` that `commit` does not have."""
        ...

    def export(self, repo_path: Path, commit: str, folder: Path) -> None:
        """Write the files of `commit` into `folder`."""
        ...

    def lineage(
        self, repo_path: Path, run_id: str, seed: str, worktrees_dir: Path, branch: str = ""
    ) -> RunLineage:
        """Create, or after a crash recover, an evolve run's branch (`branch`; "": the default
        prefix's) and worktree."""
        ...

    def clean_orphans(
        self,
        repo_path: Path,
        worktrees_dir: Path,
        keep: Collection[str],
        prefixes: Collection[str] = (DEFAULT_BRANCH_PREFIX,),
    ) -> list[Path]:
        """Remove the run worktrees under `worktrees_dir` not named in `keep` (detached, or on a
        branch under one of the run branch `prefixes`)."""
        ...

    def check_refs(self, repo_root: Path, refs: RunRefs, *, repair: bool) -> list[Tampering]:
        """The run's branch and version tags in git against `refs`; with `repair`, every
        difference undone."""
        ...

    def snapshot(self, *folders: Path) -> GitFolderCheck:
        """What in these git folders could make git run code, as it is now."""
        ...
