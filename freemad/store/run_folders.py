"""Run folders: the event log as files, the format of the GitHub state branch (and of a checkout).

    runs/<run_id>/run.json            {run_id, kind, status, created_at, updated_at, summary,
                                       issue: {repo, number} | null, artifacts: [{name, sha256, size}]}
    runs/<run_id>/events.jsonl        one {"seq", "time", "kind", "data"} per line, only ever appended
    runs/<run_id>/artifacts/<sha256>  an artifact's bytes

Two readers of the one layout live here. `parse_folder` is strict: the GitHub layer
(`freemad.github.state_branch`) builds on the branch, so anything FREE-MAD would not have written is
`CorruptFolder`. The `loose_*` functions read a checkout as far as it can be read, for the
dashboards, which show what they can and skip the rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from freemad.store.store_port import RUN_ID, StoredEvent, StoreError

RUNS = "runs"
RUN_FILE = "run.json"
EVENTS_FILE = "events.jsonl"
ARTIFACTS = "artifacts"
SHA256 = r"[0-9a-f]{64}"
_M = TypeVar("_M", bound=BaseModel)


class CorruptFolder(StoreError):
    """A file of a run folder is not what FREE-MAD writes there."""


def folder_of(run_id: str) -> str:
    """The run's folder, relative to the top of the branch."""
    return f"{RUNS}/{run_id}"


def run_file_of(run_id: str) -> str:
    return f"{folder_of(run_id)}/{RUN_FILE}"


def events_file_of(run_id: str) -> str:
    return f"{folder_of(run_id)}/{EVENTS_FILE}"


def artifact_file_of(run_id: str, sha256: str) -> str:
    return f"{folder_of(run_id)}/{ARTIFACTS}/{sha256}"


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True)  # unknown fields (a newer writer's) pass


class IssueRef(_Strict):
    """The issue or pull request a run belongs to: `repo` is "owner/name"."""

    repo: str
    number: int


class ArtifactEntry(_Strict):
    name: str
    sha256: str = Field(pattern=f"^{SHA256}$")
    size: int


class RunFile(_Strict):
    """runs/<run_id>/run.json: the run's row, its issue and its artifacts' names."""

    run_id: str
    kind: str
    status: str
    created_at: float
    updated_at: float
    summary: dict[str, Any]
    issue: IssueRef | None = None
    artifacts: list[ArtifactEntry] = []


class EventLine(_Strict):
    """One line of runs/<run_id>/events.jsonl."""

    seq: int
    time: float
    kind: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RunFolder:
    """A run folder as read: its run.json, and its events.jsonl as bytes and as lines."""

    meta: RunFile
    events_text: bytes
    events: list[EventLine]


# The strict reader and the writer's lines


def parse_folder(run_id: str, meta: bytes | None, events: bytes | None, where: str) -> RunFolder:
    """The folder of `run_id` from its two files' bytes (None: absent); `where` names the copy
    ("origin/freemad-state") in a CorruptFolder's message."""
    place = folder_of(run_id)
    if not RUN_ID.fullmatch(run_id) or meta is None:
        raise CorruptFolder(f"{place} on {where} is not a run folder: it has no {RUN_FILE}")
    parsed = _validated(RunFile, meta, f"{place}/{RUN_FILE} on {where}")
    if parsed.run_id != run_id:
        raise CorruptFolder(f"{place}/{RUN_FILE} on {where} names another run, {parsed.run_id}")
    text = events or b""
    if text and not text.endswith(b"\n"):
        raise CorruptFolder(f"{place}/{EVENTS_FILE} on {where} does not end with a newline")
    lines = []
    for number, line in enumerate(text.split(b"\n")[:-1], start=1):
        at = f"{place}/{EVENTS_FILE} on {where}, line {number}"
        event = _validated(EventLine, line, at)
        if event.seq != number - 1:
            raise CorruptFolder(f"{at}: seq is {event.seq}, not {number - 1}")
        lines.append(event)
    return RunFolder(parsed, text, lines)


def _validated(model: type[_M], text: bytes, place: str) -> _M:
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in first["loc"])
        raise CorruptFolder(f"{place}: {field + ': ' if field else ''}{first['msg']}") from None


def issue_of(summary: dict[str, Any]) -> IssueRef | None:
    """The issue a run's summary names (summary["issue"]: {"repo": "o/r", "number": 12}), if any."""
    try:
        return IssueRef.model_validate(summary.get("issue"))
    except ValidationError:
        return None


def run_file_bytes(meta: RunFile) -> bytes:
    """run.json as FREE-MAD writes it."""
    return (meta.model_dump_json(indent=2) + "\n").encode()


def event_line(event: StoredEvent) -> bytes:
    """One line of events.jsonl as FREE-MAD writes it."""
    line = {"seq": event.seq, "time": event.time, "kind": event.kind, "data": event.data}
    text = json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text + "\n").encode()


# The loose reader of a checkout


def loose_folders(checkout: Path) -> Iterator[Path]:
    """The run folders of a checkout, by name; a name no store would give a run is passed over."""
    runs = checkout / RUNS
    if runs.is_dir():
        yield from sorted(p for p in runs.iterdir() if p.is_dir() and RUN_ID.fullmatch(p.name))


def loose_time(value: Any) -> float:
    """A time field of run.json as Unix seconds; 0.0 when it is not a number."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def loose_goal(meta: Mapping[str, Any]) -> str:
    """The goal in run.json's summary, or ""."""
    summary = meta.get("summary")
    goal = summary.get("goal") if isinstance(summary, dict) else None
    return str(goal or "")


def loose_artifacts(meta: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    """(name, size, sha256) of each artifact run.json lists with a well-formed sha256."""
    return [
        (str(a.get("name")), int(a.get("size") or 0), str(a.get("sha256")))
        for a in meta.get("artifacts") or []
        if isinstance(a, dict) and re.fullmatch(SHA256, str(a.get("sha256")))
    ]


def loose_events(folder: Path) -> list[tuple[str, dict[str, Any], float]]:
    """(kind, data, time) of each line of the folder's events.jsonl that has a kind and data;
    no events when the file cannot be read."""
    try:
        lines = (folder / EVENTS_FILE).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    events = []
    for line in lines:
        record = _json_object(line)
        if isinstance(record.get("kind"), str) and isinstance(record.get("data"), dict):
            events.append((record["kind"], record["data"], loose_time(record.get("time"))))
    return events


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
