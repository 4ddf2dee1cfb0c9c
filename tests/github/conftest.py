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


# -- No comment shows a path on FREE-MAD's host (issue 44.4) -----------------------------------
# Every StandIn a GitHub test starts is watched: when the test ends, every comment body sent to
# it (posted or edited, in the conversation or a review thread) is searched for local paths.
@pytest.fixture(autouse=True)
def _no_local_paths_posted(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from freemad.github.public_text import local_paths
    from freemad.github.standin import StandIn

    started: list[StandIn] = []
    start = StandIn.start

    def watched(self: StandIn) -> StandIn:
        started.append(self)
        return start(self)

    monkeypatch.setattr(StandIn, "start", watched)
    yield
    found = [
        f"{call.method} {call.path}: {path}"
        for api in started
        for call in list(api.calls)
        if call.method in ("POST", "PATCH")
        and "comments" in call.path
        and isinstance(call.body, dict)
        and isinstance(call.body.get("body"), str)
        for path in local_paths(call.body["body"])
    ]
    if found:
        pytest.fail("a comment shows a path on FREE-MAD's host:\n" + "\n".join(found[:10]))
