"""A debate in flight, on disk: its events as they happen, for the dashboards to show it live.

`LiveJournal` is an event sink a surface hands `run_debate`: it appends each event (redacted, as a
transcript is) as one JSON line to `<transcript_dir>/.running/<run_id>.jsonl`, and keeps a
heartbeat file beside it, `<run_id>.alive`, touched every `HEARTBEAT` seconds by a thread of its
own (a debate can wait minutes on an agent and emit nothing). Closing it removes both: by then the
transcript is written, and the dashboard shows that instead. A process killed mid-debate leaves
them behind; `read_journal` tells such a run from a running one (its process is gone from this
host, or its heartbeat stopped) so that a page never says "running" for ever.

`fold` is the one reader of the format: it folds the lines into a `LiveDebate` (the rounds so
far, each agent's state in them, the scores after each round); `read_journal` reads a journal file
with it, and `freemad.debate.live_store` the same lines kept as a store's events (the debates the
GitHub Action and bot run).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freemad.core.run_events import Event
from freemad.redact import Redactor

RUNNING_DIR = ".running"  # inside the transcripts folder
HEARTBEAT = 2.0  # seconds between touches of the .alive file
STALE_AFTER = 30.0  # a heartbeat older than this: the debate's process is gone
MAX_JOURNAL_BYTES = 8 * 1024 * 1024  # a reader reads no more of a journal than this


def running_dir(transcript_dir: str | Path) -> Path:
    return Path(transcript_dir) / RUNNING_DIR


def journal_line(event: Event, redactor: Redactor) -> dict[str, Any]:
    """One event as a journal keeps it (a line of the file, or a store event's data): redacted."""
    return {
        "seq": event.seq,
        "time": event.time,
        "kind": event.kind,
        "data": redactor.data(event.data),
    }


def writer(heartbeat: float) -> dict[str, Any]:
    """Who writes a journal, for a reader to tell whether it still does: this process, this host,
    and how often it beats."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "heartbeat_sec": heartbeat}


class LiveJournal:
    """The sink that writes a debate's journal; a context manager that removes it on exit."""

    def __init__(
        self, transcript_dir: str | Path, redactor: Redactor, heartbeat: float = HEARTBEAT
    ) -> None:
        self.folder = running_dir(transcript_dir)
        self.redactor = redactor
        self.heartbeat = heartbeat
        self.path: Path | None = None
        self.alive: Path | None = None
        self._writing: Path | None = None
        self._handle: Any = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self.broken: str | None = None  # why the journal stopped being written, if it did

    def __enter__(self) -> LiveJournal:
        return self

    def __exit__(self, *raised: object) -> None:
        self.close()

    def __call__(self, event: Event) -> None:
        # A journal that cannot be written costs the dashboard its live view, never the debate.
        if self.broken is not None:
            return
        try:
            text = json.dumps(journal_line(event, self.redactor), default=str) + "\n"
            if self._handle is None:
                self._open(event.run_id, text)
            else:
                self._handle.write(text)
                self._handle.flush()
        except (OSError, ValueError) as exc:
            self.broken = str(exc)
            self.close()

    def _open(self, run_id: str, first: str) -> None:
        """The heartbeat first, then the journal, put in place with its first line: a reader
        never finds a journal without either."""
        self.path = self.folder / f"{run_id}.jsonl"
        self.alive = self.folder / f"{run_id}.alive"
        self._writing = self.folder / f".{run_id}.jsonl.tmp"
        who = writer(self.heartbeat)
        for attempt in range(3):
            self.folder.mkdir(parents=True, exist_ok=True)
            try:
                self.alive.write_text(json.dumps(who), encoding="utf-8")
                break
            except FileNotFoundError:  # the last debate to end removed the folder just now
                if attempt == 2:
                    raise
        self._handle = self._writing.open("w", encoding="utf-8")
        self._handle.write(first)
        self._handle.flush()
        os.replace(self._writing, self.path)
        self._beat = threading.Thread(target=self._beating, name="freemad-live", daemon=True)
        self._beat.start()

    def _beating(self) -> None:
        while not self._stop.wait(self.heartbeat):
            if self.alive is not None:
                with contextlib.suppress(OSError):
                    os.utime(self.alive)

    def close(self) -> None:
        """Stop the heartbeat and remove the journal: the debate is over."""
        self._stop.set()
        if self._beat is not None and self._beat is not threading.current_thread():
            self._beat.join(timeout=5)
        if self._handle is not None:
            with contextlib.suppress(OSError, ValueError):
                self._handle.close()
            self._handle = None
        for path in (self.path, self.alive, self._writing):
            if path is not None:
                with contextlib.suppress(OSError):
                    path.unlink()
        if self.path is not None:
            with contextlib.suppress(OSError):  # not empty: another debate is running
                self.folder.rmdir()


# --- reading ------------------------------------------------------------------------------------


@dataclass
class AgentState:
    """One agent in one round, as far as the journal goes."""

    agent: str
    state: str = "waiting"  # waiting, working, ok, failed, cut, ...
    started: float | None = None
    finished: float | None = None
    duration_ms: int | None = None
    cause: str | None = None
    action: str | None = None  # known once the round is scored
    answer_id: str | None = None


@dataclass
class LiveRound:
    round: int
    type: str
    agents: dict[str, AgentState] = field(default_factory=dict)
    scores: dict[str, float] | None = None  # after the round: the running Free-MAD score
    deadline_hit_soft: bool = False
    deadline_hit_hard: bool = False


@dataclass
class LiveDebate:
    """A debate folded from its journal."""

    run_id: str
    requirement: str = ""
    agents: list[str] = field(default_factory=list)
    rounds_planned: int = 0
    started: float | None = None
    updated: float | None = None
    rounds: list[LiveRound] = field(default_factory=list)
    finished: bool = False
    status: str = "running"  # running, or abandoned when its process is gone
    events: int = 0
    finalizer: AgentState | None = None  # debate.finalizer's call, once it has started

    def view(self, now: float) -> dict[str, Any]:
        """What a page or the API shows: plain data, elapsed times as of `now`."""

        def agent(a: AgentState) -> dict[str, Any]:
            elapsed = (
                a.duration_ms / 1000
                if a.duration_ms is not None
                else (now - a.started if a.started is not None else None)
            )
            return {
                "agent": a.agent,
                "state": a.state,
                "elapsed_sec": round(elapsed, 1) if elapsed is not None else None,
                "cause": a.cause,
                "action": a.action,
                "answer_id": a.answer_id,
            }

        # An abandoned debate's clock stopped with its last sign of life.
        end = self.updated if self.status == "abandoned" else now
        elapsed = end - self.started if self.started is not None and end is not None else None
        return {
            "run_id": self.run_id,
            "status": self.status,
            "elapsed_sec": round(max(elapsed, 0.0), 1) if elapsed is not None else None,
            "requirement": self.requirement,
            "agents": list(self.agents),
            "rounds_planned": self.rounds_planned,
            "finalizer": agent(self.finalizer) if self.finalizer is not None else None,
            "rounds": [
                {
                    "round": r.round,
                    "type": r.type,
                    "agents": [agent(a) for a in r.agents.values()],
                    "scores": r.scores,
                    "deadline_hit_soft": r.deadline_hit_soft,
                    "deadline_hit_hard": r.deadline_hit_hard,
                }
                for r in self.rounds
            ],
        }


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def fold(run_id: str, lines: list[dict[str, Any]]) -> LiveDebate:
    """The debate the journal's lines tell of; lines it does not know are skipped."""
    debate = LiveDebate(run_id)
    for line in lines:
        kind, data, at = line.get("kind"), line.get("data"), _number(line.get("time"))
        if not isinstance(kind, str) or not isinstance(data, dict):
            continue
        debate.events += 1
        debate.updated = at if at is not None else debate.updated
        step = _STEPS.get(kind)
        if step is not None:
            step(debate, data, at)
    return debate


def _run_started(debate: LiveDebate, data: dict[str, Any], at: float | None) -> None:
    debate.started = at
    debate.requirement = str(data.get("requirement") or "")
    debate.agents = [a for a in data.get("agents") or [] if isinstance(a, str)]
    planned = data.get("rounds")
    debate.rounds_planned = planned if isinstance(planned, int) else 0


def _round_started(debate: LiveDebate, data: dict[str, Any], at: float | None) -> None:
    if not isinstance(data.get("round"), int):
        return
    names = data.get("agents") or debate.agents
    started = LiveRound(data["round"], str(data.get("type") or ""))
    started.agents = {a: AgentState(a) for a in names if isinstance(a, str)}
    debate.rounds.append(started)


def _agent(debate: LiveDebate, data: dict[str, Any]) -> AgentState | None:
    if not debate.rounds:
        return None
    name = str(data.get("agent") or "")
    return debate.rounds[-1].agents.setdefault(name, AgentState(name))


def _agent_started(debate: LiveDebate, data: dict[str, Any], at: float | None) -> None:
    agent = _agent(debate, data)
    if agent is not None:
        agent.state, agent.started = "working", at


def _agent_finished(debate: LiveDebate, data: dict[str, Any], at: float | None) -> None:
    agent = _agent(debate, data)
    if agent is None:
        return
    agent.state, agent.finished = str(data.get("status") or "finished"), at
    duration = data.get("duration_ms")
    agent.duration_ms = duration if isinstance(duration, int) else None
    agent.cause = _text(data.get("cause"))


def _round_finished(debate: LiveDebate, data: dict[str, Any], at: float | None) -> None:
    if not debate.rounds:
        return
    done = debate.rounds[-1]
    scores = data.get("scores")
    if isinstance(scores, dict):
        done.scores = {str(k): float(v) for k, v in scores.items() if _number(v) is not None}
    done.deadline_hit_soft = bool(data.get("deadline_hit_soft"))
    done.deadline_hit_hard = bool(data.get("deadline_hit_hard"))
    turns = data.get("turns")
    for name, turn in (turns if isinstance(turns, dict) else {}).items():
        if isinstance(turn, dict) and name in done.agents:
            done.agents[name].action = _text(turn.get("action"))
            done.agents[name].answer_id = _text(turn.get("answer_id"))


def _run_finished(debate: LiveDebate, data: dict[str, Any], at: float | None) -> None:
    debate.finished = True


def _finalizer_started(debate: LiveDebate, data: dict[str, Any], at: float | None) -> None:
    debate.finalizer = AgentState(str(data.get("agent") or ""), "working", started=at)


def _finalizer_finished(debate: LiveDebate, data: dict[str, Any], at: float | None) -> None:
    if debate.finalizer is None:
        return
    done = debate.finalizer
    done.state, done.finished = str(data.get("status") or "finished"), at
    duration = data.get("duration_ms")
    done.duration_ms = duration if isinstance(duration, int) else None
    done.cause = _text(data.get("cause"))


_STEPS: dict[str, Callable[[LiveDebate, dict[str, Any], float | None], None]] = {
    "run_started": _run_started,
    "round_started": _round_started,
    "agent_started": _agent_started,
    "agent_finished": _agent_finished,
    "round_finished": _round_finished,
    "run_finished": _run_finished,
    "finalizer_started": _finalizer_started,
    "finalizer_finished": _finalizer_finished,
}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def read_journal(path: Path, now: float | None = None) -> LiveDebate | None:
    """The debate in `path` (a `.running/<run_id>.jsonl`), None when it is no journal; its status
    `abandoned` when the process that wrote it is gone."""
    run_id = path.name.removesuffix(".jsonl")
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_JOURNAL_BYTES)
    except OSError:
        return None
    lines = []
    for chunk in raw.splitlines():
        with contextlib.suppress(ValueError):
            value = json.loads(chunk)
            if isinstance(value, dict):
                lines.append(value)
    debate = fold(run_id, lines)
    if debate.started is None:
        return None
    gone_at = _gone_at(path.with_suffix(".alive"), time.time() if now is None else now)
    if gone_at is not None:
        # Dated when it went (its last heartbeat, plus the wait that told), the same for every
        # reader: a dashboard's feed passes it on once, and the page stops saying "running".
        debate.status = "abandoned"
        debate.updated = max(debate.updated or 0.0, gone_at)
        debate.events += 1
    return debate


def _gone_at(heartbeat: Path, now: float) -> float | None:
    """When the journal's writer went (None while it is alive), by its heartbeat file."""
    try:
        touched = heartbeat.stat().st_mtime
        who = json.loads(heartbeat.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return now
    return gone_at(who, touched, now, STALE_AFTER)


def gone_at(who: Any, touched: float, now: float, stale_after: float) -> float | None:
    """None while a journal's writer (`who`, as `writer` said it) is alive: its heartbeat, last
    at `touched`, fresh and, on this host, its process there; else about when it went."""
    if not isinstance(who, dict):
        return now
    if now - touched > stale_after:
        return touched + stale_after
    pid, beat = who.get("pid"), _number(who.get("heartbeat_sec")) or HEARTBEAT
    if who.get("host") == socket.gethostname() and isinstance(pid, int) and pid > 0:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return touched + beat
        except PermissionError:
            return None
    return None
