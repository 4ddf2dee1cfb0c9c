"""The store is the truth for a run's lineage: refs and the repository's own settings checked
against it, and repaired, before every step and before any push.

A worker never sees the user's `.git` in a sandbox. Where it runs on the host on purpose, it
could move the run's branch to an unjudged commit, forge a version tag, or add a hook, a filter
or a credential helper to the repository's config for FREE-MAD's own git to run. Each of those is
found here, undone, and reported as tampering in one line that names what changed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import git

from freemad.core.evolve.git_names import branch_name, tag_name
from freemad.workspace.git import candidate_environment, commit_of, open_repo
from freemad.workspace.repository_port import RunRefs, Tampering


def _short(commit: str | None) -> str:
    return commit[:12] if commit else "absent"


def check_refs(repo_root: Path, refs: RunRefs, *, repair: bool) -> list[Tampering]:
    """The run's branch and `evolve/<run>/v*` tags against the admitted versions of `refs`; with
    `repair`, every difference is undone. Before the baseline is admitted (none is) the branch is
    at the seed and no tag is expected yet.

    The pending admission is recorded as judged but not yet as a version: its tag and the branch
    at its commit are a crash's leftovers, rolled forward later, not tampering.
    """
    run_id, admitted, seed, pending = refs.run_id, refs.admitted, refs.seed, refs.pending
    found: list[Tampering] = []
    name = refs.branch or branch_name(run_id)
    branch = f"refs/heads/{name}"
    tip = admitted[max(admitted)] if admitted else seed
    allowed_tips = {tip} | ({pending[1]} if pending else set())
    expected_tags = {tag_name(run_id, v): c for v, c in admitted.items()}
    if pending is not None:
        expected_tags.setdefault(tag_name(run_id, pending[0]), pending[1])
    with open_repo(repo_root) as repo:
        current = commit_of(repo, branch)
        if current not in allowed_tips:
            found.append(Tampering(f"branch {name}", _short(current), _short(tip)))
            if repair:
                repo.git.update_ref("-m", "freemad: undo tampering", branch, tip)
        listing = str(
            repo.git.for_each_ref(
                "--format=%(refname)%00%(objectname)%00%(*objectname)",
                f"refs/tags/evolve/{run_id}/",
            )
        )
        seen: set[str] = set()
        for line in filter(None, listing.splitlines()):
            ref, direct, peeled = line.split("\0")
            name = ref.removeprefix("refs/tags/")
            seen.add(name)
            points = peeled or direct
            want = expected_tags.get(name)
            if points == want:
                continue
            found.append(Tampering(f"tag {name}", _short(points), _short(want)))
            if repair:
                if want is None:
                    repo.git.update_ref("-d", ref)
                else:
                    repo.git.update_ref(ref, want)
        for name, want in expected_tags.items():
            # A missing tag is no tampering (a fresh clone in a later job has only what was
            # pushed); it is put back all the same.
            pending_tag = pending is not None and name == tag_name(run_id, pending[0])
            if name not in seen and not pending_tag and repair:
                repo.git.update_ref(f"refs/tags/{name}", want, "")
    return found


# What in a repository's git folder makes git run a program or send what it holds elsewhere: its
# config, its hooks, and its attributes. In the config only these keys count, so a person's own
# `git config user.name` during a run is no tampering; any change to a hook or the attributes is.
_CONFIG_FILES = ("config", "config.worktree")
_WATCHED_FILES = (*_CONFIG_FILES, "info/attributes")
_RISKY_KEYS = (
    "filter.",
    "core.hookspath",
    "core.fsmonitor",
    "core.attributesfile",
    "core.sshcommand",
    "core.gitproxy",
    "core.askpass",
    "core.pager",
    "core.editor",
    "credential.",
    "url.",
    "include.",
    "includeif.",
    "diff.",
    "merge.",
    "remote.",
    "http.",
    "protocol.",
    "uploadpack.",
    "gpg.",
    "sequence.",
    "alias.",
)


@dataclass(frozen=True, slots=True)
class GitFolderSnapshot:
    """The bytes of what in `.git` can make FREE-MAD's own git run code, taken at a run's start."""

    files: dict[Path, bytes | None]
    hooks: tuple[Path, ...]

    @classmethod
    def take(cls, *folders: Path) -> GitFolderSnapshot:
        files: dict[Path, bytes | None] = {}
        hooks: list[Path] = []
        for folder in folders:
            for name in _WATCHED_FILES:
                files[folder / name] = _read(folder / name)
            hook_dir = folder / "hooks"
            hooks.append(hook_dir)
            if hook_dir.is_dir():
                for entry in sorted(hook_dir.iterdir()):
                    files[entry] = _read(entry)
        return cls(files, tuple(hooks))

    def check(self, *, repair: bool) -> list[Tampering]:
        """What changed since the snapshot; with `repair`, put back as it was."""
        found: list[Tampering] = []
        present = dict(self.files)
        for hook_dir in self.hooks:
            if hook_dir.is_dir():
                for entry in hook_dir.iterdir():
                    present.setdefault(entry, None)
        for path, before in sorted(present.items()):
            now = _read(path)
            if now == before or (path.name in _CONFIG_FILES and _risky(now) == _risky(before)):
                continue
            state = "absent" if now is None else "changed"
            found.append(Tampering(str(path), state, "absent" if before is None else "unchanged"))
            if repair:
                _put_back(path, before)
        return found


def _risky(config: bytes | None) -> frozenset[bytes] | None:
    """The entries of a git config file (its text) whose keys make git run or send something."""
    if config is None:
        return None
    program = git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git"
    listed = subprocess.run(
        [program, "config", "--file", "-", "--list", "-z"],
        input=config,
        capture_output=True,
        env={**os.environ, **candidate_environment()},
        check=False,
    )
    if listed.returncode != 0:  # unreadable to git: counts as a change of every key
        return frozenset({b"unparseable:" + config})
    entries = (entry for entry in listed.stdout.split(b"\0") if entry)
    return frozenset(
        e
        for e in entries
        if e.split(b"\n", 1)[0].decode(errors="replace").lower().startswith(_RISKY_KEYS)
    )


def _read(path: Path) -> bytes | None:
    try:
        if path.is_symlink():
            return b"symlink:" + os.readlink(path).encode()
        return path.read_bytes() if path.is_file() else (b"folder" if path.exists() else None)
    except OSError:
        return None


def _put_back(path: Path, before: bytes | None) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    if before is not None and not before.startswith((b"symlink:", b"folder")):
        path.write_bytes(before)
