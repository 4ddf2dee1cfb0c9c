"""Runs kept by the runtimes: task and evolve stores (SQLite), and a checkout of the GitHub state
branch. Stores are read through `freemad.store.StoreReader` (read-only: a dashboard never
migrates, creates or locks a store a runtime is writing), checkouts through
`freemad.store.run_folders`; debates the GitHub router keeps in a store count too, and one it is
running shows live, as a journal's does (`freemad.debate.live_store`), or abandoned once its
process is gone.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from freemad.dashboard.run_records import (
    Artifact,
    Change,
    Events,
    Run,
    RunData,
    SourceError,
    Warn,
    file_reader,
    read_json,
)
from freemad.debate.live_store import FINISHED, RUNNING, runner_gone_at, stored_debate
from freemad.debate.transcript_format import expand
from freemad.store import RUN_ID, RunRow, StoredEvent, StoreError, StoreReader
from freemad.store.artifacts import artifact_id
from freemad.store.run_folders import (
    ARTIFACTS,
    EVENTS_FILE,
    RUN_FILE,
    loose_artifacts,
    loose_events,
    loose_folders,
    loose_goal,
    loose_time,
)

KINDS = ("debate", "task", "evolve")  # the runs a dashboard shows


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
        self._reader = StoreReader(self.path, self.artifacts_dir)
        try:
            self._reader.check()
        except StoreError as exc:
            raise SourceError(exc.message) from None

    def runs(self) -> list[Run]:
        listed, now = self._reader.runs(KINDS), time.time()
        return [self._run(i.row, i.last_seq, now) for i in listed if RUN_ID.fullmatch(i.row.run_id)]

    def _run(self, row: RunRow, last_seq: int | None, now: float) -> Run:
        run_id, kind, status, updated = row.run_id, row.kind, row.status, row.updated_at
        went = runner_gone_at(row, now) if kind == "debate" else None
        if went is not None:  # a debate whose process died: no longer "running"
            status, updated = "abandoned", max(updated, went)
        return Run(
            kind,
            run_id,
            status,
            str(row.summary.get("goal") or ""),
            row.created_at,
            updated,
            f"store:{last_seq}:{status}:{updated!r}",
            str(self.path),
            lambda: self.load(run_id, kind, status),
        )

    def load(self, run_id: str, kind: str, status: str) -> RunData:
        stored = self._reader.events(run_id)
        if kind == "debate":
            live = self._in_flight(run_id, stored)
            if live is not None:
                return live
        refs = self._reader.artifacts(run_id)
        events = [(event.kind, event.data) for event in stored]
        times = [event.time for event in stored]
        folder = self._reader.artifacts_dir
        artifacts = [
            Artifact(ref.name, ref.size, file_reader(folder, ref.path), ref.artifact_id)
            for ref in refs
        ]
        return _run_data(kind, run_id, events, times, status, artifacts)

    def _in_flight(self, run_id: str, stored: list[StoredEvent]) -> RunData | None:
        """A debate the GitHub router is running (or whose process died running it): the rounds
        so far, as a journal's; None once it has finished."""
        if any(event.kind == FINISHED for event in stored):
            return None
        row = self._reader.run(run_id)
        if row is None or row.status not in RUNNING:
            return None
        now = time.time()
        debate = stored_debate(row, stored, now)
        if debate is None:
            return None
        return RunData("debate", run_id, status=debate.status, live=debate.view(now))

    def changes(self, since: float) -> list[Change]:
        appended = self._reader.appended_since(since, KINDS)
        found = [
            Change(a.time, a.run_kind, a.run_id, a.seq, a.kind)
            for a in appended
            if RUN_ID.fullmatch(a.run_id)
        ]
        return found + self._gone_since(since)

    def _gone_since(self, since: float) -> list[Change]:
        """Debates found abandoned since `since`: their process died, and appends nothing more."""
        now, gone = time.time(), []
        for listed in self._reader.runs(("debate",)):
            row = listed.row
            went = runner_gone_at(row, now) if RUN_ID.fullmatch(row.run_id) else None
            if went is not None and went >= since:
                seq = -1 if listed.last_seq is None else listed.last_seq
                gone.append(Change(went, "debate", row.run_id, seq + 1, "abandoned"))
        return gone


def _run_data(
    kind: str,
    run_id: str,
    events: Events,
    times: Sequence[float],
    status: str,
    artifacts: Sequence[Artifact],
) -> RunData:
    if kind == "debate":
        finished = next((d for k, d in events if k == FINISHED), {})
        transcript = finished.get("transcript")
        return RunData(
            kind,
            run_id,
            transcript=expand(transcript) if isinstance(transcript, dict) else {},
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

    def runs(self) -> list[Run]:
        found = []
        for folder in loose_folders(self.path):
            meta = read_json(folder / RUN_FILE, self._warn)
            if meta is None or meta.get("kind") not in KINDS:
                continue
            try:
                stat = (folder / EVENTS_FILE).stat()
            except OSError:
                continue
            run_id, kind, status = folder.name, str(meta["kind"]), str(meta.get("status") or "")
            found.append(
                Run(
                    kind,
                    run_id,
                    status,
                    loose_goal(meta),
                    loose_time(meta.get("created_at")),
                    loose_time(meta.get("updated_at")),
                    f"state:{stat.st_size}:{status}:{meta.get('updated_at')!r}",
                    str(folder),
                    functools.partial(self._load, folder, kind, status, meta),
                )
            )
        return found

    def _load(self, folder: Path, kind: str, status: str, meta: dict[str, Any]) -> RunData:
        read = loose_events(folder)
        events: Events = [(event_kind, data) for event_kind, data, _ in read]
        times = [time for _, _, time in read]
        artifacts = [
            Artifact(
                name,
                size,
                file_reader(folder / ARTIFACTS, sha256),
                artifact_id(folder.name, name, sha256),  # as the store that made it names it
            )
            for name, size, sha256 in loose_artifacts(meta)
        ]
        return _run_data(kind, folder.name, events, times, status, artifacts)

    def changes(self, since: float) -> list[Change]:
        return []  # the state branch is built into a static site, never watched live
