"""The evolve worktree's file system: removing what a worker left without following its symlinks,
repairing what it broke, and making or recovering the worktree itself after a crash."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import git

from freemad.errors import FreemadError
from freemad.workspace.git import COMMIT_CONFIG

_REMOVE_TRIES = 5


def remove_path(path: Path) -> None:
    """Remove a file, symlink or folder; a symlink is never followed.

    A folder something still writes into (on the host, a worker's daemon can) is tried again a
    few times before the error goes up."""
    if not path.is_dir() or path.is_symlink():
        path.unlink(missing_ok=True)
        return
    for attempt in range(_REMOVE_TRIES):
        try:
            shutil.rmtree(path)
            return
        except PermissionError:
            tidy(path, modes=True)  # a worker's read-only folders
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY or attempt == _REMOVE_TRIES - 1:
                raise
            time.sleep(0.01)
    shutil.rmtree(path)


def remove_from_disk(worktree: Path, path: str) -> list[str]:
    """Remove `path` from the worktree; parents that are not real folders go first (returned)."""
    parts = path.split("/")
    for index in range(1, len(parts)):
        place = worktree.joinpath(*parts[:index])
        if place.is_symlink() or (place.exists() and not place.is_dir()):
            place.unlink()  # a file or symlink in the way: never followed
            return ["/".join(parts[:index])]
        if not place.is_dir():
            return []  # nothing below a missing folder
    remove_path(worktree / path)
    return []


def entries(root: Path) -> Iterator[os.DirEntry[str]]:
    """Everything below `root` except its own `.git`; symlinks and nested `.git` are not entered."""
    folders = [root]
    while folders:
        folder = folders.pop()
        try:
            listing = os.scandir(folder)
        except PermissionError:  # a folder the worker made unreadable
            folder.chmod(folder.stat().st_mode | stat.S_IRWXU)
            listing = os.scandir(folder)
        with listing:
            for entry in listing:
                if folder == root and entry.name == ".git":
                    continue
                yield entry
                if entry.is_dir(follow_symlinks=False) and entry.name.lower() != ".git":
                    folders.append(Path(entry.path))


def tidy(root: Path, *, modes: bool = False) -> None:
    """Leave only what git can stage: nested `.git` and special files go; with `modes`, every
    file and folder is the owner's to read and write again.

    A nested repository would be committed as a gitlink, a special file not at all.
    """
    if modes:
        root.chmod(root.stat().st_mode | stat.S_IRWXU)
    for entry in entries(root):
        is_dir, is_link = entry.is_dir(follow_symlinks=False), entry.is_symlink()
        if entry.name.lower() == ".git" or not (is_dir or is_link or entry.is_file()):
            remove_path(Path(entry.path))
        elif modes and not is_link:
            mode = entry.stat(follow_symlinks=False).st_mode
            need = stat.S_IRWXU if is_dir else stat.S_IRUSR | stat.S_IWUSR
            if mode & need != need:
                os.chmod(entry.path, mode | need)  # before entries lists a folder


def admin_of(common: Path, worktree: Path) -> Path | None:
    """The folder in `<common>/worktrees` registering `worktree`, read from git's side only."""
    for admin in sorted(Path(common, "worktrees").glob("*/gitdir")):
        try:
            if Path(admin.read_text().strip()).parent.resolve() == worktree:
                return admin.parent
        except OSError:
            continue
    return None


def repair_dotgit(worktree: Path, admin: Path) -> None:
    """Point the worktree's `.git` file back at its admin folder if the worker changed it."""
    dotgit = worktree / ".git"
    want = f"gitdir: {admin}\n"
    try:
        regular = stat.S_ISREG(dotgit.lstat().st_mode) and dotgit.stat().st_size < 4096
        if regular and dotgit.read_text(errors="replace") == want:
            return
        remove_path(dotgit)
    except FileNotFoundError:
        pass
    dotgit.write_text(want)


def remove_admin(admin: Path | None) -> None:
    """Drop a worktree's registration; `.git/worktrees` goes with the last, as in `git worktree prune`."""
    if admin is not None:
        shutil.rmtree(admin)
        with contextlib.suppress(OSError):
            admin.parent.rmdir()


def clear_locks(folder: Path) -> None:
    for lock in folder.glob("*.lock"):
        lock.unlink(missing_ok=True)


def _creating(run_id: str) -> str:
    """The lock reason a worktree carries until `worktree add` completes."""
    return f"freemad: creating the worktree of evolve run {run_id}"


def cut_short(admin: Path, run_id: str) -> bool:
    """Whether `admin` is what a killed `worktree add` of ours left (see gitspace.cut_short)."""
    lock = admin / "locked"
    if not lock.is_file():
        return False
    reason = lock.read_text().strip()
    return reason == _creating(run_id) or (
        _creating(run_id).startswith(reason)
        and not (admin / "gitdir").exists()
        and re.fullmatch(re.escape(run_id) + "[0-9]*", admin.name) is not None
    )


def ensure_worktree(repo: git.Repo, common: Path, worktree: Path, run_id: str, seed: str) -> None:
    for folder in sorted(Path(common, "worktrees").glob("*")):
        if cut_short(folder, run_id):
            shutil.rmtree(folder)  # the folder it was making is handled below
    admin = admin_of(common, worktree)
    if admin is not None and not worktree.is_dir():
        shutil.rmtree(admin)  # a registration whose folder is gone
    elif admin is not None:
        clear_locks(admin)
        repair_dotgit(worktree, admin)
        return
    if os.path.lexists(worktree):
        if not _leftover_of(worktree, common):
            raise FreemadError(f"{worktree} exists and is not a worktree of ours; move it away")
        remove_path(worktree)  # nothing in it was committed
    worktree.parent.mkdir(parents=True, exist_ok=True)
    reason = _creating(run_id)
    repo.git(c=COMMIT_CONFIG).worktree(
        "add", "--detach", "--lock", "--reason", reason, str(worktree), seed
    )
    repo.git.worktree("unlock", str(worktree))


def _leftover_of(worktree: Path, common: Path) -> bool:
    """Whether a folder at our worktree's place is a leftover of a worktree of this repository."""
    if worktree.is_symlink() or not worktree.is_dir():
        return False
    if not any(worktree.iterdir()):
        return True
    dotgit = worktree / ".git"
    if dotgit.is_symlink() or not dotgit.is_file():
        return False
    text = dotgit.read_text(errors="replace").strip()
    return text.startswith("gitdir: ") and Path(text[8:]).resolve().is_relative_to(
        common / "worktrees"
    )
