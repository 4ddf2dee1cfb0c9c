"""The store's tables read back: the SELECTs and the records their rows make, shared by the writer
(`SqliteStore`) and the read-only reader (`StoreReader`), so the schema is read in one place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from freemad.store.store_port import ArtifactRef, RunRow, StoredEvent

SELECT_RUNS = "SELECT run_id, kind, status, created_at, updated_at, summary FROM runs"
SELECT_ARTIFACTS = "SELECT artifact_id, run_id, name, sha256, size, path, created_at FROM artifacts"
SELECT_EVENTS = "SELECT seq, time, kind, data FROM events WHERE run_id = ? AND seq > ?"


def run_row(row: tuple[Any, ...], *, lenient: bool = False) -> RunRow:
    """A row of SELECT_RUNS (its six columns first) as a RunRow."""
    run_id, kind, status, created_at, updated_at, summary = row[:6]
    return RunRow(run_id, kind, status, created_at, updated_at, _object(summary, lenient))


def stored_event(run_id: str, row: tuple[Any, ...], *, lenient: bool = False) -> StoredEvent:
    """A row of SELECT_EVENTS (seq, time, kind, data) as a StoredEvent."""
    seq, time, kind, data = row
    return StoredEvent(run_id, seq, time, kind, _object(data, lenient))


def artifact_ref(row: tuple[Any, ...], artifacts_dir: Path) -> ArtifactRef:
    """A row of SELECT_ARTIFACTS, its file's path under `artifacts_dir`."""
    ident, run_id, name, sha256, size, relative, created_at = row
    path = str(artifacts_dir / relative)
    return ArtifactRef(ident, run_id, name, sha256, size, path, created_at)


def _object(text: Any, lenient: bool) -> dict[str, Any]:
    """A JSON object column. The store writes only objects; `lenient` reads anything else (a
    damaged file) as {}, so a viewer still shows the rest of the run."""
    if not lenient:
        value: dict[str, Any] = json.loads(text)
        return value
    try:
        parsed = json.loads(text)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
