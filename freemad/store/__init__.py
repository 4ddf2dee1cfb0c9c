"""The store: the persistent event log every runtime appends to, its run table and artifacts."""

from freemad.store.base import (
    ArtifactCorrupt,
    ArtifactRef,
    RunExists,
    RunRow,
    Store,
    StoredEvent,
    StoreError,
    UnknownRun,
)
from freemad.store.schema import SCHEMA_VERSION
from freemad.store.sqlite import SqliteStore

__all__ = [
    "SCHEMA_VERSION",
    "ArtifactCorrupt",
    "ArtifactRef",
    "RunExists",
    "RunRow",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoredEvent",
    "UnknownRun",
]
