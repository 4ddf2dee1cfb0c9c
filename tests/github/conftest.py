"""The GitHub layer's tests share a store in their temporary folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from freemad.store import SqliteStore


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with SqliteStore(tmp_path / "github.db") as opened:
        yield opened
