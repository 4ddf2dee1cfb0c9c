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
