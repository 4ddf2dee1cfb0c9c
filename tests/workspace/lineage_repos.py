"""What the lineage tests share: a repository with protected files and the user's own changes,
a worktrees folder outside it, a lineage over both, and helpers to iterate and compare."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from freemad.core.evolve.git_names import commit_message
from freemad.workspace.lineage import Lineage, resolve_seed
from tests.gittools import add_user_changes, git

RUN = "a1b2c3d4e5f60718"
PROTECTED = ["tests", "bench.py", "config/limits.toml", "secrets/key"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with protected files, one commit, and uncommitted changes of every kind."""
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "config").mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("def f():\n    return 1\n")
    (root / "bench.py").write_text("print('bench')\n")
    (root / "config" / "limits.toml").write_text("max = 3\n")
    (root / "tests" / "test_app.py").write_text("def test_f():\n    assert True\n")
    (root / "tests" / "data.txt").write_text("data\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    (root / "app.py").write_text("# the user's edit, not committed\n")
    add_user_changes(root)
    return root


@pytest.fixture
def worktrees(tmp_path: Path) -> Path:
    return tmp_path / "worktrees"


@pytest.fixture
def lineage(repo: Path, worktrees: Path) -> Lineage:
    return Lineage.open(repo, RUN, resolve_seed(repo, "HEAD"), worktrees)


def iterate(lineage: Lineage, incumbent: str, version: int, edit: str) -> str:
    """One admitted iteration: the worker edits app.py, the runtime commits and advances."""
    lineage.prepare(incumbent)
    (lineage.worktree / "app.py").write_text(edit)
    lineage.restore_protected(PROTECTED)
    tree = lineage.stage()
    message = commit_message("speed up f", RUN, version, version, {"score": 1.0})
    commit = lineage.commit(tree, incumbent, message)
    lineage.advance(incumbent, commit, version)
    return commit


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
