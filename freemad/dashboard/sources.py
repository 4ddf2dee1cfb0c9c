"""Where runs come from: debate transcripts, task and evolve stores, and the GitHub state branch.

Everything here only reads. Stores are opened read-only (`mode=ro`), so a dashboard never
migrates, creates or locks a store a runtime is writing. A file that cannot be read or parsed
is skipped with a warning, never a traceback: one bad transcript does not hide the others.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from freemad.errors import FreemadError

# A run id names a page file: the same characters the stores allow.
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
Events = list[tuple[str, dict[str, Any]]]
Warn = Callable[[str], None]


class SourceError(FreemadError):
    """A source the user named does not exist or is not what it claims to be."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class Artifact:
    name: str
    size: int
    read: Callable[[], bytes | None] = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Run:
    """One run as the index lists it; `load` fetches what its page needs."""

    kind: str  # "debate", "task" or "evolve"
    run_id: str
    status: str
    title: str
    started: float  # Unix seconds
    updated: float
    fingerprint: str  # changes whenever the run's page would
    origin: str  # where it was read from, for messages
    load: Callable[[], RunData] = field(compare=False, repr=False)

    def entry(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "status": self.status,
            "title": self.title,
            "started": self.started,
            "updated": self.updated,
        }


@dataclass(frozen=True, slots=True)
class RunData:
    """What a page is rendered from: a debate's transcript, or a task's or evolve run's events."""

    kind: str
    run_id: str
    transcript: dict[str, Any] | None = None
    events: Sequence[tuple[str, dict[str, Any]]] = ()
    times: Sequence[float] = ()
    status: str = ""
    artifacts: Sequence[Artifact] = ()


@dataclass(frozen=True, slots=True)
class Change:
    """Something new in a run: an appended event, or a transcript written."""

    time: float
    kind: str
    run_id: str
    seq: int
    event: str

    @property
    def id(self) -> str:
        # Sorts as the tuple does; any server process computes the same id for the same change.
        return f"{int(self.time * 1_000_000):017d}.{self.run_id}.{self.seq}"


def parse_change_id(text: str) -> float | None:
    """The time a Last-Event-ID names, or None when it is not one of ours."""
    head = text.strip().split(".", 1)[0]
    return int(head) / 1_000_000 if head.isdigit() and len(head) <= 20 else None


def iso_seconds(text: Any) -> float:
    """Unix seconds from a transcript's ISO time ("2026-11-30T02:21:18.713Z"); 0 if unreadable."""
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


# --- debate transcripts ---------------------------------------------------------------------


class TranscriptDir:
    """A folder of JSON debate transcripts (`freemad run` writes them; markdown ones are skipped)."""

    def __init__(self, path: str | Path, warn: Warn) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise SourceError(f"transcripts folder {self.path} does not exist or is not a folder")
        self._warn = warn
        self._cache: dict[str, tuple[str, Run | None]] = {}  # file name: (stat key, run)
        self._markdown = 0

    def runs(self) -> list[Run]:
        found: list[Run] = []
        markdown = 0
        seen: dict[str, str] = {}
        with os.scandir(self.path) as entries:
            files = sorted(
                (
                    e
                    for e in entries
                    if e.name.endswith((".json", ".md")) and not e.name.startswith(".")
                ),
                key=lambda e: e.name,
            )
        known, cache = self._cache, {}
        for entry in files:
            if entry.name.endswith(".md"):
                markdown += 1
                continue
            try:
                stat = entry.stat()
            except OSError:
                continue
            key = f"{stat.st_mtime_ns}:{stat.st_size}"
            cached = known.get(entry.name)
            run = cached[1] if cached and cached[0] == key else self._read(Path(entry.path), key)
            cache[entry.name] = (key, run)
            if run is None:
                continue
            if run.run_id in seen:
                self._warn(f"{entry.name}: run {run.run_id} is also in {seen[run.run_id]}; skipped")
                continue
            seen[run.run_id] = entry.name
            found.append(run)
        self._cache = cache  # files gone are forgotten; one assignment, so threads see a whole map
        if markdown and markdown != self._markdown:  # said once, not on every poll
            self._markdown = markdown
            self._warn(
                f"{self.path}: {markdown} markdown transcript(s) skipped; pages are built from "
                "JSON transcripts (output.format: json)"
            )
        return found

    def _read(self, path: Path, key: str) -> Run | None:
        data = _read_json(path, self._warn)
        if data is None:
            return None
        run_id = str(data.get("run_id") or "")
        if not RUN_ID.fullmatch(run_id) or not isinstance(data.get("transcript", []), list):
            self._warn(f"{path.name}: not a FREE-MAD debate transcript; skipped")
            return None
        started = iso_seconds(data.get("started_at"))
        entry = {
            "kind": "debate",
            "run_id": run_id,
            "status": str(data.get("status") or "unknown"),
            "title": str(data.get("requirement") or ""),
            "started": started,
            "updated": iso_seconds(data.get("finished_at")) or started,
        }
        return self._run(path, key, entry)

    def _run(self, path: Path, key: str, entry: dict[str, Any]) -> Run:
        def load() -> RunData:
            data = _read_json(path, self._warn) or {}
            return RunData("debate", entry["run_id"], transcript=data, status=entry["status"])

        return Run(
            "debate",
            entry["run_id"],
            entry["status"],
            entry["title"],
            entry["started"],
            entry["updated"],
            f"file:{key}",
            str(path),
            load,
        )

    def export_cache(self) -> dict[str, Any]:
        """What `runs` learnt of each file, for `import_cache` in a later build (JSON-able)."""
        return {name: [key, run.entry()] for name, (key, run) in self._cache.items() if run}

    def import_cache(self, cache: Any) -> None:
        """Files whose size and mtime match a cached entry are listed without being parsed."""
        if not isinstance(cache, dict):
            return
        fields = {"kind", "run_id", "status", "title", "started", "updated"}
        for name, item in cache.items():
            if (
                isinstance(item, list)
                and len(item) == 2
                and isinstance(item[1], dict)
                and set(item[1]) == fields
                and RUN_ID.fullmatch(str(item[1]["run_id"]))
                and "/" not in name
            ):
                self._cache[name] = (
                    str(item[0]),
                    self._run(self.path / name, str(item[0]), item[1]),
                )

    def changes(self, since: float) -> list[Change]:
        """A transcript written (or copied in) since `since`, by its file's modification time:
        the same for every process that reads the folder."""
        self.runs()
        out = []
        for key, run in list(self._cache.values()):
            written = int(key.split(":", 1)[0]) / 1e9
            if run is not None and written >= since:
                out.append(Change(written, "debate", run.run_id, 0, "debate_finished"))
        return out


def _read_json(path: Path, warn: Warn) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_bytes())
    except OSError as exc:
        warn(f"{path.name}: cannot read: {exc.strerror or exc}; skipped")
        return None
    except (ValueError, RecursionError):
        warn(f"{path.name}: not valid JSON; skipped")
        return None
    if not isinstance(data, dict):
        warn(f"{path.name}: not a FREE-MAD debate transcript; skipped")
        return None
    return data


# --- SQLite stores ----------------------------------------------------------------------------


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
        events = [(k, _object(d)) for _, k, d in rows]
        times = [t for t, _, _ in rows]
        artifacts = [Artifact(n, s, _file_reader(self.artifacts_dir, p)) for n, s, p in arts]
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


def _object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _file_reader(folder: Path, relative: str) -> Callable[[], bytes | None]:
    def read() -> bytes | None:
        target = (folder / relative).resolve()
        if not target.is_relative_to(folder.resolve()):
            return None
        try:
            return target.read_bytes()
        except OSError:
            return None

    return read


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


# --- the GitHub state branch, checked out -----------------------------------------------------


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
            meta = _read_json(folder / "run.json", self._warn)
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
            record = _object(line)
            if isinstance(record.get("kind"), str) and isinstance(record.get("data"), dict):
                events.append((record["kind"], record["data"]))
                times.append(_number(record.get("time")))
        artifacts = [
            Artifact(
                str(a.get("name")),
                int(a.get("size") or 0),
                _file_reader(folder / "artifacts", str(a.get("sha256"))),
            )
            for a in meta.get("artifacts") or []
            if isinstance(a, dict) and re.fullmatch(r"[0-9a-f]{64}", str(a.get("sha256")))
        ]
        return _run_data(kind, folder.name, events, times, status, artifacts)

    def changes(self, since: float) -> list[Change]:
        return []  # the state branch is built into a static site, never watched live


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


class Later:
    """A source named before it exists (no debate, task or evolve run has happened there yet):
    no runs until it appears, then the source itself. A dashboard started first picks it up."""

    def __init__(self, what: str, path: Path, make: Callable[[], Source]) -> None:
        self.what, self.path, self._make = what, path, make
        self._source: Source | None = None

    def _found(self) -> Source | None:
        if self._source is None and self.path.exists():
            self._source = self._make()
        return self._source

    def runs(self) -> list[Run]:
        source = self._found()
        return [] if source is None else source.runs()

    def changes(self, since: float) -> list[Change]:
        source = self._found()
        return [] if source is None else source.changes(since)


Source = TranscriptDir | StoreSource | StateDir | Later


def build_sources(
    *,
    transcripts: str | None = None,
    task_store: str | None = None,
    evolve_store: str | None = None,
    state_dir: str | None = None,
    warn: Warn,
    say_missing: bool = True,
) -> list[Source]:
    """The sources named. One that does not exist yet is read once it does (with a warning
    now, unless not `say_missing`); one that exists but is not what it should be is a
    SourceError (one line)."""
    named: list[tuple[str, str | None, Callable[[str], Source]]] = [
        ("transcripts folder", transcripts, lambda p: TranscriptDir(p, warn)),
        ("task store", task_store, lambda p: StoreSource(p, warn)),
        ("evolve store", evolve_store, lambda p: StoreSource(p, warn)),
        ("state folder", state_dir, lambda p: StateDir(p, warn)),
    ]
    sources: list[Source] = []
    for what, path, make in named:
        if not path:
            continue
        if Path(path).exists():
            sources.append(make(path))
        else:
            if say_missing:
                warn(f"{what} {path} does not exist yet: no runs from it until it does")
            sources.append(Later(what, Path(path), functools.partial(make, path)))
    return sources


def all_runs(sources: Sequence[Source]) -> list[Run]:
    """Every run of every source, newest first; a run id seen twice keeps its first source."""
    runs: dict[str, Run] = {}
    for source in sources:
        for run in source.runs():
            runs.setdefault(run.run_id, run)
    return sorted(runs.values(), key=lambda r: (-r.started, r.run_id))
