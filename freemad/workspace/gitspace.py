"""A code task's own branch and worktree, so agents never touch the user's branch or checkout."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import git

from freemad.errors import FreemadError, UsageError
from freemad.workspace.git import (
    candidate_environment,
    commit_of,
    inert_config,
    open_repo,
    registered_worktrees,
)

_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def _creating(task_id: str) -> str:
    """The lock reason a worktree carries until it is complete; one still carrying it was cut short."""
    return f"freemad: creating the worktree of task {task_id}"


def _cut_short(admin: Path, task_id: str) -> bool:
    """Whether `admin`, a folder in .git/worktrees, is what a killed `worktree add` of ours left.

    `git worktree add` makes the folder, then writes `locked` by truncating and then writing the
    reason, then writes `gitdir`. A kill between the truncation and the write leaves `locked`
    empty: `git worktree prune` keeps the folder for its lock, and without the reason it would
    stay for good, pushing every later worktree of the task to `<task_id>1`, `<task_id>2`...
    An empty lock without a gitdir, in a folder named for the task, is therefore ours as well;
    an empty lock beside a gitdir is a user's `git worktree lock` without a reason, and stays.
    """
    lock = admin / "locked"
    if not lock.is_file():
        return False  # no lock: `git worktree prune` decides
    reason = lock.read_text().strip()
    if reason == _creating(task_id):
        return True
    return (
        _creating(task_id).startswith(reason)
        and not (admin / "gitdir").exists()
        and re.fullmatch(re.escape(task_id) + "[0-9]*", admin.name) is not None
    )


@dataclass(frozen=True, slots=True)
class TaskWorkspace:
    """Where a code task writes: `path` is the workspace root's place inside the task's worktree."""

    path: Path
    worktree: Path
    branch: str
    repo_root: Path
    base_commit: str
    git_dir: Path  # the repository's own git folder: hidden from agents and commands

    @classmethod
    def open(cls, workspace_root: Path, task_id: str, worktrees_dir: Path) -> TaskWorkspace | None:
        """Create, or after a crash at any point recover, the task's branch and worktree.

        None when `workspace_root` is not in a git repository: the task then works in place.
        """
        if not _TASK_ID.fullmatch(task_id):
            raise ValueError(f"{task_id!r} cannot name a branch and a folder")
        try:
            repo = open_repo(workspace_root, search=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            return None
        with repo:
            if repo.bare or repo.working_tree_dir is None:
                return None
            repo_root = Path(repo.working_tree_dir).resolve()
            common = Path(repo.common_dir).resolve()
            worktree = worktrees_dir.resolve() / task_id
            if worktree.is_relative_to(repo_root) or worktree.is_relative_to(common):
                raise ValueError(
                    f"the worktrees folder {worktrees_dir} must be outside {repo_root}"
                )
            branch = f"freemad/task/{task_id}"
            try:
                base = _ensure_refs(repo, common, task_id, branch)
                _ensure_worktree(repo, common, worktree, task_id, branch)
            except git.GitCommandError as exc:
                raise FreemadError(f"git failed in {repo_root}: {exc.stderr.strip()}") from None
        path = worktree / Path(workspace_root).resolve().relative_to(repo_root)
        path.mkdir(parents=True, exist_ok=True)
        return cls(path, worktree, branch, repo_root, base, common)

    def commit(self, message: str) -> str | None:
        """Commit everything in the worktree on the task branch; None when nothing changed."""
        with open_repo(self.worktree) as repo:
            # The agents wrote this tree: git runs no filter, hook or fsmonitor it could name.
            repo.git.update_environment(**candidate_environment())
            inert = inert_config(Path(repo.git_dir))
            repo.git(c=inert).add("--all")
            status, _, _ = repo.git.diff(
                "--cached", "--quiet", with_extended_output=True, with_exceptions=False
            )
            if status == 0:
                return None
            repo.git(c=inert).commit(
                "--no-verify", "--cleanup=verbatim", "--quiet", "-m", message or "FREE-MAD task"
            )
            return str(repo.git.rev_parse("HEAD"))

    def diff(self) -> str:
        """The task branch against the commit it started from."""
        with open_repo(self.repo_root) as repo:
            return str(
                repo.git.diff(
                    "--no-color",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--src-prefix=a/",
                    "--dst-prefix=b/",
                    self.base_commit,
                    f"refs/heads/{self.branch}",
                    strip_newline_in_stdout=False,
                )
            )

    def remove(self) -> None:
        """Remove the worktree and its folder; the branch, and so the work, stays."""
        with open_repo(self.repo_root) as repo:
            repo.git.worktree("prune")
            if self.worktree.resolve() in registered_worktrees(repo):
                repo.git.worktree("remove", "--force", str(self.worktree))
            repo.git.worktree("prune")
        if self.worktree.exists():  # what a crash in an earlier remove left behind
            shutil.rmtree(self.worktree)


def _ensure_refs(repo: git.Repo, common: Path, task_id: str, branch: str) -> str:
    """The task's base commit, kept in refs/freemad/base/<task_id>, and its branch, made from it."""
    base_ref, branch_ref = f"refs/freemad/base/{task_id}", f"refs/heads/{branch}"
    for ref in (base_ref, branch_ref):  # a lock left by a killed update of our own refs
        Path(common, f"{ref}.lock").unlink(missing_ok=True)
    base = commit_of(repo, base_ref)
    tip = commit_of(repo, branch_ref)
    if base is None:
        head = commit_of(repo, "HEAD")
        if head is None:
            raise UsageError(f"{repo.working_tree_dir} has no commit yet; commit once, then retry")
        base = str(repo.git.merge_base(tip, head)) if tip else head
        repo.git.update_ref(base_ref, base, "")
    if tip is None:
        repo.git.update_ref(branch_ref, base, "")
    return base


def _ensure_worktree(
    repo: git.Repo, common: Path, worktree: Path, task_id: str, branch: str
) -> None:
    repo.git.worktree("prune")  # entries whose folder is gone
    admin_root = common / "worktrees"
    for admin in admin_root.iterdir() if admin_root.is_dir() else ():
        if _cut_short(admin, task_id):
            shutil.rmtree(admin)  # its folder is handled below
    registered = registered_worktrees(repo)
    for path, ref in registered.items():
        if ref == f"refs/heads/{branch}" and path != worktree:
            raise FreemadError(f"{branch} is checked out at {path}; remove that worktree first")
    if worktree in registered:
        if registered[worktree] != f"refs/heads/{branch}":
            raise FreemadError(f"{worktree} is a worktree of another branch; move it away")
        # Locks a killed commit left in the worktree's own admin folder. `git commit` holds
        # index.lock while it writes the index and, while it moves the branch through the
        # worktree's HEAD, HEAD.lock too (the branch's lock in the common folder is cleared in
        # _ensure_refs); SIGKILL runs no cleanup, so a kill in either window leaves the lock, and
        # every later commit then fails with "cannot lock ref 'HEAD': ... HEAD.lock: File
        # exists". Everything at the top of this folder belongs to this worktree alone, which
        # only this task uses, so any *.lock there is a leftover of ours.
        with open_repo(worktree) as inside:
            for lock in Path(inside.git_dir).glob("*.lock"):
                lock.unlink(missing_ok=True)
        return
    if worktree.exists():
        if any(worktree.iterdir()) and not (worktree / ".git").is_file():
            raise FreemadError(f"{worktree} exists and is not a task worktree; move it away")
        shutil.rmtree(worktree)  # an unregistered leftover of ours: nothing in it was committed
    worktree.parent.mkdir(parents=True, exist_ok=True)
    repo.git.worktree("add", "--lock", "--reason", _creating(task_id), str(worktree), branch)
    repo.git.worktree("unlock", str(worktree))
