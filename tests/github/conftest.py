"""The GitHub layer's tests share a store in their temporary folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from freemad.store import SqliteStore


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with SqliteStore(tmp_path / "github.db") as opened:
        yield opened


@pytest.fixture
def world(tmp_path: Path) -> Iterator[Any]:
    """The evolve matrix's world (`tests.github.matrix_world`): origin, GitHub's stand-in, jobs."""
    from tests.github.matrix_world import open_world

    with open_world(tmp_path) as matrix:
        yield matrix
