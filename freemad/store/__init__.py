"""The store: the persistent event log every runtime appends to, its run table and artifacts.

`SqliteStore` writes it; `StoreReader` only reads it (read-only, never creating a file);
`run_folders` is the same log as files, the layout of the GitHub state branch.
"""

from freemad.store.reader import StoreReader
from freemad.store.schema import SCHEMA_VERSION
from freemad.store.sqlite import SqliteStore
from freemad.store.store_port import (
    RUN_ID,
    ArtifactCorrupt,
    ArtifactRef,
    RunExists,
    RunRow,
    Store,
    StoredEvent,
    StoreError,
    StoreUnreadable,
    UnknownRun,
)

__all__ = [
    "RUN_ID",
    "SCHEMA_VERSION",
    "ArtifactCorrupt",
    "ArtifactRef",
    "RunExists",
    "RunRow",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreReader",
    "StoreUnreadable",
    "StoredEvent",
    "UnknownRun",
]
