"""Where runs come from: debate transcripts, task and evolve stores, and the GitHub state branch.

Everything here only reads. `TranscriptDir` is a folder of debate transcripts; the stores and the
state branch are in `freemad.dashboard.reading.stored_runs`; `build_sources` makes the sources a command
names, and `all_runs` lists every run of them.
"""

from __future__ import annotations

import enum
import functools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from freemad.dashboard.reading.failed_starts import FailedStarts
from freemad.dashboard.reading.reference_transcripts import (
    from_reference,
    is_reference_transcript,
    started_at,
)
from freemad.dashboard.reading.stored_runs import StateDir, StoreSource
from freemad.dashboard.run_records import (
    Artifact,
    Change,
    Run,
    RunData,
    SourceError,
    Warn,
    iso_seconds,
    parse_change_id,
    read_json,
)
from freemad.dashboard.views.agent_views import run_record
from freemad.dashboard.views.run_views import debate_facts, facts_of
from freemad.debate.live_journal import LiveDebate, read_journal, running_dir
from freemad.debate.transcript_format import expand
from freemad.errors import FreemadError
from freemad.store.store_port import RUN_ID  # a run id names a page file: the stores' rule serves


class TranscriptDir:
    """A folder of JSON debate transcripts (`freemad run` writes them; markdown ones are skipped)."""

    def __init__(self, path: str | Path, warn: Warn) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise SourceError(f"transcripts folder {self.path} does not exist or is not a folder")
        self._warn = warn
        self._cache: dict[str, tuple[str, Run | None]] = {}  # file name: (stat key, run)
        self._failures = FailedStarts(self.path)  # why started debates failed (`failed_starts`)
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
        found.extend(self._running(seen))
        if markdown and markdown != self._markdown:  # said once, not on every poll
            self._markdown = markdown
            self._warn(
                f"{self.path}: {markdown} markdown transcript(s) skipped; pages are built from "
                "JSON transcripts (output.format: json)"
            )
        return found

    def _running(self, finished: Mapping[str, str]) -> list[Run]:
        """The debates in flight (their journals in `.running/`), but for those whose transcript
        is written already."""
        folder = running_dir(self.path)
        try:
            journals = sorted(folder.glob("*.jsonl"))
        except OSError:
            return []
        found = []
        for path in journals:
            run_id = path.name.removesuffix(".jsonl")
            if run_id in finished or not RUN_ID.fullmatch(run_id):
                continue
            debate = read_journal(path)
            if debate is None:
                continue
            # Stopped by the dashboard that started it (its time was up): it kept why.
            why = self._failures.reason(run_id) if debate.status == "abandoned" else None
            found.append(_live_run(path, debate, why))
        return found

    def _read(self, path: Path, key: str) -> Run | None:
        data = _transcript(path, self._warn)
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
        return self._run(path, key, entry, debate_facts(data))

    def _run(self, path: Path, key: str, entry: dict[str, Any], facts: dict[str, Any]) -> Run:
        def load() -> RunData:
            data = _transcript(path, self._warn) or {}
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
            facts,
        )

    def export_cache(self) -> dict[str, Any]:
        """What `runs` learnt of each file, for `import_cache` in a later build (JSON-able)."""
        return {
            name: [key, run.entry(), run.facts] for name, (key, run) in self._cache.items() if run
        }

    def import_cache(self, cache: Any) -> None:
        """Files whose size and mtime match a cached entry are listed without being parsed."""
        if not isinstance(cache, dict):
            return
        fields = {"kind", "run_id", "status", "title", "started", "updated"}
        for name, item in cache.items():
            if (
                isinstance(item, list)
                and len(item) == 3
                and isinstance(item[1], dict)
                and isinstance(item[2], dict)
                and set(item[1]) == fields
                and RUN_ID.fullmatch(str(item[1]["run_id"]))
                and "/" not in name
            ):
                self._cache[name] = (
                    str(item[0]),
                    self._run(self.path / name, str(item[0]), item[1], item[2]),
                )

    def changes(self, since: float) -> list[Change]:
        """A transcript written (or copied in) since `since`, by its file's modification time:
        the same for every process that reads the folder; and a debate in flight whose journal
        grew since then (or whose process is found gone); and a debate started from the
        dashboard that failed, keeping nothing (`failed_starts`)."""
        out = []
        for run in self.runs():
            if run.fingerprint.startswith("live:") and run.updated >= since:
                _, seq, _ = run.fingerprint.split(":", 2)
                out.append(Change(run.updated, "debate", run.run_id, int(seq), run.status))
        for key, cached in list(self._cache.values()):
            written = int(key.split(":", 1)[0]) / 1e9
            if cached is not None and written >= since:
                out.append(Change(written, "debate", cached.run_id, 0, "debate_finished"))
        for written, run_id in self._failures.since(since):
            out.append(Change(written, "debate", run_id, 0, "debate_failed"))
        return out


def _live_run(path: Path, debate: LiveDebate, why: str | None = None) -> Run:
    """A debate in flight as the index lists it; its page is read from the journal again.
    `why`: what stopped an abandoned one, as the dashboard that started it kept it."""

    def load() -> RunData:
        again = read_journal(path) or debate
        view = again.view(time.time())
        if why is not None and again.status == "abandoned":
            view = {**view, "stopped_because": why}
        return RunData("debate", debate.run_id, status=again.status, live=view)

    started = debate.started or 0.0
    return Run(
        "debate",
        debate.run_id,
        debate.status,
        debate.requirement,
        started,
        debate.updated or started,
        f"live:{debate.events}:{debate.status}" + (":why" if why is not None else ""),
        str(path),
        load,
    )


def _transcript(path: Path, warn: Warn) -> dict[str, Any] | None:
    """A transcript file as ours; one the reference implementation wrote is read as ours too."""
    data = read_json(path, warn)
    if data is not None and is_reference_transcript(data):
        return from_reference(data, path.stem, started_at(path.stem))
    return None if data is None else expand(data)  # format 2 (each answer once) as the full shape


class SourceKind(enum.Enum):
    """What a source is; its value is how messages name it."""

    TRANSCRIPTS = "transcripts folder"
    TASK_STORE = "task store"
    EVOLVE_STORE = "evolve store"
    STATE_FOLDER = "state folder"
    EVAL_TRANSCRIPTS = "evaluation transcripts folder"


class Later:
    """A source named before it exists (no debate, task or evolve run has happened there yet):
    no runs until it appears, then the source itself. A dashboard started first picks it up."""

    def __init__(self, kind: SourceKind, path: Path, make: Callable[[], Source]) -> None:
        self.kind, self.path, self._make = kind, path, make
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


def is_transcripts_folder(source: Source) -> bool:
    """Whether `source` is a transcripts folder given as a source (there yet or not), never an
    evaluation's: the folder debates started here are written into, and deleted from."""
    if isinstance(source, Later):
        return source.kind is SourceKind.TRANSCRIPTS
    return isinstance(source, TranscriptDir)


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
    named: list[tuple[SourceKind, str | None, Callable[[str], Source]]] = [
        (SourceKind.TRANSCRIPTS, transcripts, lambda p: TranscriptDir(p, warn)),
        (SourceKind.TASK_STORE, task_store, lambda p: StoreSource(p, warn)),
        (SourceKind.EVOLVE_STORE, evolve_store, lambda p: StoreSource(p, warn)),
        (SourceKind.STATE_FOLDER, state_dir, lambda p: StateDir(p, warn)),
    ]
    sources: list[Source] = []
    for kind, path, make in named:
        if not path:
            continue
        if Path(path).exists():
            sources.append(make(path))
        else:
            if say_missing:
                warn(f"{kind.value} {path} does not exist yet: no runs from it until it does")
            sources.append(Later(kind, Path(path), functools.partial(make, path)))
    return sources


def all_runs(sources: Sequence[Source]) -> list[Run]:
    """Every run of every source, newest first; a run id seen twice keeps its first source."""
    runs: dict[str, Run] = {}
    for source in sources:
        for run in source.runs():
            runs.setdefault(run.run_id, run)
    return sorted(runs.values(), key=lambda r: (-r.started, r.run_id))


# A run that cannot be read (a store's errors are FreemadErrors) or made sense of shows no facts.
_FACT_ERRORS = (
    FreemadError,
    OSError,
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    RecursionError,
)


class RunMemo:
    """Something read from each run's data once per fingerprint and remembered (`export` and
    `import_` carry it from one site build to the next); runs gone are forgotten."""

    def __init__(self, read: Callable[[Run], dict[str, Any]]) -> None:
        self._read = read
        self._known: dict[str, tuple[str, dict[str, Any]]] = {}  # run id: (fingerprint, value)

    def of(self, runs: Sequence[Run]) -> list[dict[str, Any]]:
        known, fresh = self._known, {}
        for run in runs:
            cached = known.get(run.run_id)
            value = cached[1] if cached and cached[0] == run.fingerprint else self._read(run)
            fresh[run.run_id] = (run.fingerprint, value)
        self._known = fresh  # one assignment, so threads see a whole map
        return [fresh[run.run_id][1] for run in runs]

    def export(self) -> dict[str, Any]:
        return {
            run_id: [fingerprint, value] for run_id, (fingerprint, value) in self._known.items()
        }

    def import_(self, cache: Any) -> None:
        if isinstance(cache, dict):
            self._known = {
                str(run_id): (str(item[0]), item[1])
                for run_id, item in cache.items()
                if isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict)
            }


class IndexFacts(RunMemo):
    """The index's rows: each run's entry with its outcome, seconds and agents (`facts_of`).

    A transcript's facts come with its listing; another run's are read from its data once per
    fingerprint and remembered. A run that cannot be read shows none, and the rest still do.
    """

    def __init__(self) -> None:
        super().__init__(_facts)

    def entries(self, runs: Sequence[Run]) -> list[dict[str, Any]]:
        read = iter(self.of([run for run in runs if run.facts is None]))
        return [
            {**run.entry(), **(run.facts if run.facts is not None else next(read))} for run in runs
        ]


def agent_records() -> RunMemo:
    """Each run's `run_record` (what its agents did), read once per fingerprint: what the agents
    pages add up. A run that cannot be read adds nothing."""
    return RunMemo(_agent_record)


def _agent_record(run: Run) -> dict[str, Any]:
    try:
        return run_record(run.load(), run.started)  # a debate in flight: nothing until it ends
    except _FACT_ERRORS:
        return {}


def _facts(run: Run) -> dict[str, Any]:
    try:
        return facts_of(run.load())
    except _FACT_ERRORS:
        return {}


__all__ = [
    "RUN_ID",
    "Artifact",
    "Change",
    "IndexFacts",
    "Later",
    "Run",
    "RunData",
    "RunMemo",
    "Source",
    "SourceError",
    "StateDir",
    "StoreSource",
    "TranscriptDir",
    "agent_records",
    "all_runs",
    "build_sources",
    "iso_seconds",
    "parse_change_id",
]
