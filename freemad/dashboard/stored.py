"""Runs kept by the runtimes: task and evolve stores (SQLite), and a checkout of the GitHub state
branch. Stores are opened read-only (`mode=ro`), so a dashboard never migrates, creates or locks
a store a runtime is writing; debates the GitHub router keeps in a store count too.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from freemad.dashboard.records import (
    RUN_ID,
    Artifact,
    Change,
    Events,
    Run,
    RunData,
    SourceError,
    Warn,
    file_reader,
    json_object,
    read_json,
)


class StoreSource:
    """A task or evolve store (SQLite), read-only. Debates the GitHub router keeps there count too."""

    def __init__(self, path: str | Path, warn: Warn, artifacts_dir: str | Path | None = None):
        self.path = Path(path)
        if not self.path.is_file():
            raise SourceError(f"store {self.path} does not exist")
        self.artifacts_dir = (
            Path(artifacts_dir) if artifacts_dir else self.path.parent / "artifacts"
        )
        self._warn = warn
        with self._connect() as conn:
            try:
                conn.execute("SELECT run_id, kind, status FROM runs LIMIT 1").fetchall()
            except sqlite3.DatabaseError as exc:
                raise SourceError(f"{self.path} is not a FREE-MAD store: {exc}") from None

    def _connect(self) -> closing[sqlite3.Connection]:
        try:
            conn = sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=ro", uri=True, timeout=10)
        except sqlite3.Error as exc:
            raise SourceError(f"cannot open store {self.path}: {exc}") from None
        return closing(conn)

    def runs(self) -> list[Run]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT r.run_id, r.kind, r.status, r.created_at, r.updated_at, r.summary,"
                " (SELECT MAX(seq) FROM events e WHERE e.run_id = r.run_id)"
                " FROM runs r WHERE r.kind IN ('debate', 'task', 'evolve')"
            ).fetchall()
        return [self._run(*row) for row in rows if RUN_ID.fullmatch(row[0])]

    def _run(
        self,
        run_id: str,
        kind: str,
        status: str,
        created: float,
        updated: float,
        summary: str,
        last_seq: int | None,
    ) -> Run:
        try:
            fields = json.loads(summary)
        except ValueError:
            fields = {}
        title = str(fields.get("goal") or "") if isinstance(fields, dict) else ""
        return Run(
            kind,
            run_id,
            status,
            title,
            created,
            updated,
            f"store:{last_seq}:{status}:{updated!r}",
            str(self.path),
            lambda: self.load(run_id, kind, status),
        )

    def load(self, run_id: str, kind: str, status: str) -> RunData:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT time, kind, data FROM events WHERE run_id = ? ORDER BY seq", (run_id,)
            ).fetchall()
            arts = conn.execute(
                "SELECT name, size, path FROM artifacts WHERE run_id = ? ORDER BY created_at, name",
                (run_id,),
            ).fetchall()
        events = [(k, json_object(d)) for _, k, d in rows]
        times = [t for t, _, _ in rows]
        artifacts = [Artifact(n, s, file_reader(self.artifacts_dir, p)) for n, s, p in arts]
        return _run_data(kind, run_id, events, times, status, artifacts)

    def changes(self, since: float) -> list[Change]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT e.time, r.kind, e.run_id, e.seq, e.kind FROM events e"
                " JOIN runs r ON r.run_id = e.run_id"
                " WHERE e.time >= ? AND r.kind IN ('debate', 'task', 'evolve')",
                (since,),
            ).fetchall()
        return [Change(*row) for row in rows if RUN_ID.fullmatch(row[2])]


def _run_data(
    kind: str,
    run_id: str,
    events: Events,
    times: Sequence[float],
    status: str,
    artifacts: Sequence[Artifact],
) -> RunData:
    if kind == "debate":
        finished = next((d for k, d in events if k == "debate_finished"), {})
        transcript = finished.get("transcript")
        return RunData(
            kind,
            run_id,
            transcript=transcript if isinstance(transcript, dict) else {},
            status=status,
        )
    return RunData(kind, run_id, events=events, times=times, status=status, artifacts=artifacts)


class StateDir:
    """A checkout of the `freemad-state` branch: runs/<run_id>/{run.json,events.jsonl,artifacts/}."""

    def __init__(self, path: str | Path, warn: Warn) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise SourceError(f"state folder {self.path} does not exist or is not a folder")
        self._warn = warn

    def _folders(self) -> Iterator[Path]:
        runs = self.path / "runs"
        if runs.is_dir():
            yield from sorted(p for p in runs.iterdir() if p.is_dir() and RUN_ID.fullmatch(p.name))

    def runs(self) -> list[Run]:
        found = []
        for folder in self._folders():
            meta = read_json(folder / "run.json", self._warn)
            if meta is None or meta.get("kind") not in ("debate", "task", "evolve"):
                continue
            try:
                stat = (folder / "events.jsonl").stat()
            except OSError:
                continue
            summary = meta.get("summary")
            goal = summary.get("goal") if isinstance(summary, dict) else None
            run_id, kind, status = folder.name, str(meta["kind"]), str(meta.get("status") or "")
            found.append(
                Run(
                    kind,
                    run_id,
                    status,
                    str(goal or ""),
                    _number(meta.get("created_at")),
                    _number(meta.get("updated_at")),
                    f"state:{stat.st_size}:{status}:{meta.get('updated_at')!r}",
                    str(folder),
                    functools.partial(self._load, folder, kind, status, meta),
                )
            )
        return found

    def _load(self, folder: Path, kind: str, status: str, meta: dict[str, Any]) -> RunData:
        events: Events = []
        times: list[float] = []
        try:
            lines = (folder / "events.jsonl").read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            lines = []
        for line in lines:
            record = json_object(line)
            if isinstance(record.get("kind"), str) and isinstance(record.get("data"), dict):
                events.append((record["kind"], record["data"]))
                times.append(_number(record.get("time")))
        artifacts = [
            Artifact(
                str(a.get("name")),
                int(a.get("size") or 0),
                file_reader(folder / "artifacts", str(a.get("sha256"))),
            )
            for a in meta.get("artifacts") or []
            if isinstance(a, dict) and re.fullmatch(r"[0-9a-f]{64}", str(a.get("sha256")))
        ]
        return _run_data(kind, folder.name, events, times, status, artifacts)

    def changes(self, since: float) -> list[Change]:
        return []  # the state branch is built into a static site, never watched live


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
