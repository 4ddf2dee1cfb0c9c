"""Git as FREE-MAD runs it on the user's repositories: opening one, FREE-MAD's identity and
commit settings, and the worktrees registered in it. Shared by tasks, evolve and publishing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import git

from freemad.errors import UsageError
from freemad.sandbox.process import looks_secret

AUTHOR = ("FREE-MAD", "freemad@freemad.invalid")
IDENTITY = {
    "GIT_AUTHOR_NAME": AUTHOR[0],
    "GIT_AUTHOR_EMAIL": AUTHOR[1],
    "GIT_COMMITTER_NAME": AUTHOR[0],
    "GIT_COMMITTER_EMAIL": AUTHOR[1],
}
# The user's signing, hooks and automatic gc have no say in a task's commits.
COMMIT_CONFIG = ["commit.gpgsign=false", "core.hooksPath=/dev/null", "gc.auto=0"]
# Any of these would point our git calls at another checkout or index than the one we chose.
_REDIRECTING = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
)


def open_repo(path: Path, *, search: bool = False) -> git.Repo:
    present = [name for name in _REDIRECTING if name in os.environ]
    if present:
        raise UsageError(f"{', '.join(present)} is set; unset it so git works where FREE-MAD means")
    repo = git.Repo(path, search_parent_directories=search)
    repo.git.update_environment(**IDENTITY)  # reflog entries need an identity too
    return repo


def open_checkout(path: Path) -> git.Repo:
    """The repository `path` is in, which must have a working tree; one-line UsageErrors."""
    try:
        repo = open_repo(path, search=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise UsageError(f"{path} is not in a git repository") from None
    if repo.bare or repo.working_tree_dir is None:
        repo.close()
        raise UsageError(f"{path} is a bare repository; FREE-MAD needs a checkout")
    return repo


def commit_of(repo: git.Repo, ref: str) -> str | None:
    try:
        return str(repo.git.rev_parse("--verify", "--quiet", f"{ref}^{{commit}}"))
    except git.GitCommandError:
        return None


def registered_worktrees(repo: git.Repo) -> dict[Path, str | None]:
    """Registered worktrees: path -> the branch ref checked out there (None when detached)."""
    found: dict[Path, str | None] = {}
    path: Path | None = None
    for field in str(repo.git.worktree("list", "--porcelain", "-z")).split("\0"):
        if field.startswith("worktree "):
            path = Path(field.removeprefix("worktree ")).resolve()
            found[path] = None
        elif field.startswith("branch ") and path is not None:
            found[path] = field.removeprefix("branch ")
    return found


# FREE-MAD's git on a candidate's tree runs nothing the repository or the candidate chose: no
# hooks, no fsmonitor, no global attributes, no credential helper, and no filter (each filter
# the repository's config names is emptied below: a `.gitattributes` naming it then does nothing).
_INERT = [
    *COMMIT_CONFIG,
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    f"core.attributesFile={os.devnull}",
    "credential.helper=",
]
_FILTER_KEYS = ("clean", "smudge", "process")


def candidate_environment() -> dict[str, str]:
    """Settings for git on a candidate's tree: FREE-MAD's identity, neither the system's nor the
    user's global config, no prompts, and every credential-looking variable emptied."""
    env = {name: "" for name in os.environ if looks_secret(name)}
    env.update(IDENTITY)
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_ATTR_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
    )
    return env


def inert_config(git_dir: Path) -> list[str]:
    """`-c` settings that keep git from running anything named in the repository's config."""
    program = git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git"
    env = {**os.environ, **candidate_environment()}
    listing = subprocess.run(
        [program, "--git-dir", str(git_dir), "config", "--includes", "--list", "--name-only", "-z"],
        capture_output=True,
        env=env,
        check=False,
    ).stdout.decode(errors="replace")
    names = set()
    for key in listing.split("\0"):
        head, _, what = key.rpartition(".")
        if head.lower().startswith("filter.") and what.lower() in (*_FILTER_KEYS, "required"):
            names.add(head[len("filter.") :])
    emptied = [f"filter.{name}.{key}=" for name in sorted(names) for key in _FILTER_KEYS]
    return [*_INERT, *emptied, *(f"filter.{name}.required=false" for name in sorted(names))]
