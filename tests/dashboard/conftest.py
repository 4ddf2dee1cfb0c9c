from __future__ import annotations

from pathlib import Path

import pytest

from tests.dashboard.runs import Runs, make_runs


@pytest.fixture(scope="session")
def real_runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """One debate, one task and one evolve run, made by the real CLI (shared: read, don't write)."""
    return make_runs(Path(tmp_path_factory.mktemp("real-runs")))
