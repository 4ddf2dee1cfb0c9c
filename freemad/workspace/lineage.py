"""An evolve run's git lineage: its branch, tags and one detached worktree outside the repository.

The user's checkout (HEAD, index, working tree, branch) is never touched. The worker edits the
worktree; nothing it writes there can redirect our git commands (they name the worktree's admin
folder explicitly), reach outside the worktree, or change a protected path.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import tarfile
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import git

from freemad.core.evolve.git_names import DEFAULT_BRANCH_PREFIX, branch_name, tag_name
from freemad.errors import FreemadError, UsageError
from freemad.workspace.git import (
    COMMIT_CONFIG,
    candidate_environment,
    commit_of,
    inert_config,
    open_checkout,
    open_repo,
    registered_worktrees,
)
from freemad.workspace.worktree_fs import (
    admin_of,
    clear_locks,
    cut_short,
    ensure_worktree,
    entries,
    remove_admin,
    remove_from_disk,
    remove_path,
    repair_dotgit,
    tidy,
)

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# Worktree commands: also no detached-HEAD advice (the rest of what makes them inert is per call).
_WORKTREE_CONFIG = ["advice.detachedHead=false"]


def resolve_seed(repo_path: Path, seed_ref: str) -> str:
    """The full sha of the commit `seed_ref` names in the repository at `repo_path`."""
    with _user_repo(repo_path) as repo:
        root = repo.working_tree_dir
        if Path(str(root)).resolve() != repo_path.resolve():
            # Its lineage would be branches of that other repository, its paths wrong.
            raise UsageError(
                f"{repo_path} is inside the git repository {root}, not one of its own; evolve "
                "needs evolve.repo_path to be the top folder of a repository (for the examples: "
                "'freemad example evolve-toy DIR' copies the toy into DIR as one)"
            )
        if commit_of(repo, "HEAD") is None:
            raise UsageError(f"{root} has no commit yet; commit once, then retry")
        seed = None if seed_ref.startswith("-") else commit_of(repo, seed_ref)
        if seed is None:
            raise UsageError(f"seed_ref {seed_ref!r} is not a commit in {root}")
        return seed


def dirty_paths(repo_path: Path) -> list[str]:
    """What `git status` lists: changed, staged and untracked paths; ignored ones are left out."""
    with _user_repo(repo_path) as repo, _git_errors(repo_path):
        # --no-optional-locks: status must not even refresh the user's index.
        out = repo.git(no_optional_locks=True).status("--porcelain", "-z", "--no-renames")
    return [entry[3:] for entry in str(out).split("\0") if entry]


def missing_paths(repo_path: Path, commit: str, paths: Sequence[str]) -> list[str]:
    """The `paths` that `commit` of the repository at `repo_path` does not have."""
    with git.Repo(repo_path) as handle:
        return [path for path in paths if not _in_tree(handle, commit, path)]


def _in_tree(handle: git.Repo, commit: str, path: str) -> bool:
    try:
        handle.git.rev_parse("--verify", "--quiet", f"{commit}:{path}")
    except git.GitCommandError:
        return False
    return True


def export(repo_path: Path, commit: str, folder: Path) -> None:
    """Write the files of `commit` of the repository at `repo_path` into `folder`."""
    buffer = io.BytesIO()
    with git.Repo(repo_path) as handle:
        handle.archive(buffer, treeish=commit, format="tar")
    buffer.seek(0)
    with tarfile.open(fileobj=buffer) as archive:
        if hasattr(tarfile, "data_filter"):
            archive.extractall(folder, filter="data")
        else:  # pragma: no cover - Pythons before the 2023 security releases
            archive.extractall(folder)  # noqa: S202 - the user's own commit


@dataclass(frozen=True, slots=True)
class Lineage:
    """One evolve run's branch, tags and worktree in the repository at `repo_root`."""

    repo_root: Path
    run_id: str
    seed: str
    worktree: Path
    branch: str
    common: Path  # the repository's git folder, which no sandboxed call may see

    @classmethod
    def open(
        cls, repo_path: Path, run_id: str, seed: str, worktrees_dir: Path, branch: str = ""
    ) -> Lineage:
        """Create, or after a crash at any point recover, the run's branch (`branch`, as its
        start recorded it; "": the default prefix's) and worktree."""
        if not _RUN_ID.fullmatch(run_id):
            raise ValueError(f"{run_id!r} cannot name a branch and a folder")
        with _user_repo(repo_path) as repo:
            root = Path(str(repo.working_tree_dir)).resolve()
            common = Path(repo.common_dir).resolve()
            worktree = worktrees_dir.resolve() / run_id
            if any(
                a.is_relative_to(b)
                for a, b in ((worktree, root), (worktree, common), (root, worktree))
            ):
                raise ValueError(f"the worktrees folder {worktrees_dir} must be outside {root}")
            full_seed = commit_of(repo, seed) if _OBJECT_ID.fullmatch(seed) else None
            if full_seed is None:
                raise UsageError(f"seed {seed!r} is not a commit id in {root}")
            name = branch or branch_name(run_id)
            lineage = cls(root, run_id, full_seed, worktree, name, common)
            with _git_errors(root):
                lineage._clear_ref_locks(common)
                if commit_of(repo, f"refs/heads/{lineage.branch}") is None:
                    repo.git.update_ref(f"refs/heads/{lineage.branch}", full_seed, "")
                ensure_worktree(repo, common, worktree, run_id, full_seed)
        return lineage

    def candidate(self, index: int) -> Lineage:
        """The worktree of candidate `index` of a generation, created or recovered beside the
        run's own (which is candidate 0's); the same branch and tags."""
        if index == 0:
            return self
        if index < 0:
            raise ValueError(f"candidate index {index} is negative")
        name = f"{self.run_id}.c{index}"  # a run id has no dot: clean_orphans keeps it with the run
        worktree = self.worktree.with_name(name)
        with _user_repo(self.repo_root) as repo, _git_errors(self.repo_root):
            ensure_worktree(repo, self.common, worktree, name, self.seed)
        return replace(self, worktree=worktree)

    def prepare(self, commit: str) -> None:
        """Make the worktree exactly `commit`, whatever the worker or a crash left in it."""
        _object_ids(commit)
        admin = self._admin()
        with _git_errors(self.worktree):
            try:
                self._reset(admin, commit)
            except git.GitCommandError:
                tidy(self.worktree, modes=True)  # say, a folder the worker made unreadable
                self._reset(admin, commit)

    def restore_protected(self, paths: Sequence[str]) -> None:
        """Put every protected path back as it is in the seed, or absent when the seed lacks it."""
        paths = [_protected(path) for path in paths]
        if paths:
            self._take_back(self.seed, paths)

    def _take_back(self, commit: str, paths: Sequence[str]) -> None:
        """Put `paths` back in the worktree and the index as they are in `commit`, or absent
        where it lacks them; a symlinked parent is unlinked, never followed."""
        try:
            parents = [p for path in paths for p in remove_from_disk(self.worktree, path)]
        except PermissionError:
            tidy(self.worktree, modes=True)
            parents = [p for path in paths for p in remove_from_disk(self.worktree, path)]
        admin = self._admin()
        with _git_errors(self.worktree):
            run = self._git(admin)
            run.rm("-r", "--cached", "--force", "--ignore-unmatch", "-q", "--", *paths, *parents)
            # A parent `commit` has as a file or symlink comes back too: it was the commit's own.
            kept = self._entries_in(commit, [*paths, *parents])
            back = [p for p, (kind, _) in kept.items() if p in paths or kind != "tree"]
            if back:
                run.checkout(commit, "--", *back)

    def stage(self) -> str:
        """Stage everything, leave the worktree holding exactly the index; the tree id."""
        admin = self._admin()
        repair_dotgit(self.worktree, admin)
        tidy(self.worktree)
        run = self._git(admin)
        with _git_errors(self.worktree):
            try:
                run.add("--all")
                run.clean("-ffdxq")
            except git.GitCommandError:
                tidy(self.worktree, modes=True)  # say, a file the worker made unreadable
                run.add("--all")
                run.clean("-ffdxq")
            return str(run.write_tree())

    def confine(self, tree: str, base_commit: str, editable: Sequence[str]) -> list[str]:
        """Take every path of `tree` that no `editable` glob matches back from `base_commit`;
        the paths taken back. The caller stages again."""
        _object_ids(tree, base_commit)
        excluded = [f":(exclude,glob){pattern}" for pattern in editable]
        with open_repo(self.repo_root) as repo, _git_errors(self.repo_root):
            out = repo.git.diff_tree(
                "-r", "-z", "--name-only", "--no-renames", base_commit, tree, "--", ".", *excluded
            )
        outside = [path for path in str(out).split("\0") if path]
        if outside:
            self._take_back(base_commit, outside)
        return outside

    def protected_ids(self, tree: str, paths: Sequence[str]) -> dict[str, str]:
        """{path: object id of path in `tree`, or "absent"}."""
        paths = [_protected(path) for path in paths]
        found = self._entries_in(tree, paths)
        return {path: found[path][1] if path in found else "absent" for path in paths}

    def _entries_in(self, tree: str, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
        """{path: (type, object id)} of the paths `tree` has."""
        _object_ids(tree)
        if not paths:
            return {}
        with open_repo(self.repo_root) as repo, _git_errors(self.repo_root):
            # -t: a folder's own entry even when a nested protected path makes ls-tree enter it.
            out = str(repo.git.ls_tree("-t", "-z", "--full-tree", tree, "--", *paths))
        found = {}
        for line in filter(None, out.split("\0")):
            meta, _, name = line.partition("\t")  # "<mode> <type> <id>\t<path>"
            if name in paths:
                found[name] = (meta.split()[1], meta.split()[2])
        return found

    def escaping_symlinks(self) -> list[str]:
        """Symlinks whose target is absolute or resolves outside the worktree, dangling or not."""
        inside = os.path.realpath(self.worktree)
        return sorted(
            os.path.relpath(entry.path, self.worktree)
            for entry in entries(self.worktree)
            if entry.is_symlink()
            and (
                os.path.isabs(os.readlink(entry.path))
                or not Path(os.path.realpath(entry.path)).is_relative_to(inside)
            )
        )

    def changed_paths(self, tree: str, base_commit: str) -> list[str]:
        """Paths that differ between `base_commit` and `tree`; empty when the worker changed nothing."""
        _object_ids(tree, base_commit)
        with open_repo(self.repo_root) as repo, _git_errors(self.repo_root):
            out = repo.git.diff_tree("-r", "-z", "--name-only", "--no-renames", base_commit, tree)
        return [path for path in str(out).split("\0") if path]

    def diff(self, tree: str, base_commit: str, limit: int = 200_000) -> str:
        """The unified diff from `base_commit` to `tree`, cut after `limit` bytes with a marker line."""
        _object_ids(tree, base_commit)
        command = [git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git", "diff", "--no-color"]
        command += ["--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/"]
        with (
            open_repo(self.repo_root),  # refuses GIT_DIR and co.
            subprocess.Popen(
                [*command, base_commit, tree, "--"],
                cwd=self.repo_root,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            ) as process,
        ):
            assert process.stdout is not None and process.stderr is not None
            text = process.stdout.read(limit + 1)
            if len(text) > limit:
                process.kill()
                kept = text[: text.rfind(b"\n", 0, limit) + 1]
                return kept.decode(errors="replace") + f"[diff truncated at {limit} bytes]\n"
            error = process.stderr.read()
        if process.returncode:
            raise FreemadError(f"git diff failed in {self.repo_root}: {_one_line(error.decode())}")
        return text.decode(errors="replace")

    def commit(self, tree: str, parent: str, message: str) -> str:
        """A commit of `tree` on `parent` by FREE-MAD; moves no ref."""
        _object_ids(tree, parent)
        with open_repo(self.repo_root) as repo, _git_errors(self.repo_root):
            return str(
                repo.git(c=COMMIT_CONFIG).commit_tree(
                    "--no-gpg-sign", "-p", parent, "-m", message, tree
                )
            )

    def advance(self, expected_tip: str, commit: str, version: int) -> None:
        """Fast-forward the branch from `expected_tip` to `commit` and tag it; safe to repeat."""
        _object_ids(expected_tip, commit)
        ref, tag = f"refs/heads/{self.branch}", f"refs/tags/{tag_name(self.run_id, version)}"
        with open_repo(self.repo_root) as repo, _git_errors(self.repo_root):
            tagged = commit_of(repo, tag)
            if tagged not in (None, commit):
                raise FreemadError(f"tag {tag} points at {tagged}, not {commit}")
            tip = commit_of(repo, ref)
            if tip != commit:
                if tip != expected_tip:
                    raise FreemadError(
                        f"branch {self.branch} moved to {tip}, expected {expected_tip}: "
                        "someone else wrote to it"
                    )
                try:
                    repo.git.merge_base("--is-ancestor", expected_tip, commit)
                except git.GitCommandError:
                    raise FreemadError(f"{commit} is not a fast-forward of {self.branch}") from None
                repo.git.update_ref("-m", f"evolve v{version}", ref, commit, expected_tip)
            if tagged is None:
                repo.git.update_ref(tag, commit, "")

    def tip(self) -> str:
        """The commit the run's branch points at."""
        with open_repo(self.repo_root) as repo:
            tip = commit_of(repo, f"refs/heads/{self.branch}")
        if tip is None:
            raise FreemadError(f"branch {self.branch} is gone from {self.repo_root}")
        return tip

    def remove(self) -> None:
        """Remove the worktree folder and its registration; the branch and tags stay."""
        with open_repo(self.repo_root) as repo:
            admin = admin_of(Path(repo.common_dir).resolve(), self.worktree)
        try:
            remove_path(self.worktree)
        except OSError:
            return  # something still writes there: the next run's orphan clean-up removes it
        remove_admin(admin)

    def _admin(self) -> Path:
        with open_repo(self.repo_root) as repo:
            common = Path(repo.common_dir).resolve()
        admin = admin_of(common, self.worktree)
        if admin is None or not self.worktree.is_dir():
            raise FreemadError(f"{self.worktree} is no longer a worktree of {self.repo_root}")
        return admin

    def _git(self, admin: Path) -> git.Git:
        """Git in the worktree, told where its admin folder is: a `.git` the worker wrote is ignored,
        and nothing the repository's config or the candidate's attributes name is run."""
        run = git.Git(self.worktree)
        run.update_environment(**candidate_environment())
        config = [*inert_config(admin), *_WORKTREE_CONFIG]
        options = {"git_dir": str(admin), "work_tree": str(self.worktree), "c": config}
        run.set_persistent_git_options(literal_pathspecs=True, **options)
        return run

    def _reset(self, admin: Path, commit: str) -> None:
        self._clear_ref_locks(admin.parent.parent)
        clear_locks(admin)
        repair_dotgit(self.worktree, admin)
        run = self._git(admin)
        run.checkout("--force", "--detach", "--quiet", commit)
        run.clean("-ffdxq")

    def _clear_ref_locks(self, common: Path) -> None:
        """Locks a killed update of the run's branch or tags left behind (only this run writes them)."""
        Path(common, "refs", "heads", f"{self.branch}.lock").unlink(missing_ok=True)
        clear_locks(common / "refs" / "tags" / "evolve" / self.run_id)


def clean_orphans(
    repo_path: Path,
    worktrees_dir: Path,
    keep: Collection[str],
    prefixes: Collection[str] = (DEFAULT_BRANCH_PREFIX,),
) -> list[Path]:
    """Remove the run worktrees under `worktrees_dir` not named in `keep` (detached, or on a
    branch under one of the run branch `prefixes`); the removed folders."""
    heads = tuple(f"refs/heads/{prefix}/" for prefix in prefixes)
    base = worktrees_dir.resolve()
    removed = []
    with _user_repo(repo_path) as repo, _git_errors(repo_path):
        root = Path(str(repo.working_tree_dir)).resolve()
        common = Path(repo.common_dir).resolve()
        repo.git.worktree("prune")
        for path, ref in registered_worktrees(repo).items():
            ours = ref is None or ref.startswith(heads)
            run_id = path.name.split(".", 1)[0]  # a candidate's worktree is `<run>.c<k>`
            if path.parent != base or path == root or not ours or run_id in keep:
                continue
            admin = admin_of(common, path)
            if admin and (admin / "locked").exists() and not cut_short(admin, path.name):
                continue  # a user's `git worktree lock`
            remove_path(path)
            remove_admin(admin)
            removed.append(path)
    return removed


@contextmanager
def _user_repo(path: Path) -> Iterator[git.Repo]:
    with open_checkout(path) as repo:
        yield repo


@contextmanager
def _git_errors(where: Path) -> Iterator[None]:
    try:
        yield
    except git.GitCommandError as exc:
        words = [str(word) for word in exc.command[1:]]
        # the subcommand: the first word that is neither an option nor a `-c` setting
        command = next(
            (w for i, w in enumerate(words) if w[:1] != "-" and words[i - 1] != "-c"), ""
        )
        stderr = str(exc.stderr).strip().removeprefix("stderr: '").removesuffix("'")
        raise FreemadError(f"git {command} failed in {where}: {_one_line(stderr)}") from None


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "no message"


def _object_ids(*values: str) -> None:
    for value in values:  # a full id also never reads as an option
        if not _OBJECT_ID.fullmatch(value):
            raise ValueError(f"{value!r} is not a full object id")


def _protected(path: str) -> str:
    """A protected path, normalised; never empty, absolute, upward or inside a `.git`."""
    parts = [part for part in path.replace("\\", "/").split("/") if part]
    if path.startswith("/") or not parts or {".", "..", ".git"} & {p.lower() for p in parts}:
        raise ValueError(f"{path!r} is not a path inside the repository")
    return "/".join(parts)
