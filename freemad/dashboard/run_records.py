"""What the dashboards know of a run, whichever source it came from, and the small readers the
sources share. A file that cannot be read or parsed is skipped with a warning, never a
traceback: one bad transcript does not hide the others.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from freemad.errors import FreemadError

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
    ident: str = ""  # the store's artifact id, as events name it ("" when unknown)


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
    # What the index shows beside the entry (outcome, seconds, agents: `render.facts_of`), when
    # the listing knows it already (a transcript's); None: from its data (`IndexFacts`).
    facts: dict[str, Any] | None = field(default=None, compare=False)

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
    live: dict[str, Any] | None = None  # a debate in flight: `freemad.debate.live_journal`'s view


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


def read_json(path: Path, warn: Warn) -> dict[str, Any] | None:
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


def file_reader(folder: Path, relative: str) -> Callable[[], bytes | None]:
    def read() -> bytes | None:
        target = (folder / relative).resolve()
        if not target.is_relative_to(folder.resolve()):
            return None
        try:
            return target.read_bytes()
        except OSError:
            return None

    return read


def unique_name(base: str, taken: set[str]) -> str:
    """`base`, else `base-2`, `base-3`, ...: the first not in `taken`, which it is added to (the
    names of the configs and the evaluations a server was started with)."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name
