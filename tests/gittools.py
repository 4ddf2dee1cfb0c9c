"""Git for the tests: a helper that runs git as a known user, and a fixture that keeps the machine's
own git configuration and redirecting variables out of the repositories the tests make."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

USER = ("-c", "user.name=Some User", "-c", "user.email=user@example.com")


@pytest.fixture(autouse=True)
def isolated_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No global or system git config of the machine running the tests, and no redirections.
    Autouse in every module that imports it."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        monkeypatch.delenv(name, raising=False)


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *USER, *args], cwd=cwd, check=True, capture_output=True, text=True
    )
    return done.stdout


def add_user_changes(root: Path) -> None:
    """What a user has in their checkout besides commits: an edit, a staged file, an untracked one."""
    (root / "staged.txt").write_text("staged by the user\n")
    git(root, "add", "staged.txt")
    (root / "untracked.txt").write_text("untracked\n")


def snapshot(root: Path) -> dict[str, object]:
    """Everything of the user's that FREE-MAD must leave as it was; reading it writes nothing."""
    files = {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }
    return {
        "index": (root / ".git" / "index").read_bytes(),
        "HEAD": (root / ".git" / "HEAD").read_bytes(),
        "head": git(root, "rev-parse", "HEAD"),
        "main": git(root, "rev-parse", "refs/heads/main"),
        "cached": git(root, "diff", "--cached"),
        "status": git(root, "--no-optional-locks", "status", "--porcelain=v1", "-z", "-uall"),
        "files": files,
    }
