"""Store fixtures: a real SQLite store in tmp_path, and a helper to run store code in a child process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from freemad.store import SqliteStore


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "store.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(db_path) as opened:
        yield opened


def child(code: str, *args: str) -> subprocess.Popen[str]:
    """A real Python process running `code` (dedented), with `args` in sys.argv[1:]."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
