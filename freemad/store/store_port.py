"""The store port: what a runtime appends and reads back (events, runs, artifacts), and its errors."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Protocol

from freemad.errors import FreemadError

# The run ids a store accepts: they name folders (artifacts, the state branch) and page files.
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class StoreError(FreemadError):
    """The store could not be opened, read or written, or was asked for something it does not hold."""


class UnknownRun(StoreError):
    """An append, update or artifact named a run that was never created."""


class RunExists(StoreError):
    """create_run was given a run id the store already holds."""


class ArtifactCorrupt(StoreError):
    """An artifact's file is missing or no longer matches the sha256 recorded for it."""


class StoreUnreadable(StoreError):
    """A read of a store failed; the message is SQLite's own, which does not say which store
    (the reader's caller, which knows, says so where it reports it)."""


@dataclass(frozen=True, slots=True)
class StoredEvent:
    run_id: str
    seq: int
    time: float  # Unix seconds
    kind: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RunRow:
    run_id: str
    kind: str
    status: str
    created_at: float
    updated_at: float
    summary: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ArtifactRef:
    artifact_id: str
    run_id: str
    name: str
    sha256: str
    size: int
    path: str
    created_at: float


class Store(Protocol):
    """An append-only event log per run, a denormalised run table, and content-addressed artifacts."""

    def create_run(self, run_id: str, kind: str, summary: dict[str, Any]) -> RunRow: ...

    def append(self, run_id: str, kind: str, data: dict[str, Any]) -> StoredEvent: ...

    def append_many(
        self, run_id: str, events: list[tuple[str, dict[str, Any]]]
    ) -> list[StoredEvent]: ...

    def events(
        self, run_id: str, after_seq: int = -1, kinds: Collection[str] | None = None
    ) -> list[StoredEvent]: ...

    def run(self, run_id: str) -> RunRow | None: ...

    def runs(self, kind: str | None = None, limit: int | None = None) -> list[RunRow]: ...

    def update_run(
        self,
        run_id: str,
        *,
        status: str | None = None,
        summary: dict[str, Any] | None = None,
    ) -> None: ...

    def put_artifact(self, run_id: str, name: str, content: bytes) -> ArtifactRef: ...

    def artifact(self, artifact_id: str) -> ArtifactRef | None: ...

    def read_artifact(self, artifact_id: str) -> bytes: ...

    def artifacts(self, run_id: str) -> list[ArtifactRef]: ...

    def close(self) -> None: ...
