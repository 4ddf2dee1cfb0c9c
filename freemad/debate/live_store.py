"""A debate kept in a store while it runs: the run created before the debate starts, its events
kept as they happen, and how it ended; and the same run read back as a debate in flight.

The GitHub router (the Action and the bot) keeps its debates in a store, not a transcripts folder.
`StoreJournal` is the event sink it hands `run_debate`. It creates the run (status `running`, the
summary naming the process that runs it) and appends each event, redacted, as a journal line
(`freemad.debate.live_journal.journal_line`) in a `debate_event`. A thread of its own writes them, so the
debate's event loop never waits on the store's lock or its fsync; what piled up meanwhile goes in
one transaction; and while the debate waits on its agents and emits nothing, the thread touches
the run every `STORE_HEARTBEAT` seconds. `finish` ends the run with `debate_finished` (the
redacted transcript) and its status; leaving the `with` block without finishing (the debate
raised) ends it `failed` with the error. A process killed mid-debate can say nothing:
`stored_debate` tells such a run from a running one (its process gone from this host, or the run
untouched for `STORE_STALE_AFTER` seconds) and calls it `abandoned`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from freemad.config.load import config_digest
from freemad.config.models import FreemadConfig
from freemad.core.run_events import Event
from freemad.debate.debate_record import DebateResult
from freemad.debate.live_journal import LiveDebate, fold, gone_at, journal_line, writer
from freemad.debate.transcript import transcript_data
from freemad.errors import FreemadError
from freemad.redact import Redactor
from freemad.store.store_port import RunRow, Store, StoredEvent, StoreError

FINISHED = (
    "debate_finished"  # how a debate in a store ends: {"transcript": the redacted transcript}
)
PROGRESS = "debate_event"  # one event of a debate in flight: a journal line
RUNNER = "runner"  # the summary's key naming the process running the debate, while it runs
RUNNING = frozenset({"created", "running"})
STORE_HEARTBEAT = 10.0  # seconds without an event before the run is touched
STORE_STALE_AFTER = 60.0  # a run untouched this long: its process is gone
_GIVE_UP_AFTER = 3  # failed writes in a row before the live view is given up on
_STOP = "stop"

log = logging.getLogger(__name__)


class StoreJournal:
    """The sink that keeps a debate of `config` on `requirement` in `store` as run `run_id`; a
    context manager that creates the run on entry and never leaves it running on exit."""

    def __init__(
        self,
        store: Store,
        config: FreemadConfig,
        run_id: str,
        requirement: str,
        summary: dict[str, Any],
        *,
        heartbeat: float = STORE_HEARTBEAT,
    ) -> None:
        self.store, self.config, self.run_id = store, config, run_id
        self.redactor = Redactor(config.security.redact_patterns)
        self.requirement = requirement
        self.summary: dict[str, Any] = self.redactor.data(summary)
        self.heartbeat = heartbeat
        self.started_at = _now()
        self.finished = False  # the transcript kept and the status set
        self._ended: str | None = None  # the status of the transcript kept, once it is
        self._stopping = False
        self.broken: str | None = None  # why the live view stopped being written, if it did
        self._queue: queue.SimpleQueue[dict[str, Any] | str] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> StoreJournal:
        who = writer(self.heartbeat)
        self.store.create_run(self.run_id, "debate", {**self.summary, RUNNER: who})
        self.store.update_run(self.run_id, status="running")
        self._thread = threading.Thread(
            target=self._writing, name="freemad-live-store", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, raised: BaseException | None, _: Any
    ) -> None:
        if self.finished:
            return
        try:
            if self._ended is not None:  # the transcript is kept; its status was not set
                self.store.update_run(self.run_id, status=self._ended, summary=self.summary)
                return
            why = "the debate ended without a result" if raised is None else _error_of(raised)
            failed = DebateResult(
                run_id=self.run_id,
                status="failed",
                error=why,
                requirement=self.requirement,
                config_digest=config_digest(self.config),
                started_at=self.started_at,
                finished_at=_now(),
            )
            self.finish(failed)
        except StoreError as exc:
            if raised is None:
                raise
            # The debate's own error is the one to raise; the run shows as abandoned once its
            # heartbeat has stopped.
            log.warning("run %s could not be marked failed: %s", self.run_id, exc.one_line())

    def __call__(self, event: Event) -> None:
        # Called on the debate's event loop: redact, hand over, return.
        if self.broken is None and not self._stopping:
            self._queue.put(journal_line(event, self.redactor))

    def finish(self, result: DebateResult) -> dict[str, Any]:
        """End the run: the writer stopped, `debate_finished` with the redacted transcript, the
        result's status, the summary without its runner. The redacted transcript."""
        self._stop()
        kept = transcript_data(result, self.redactor)
        if self._ended is None:
            self.store.append(self.run_id, FINISHED, {"transcript": kept})
            self._ended = result.status
        self.store.update_run(self.run_id, status=result.status, summary=self.summary)
        self.finished = True
        return kept

    def _stop(self) -> None:
        self._stopping = True
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(_STOP)
            # Bounded: a store locked by another process makes the live view late, not the result.
            self._thread.join(timeout=self.heartbeat + 60)

    def _writing(self) -> None:
        pending: list[dict[str, Any]] = []
        failures = 0
        while True:
            try:
                items = [self._queue.get(timeout=self.heartbeat)]
            except queue.Empty:
                items = []
            with contextlib.suppress(queue.Empty):
                while True:
                    items.append(self._queue.get_nowait())
            stopping = _STOP in items
            pending += [_plain(item) for item in items if isinstance(item, dict)]
            try:
                lines = [(PROGRESS, line) for line in pending if line]
                if lines:
                    self.store.append_many(self.run_id, lines)
                elif not stopping:
                    self.store.update_run(self.run_id)  # the heartbeat: updated_at is now
                pending, failures = [], 0
            except FreemadError as exc:  # kept for the next try; given up after a few in a row
                failures += 1
                if failures >= _GIVE_UP_AFTER:
                    self.broken = exc.one_line()
                    log.warning("run %s: live view given up: %s", self.run_id, self.broken)
                    return
            if stopping:
                return


def _plain(line: dict[str, Any]) -> dict[str, Any]:
    """The line as the store takes it (plain JSON); {} when it cannot be (a NaN score)."""
    try:
        value: dict[str, Any] = json.loads(json.dumps(line, default=str, allow_nan=False))
    except (TypeError, ValueError):
        return {}
    return value


def _error_of(raised: BaseException) -> str:
    if isinstance(raised, FreemadError):
        return raised.one_line()
    if isinstance(raised, KeyboardInterrupt):
        return "the debate was interrupted"
    return f"{type(raised).__name__}: {raised}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- reading ------------------------------------------------------------------------------------


def runner_gone_at(row: RunRow, now: float) -> float | None:
    """None unless the run is a debate still said to be running whose process is gone (killed,
    or on another host silent for too long); then about when it went, the same for any reader."""
    if row.status not in RUNNING:
        return None
    who = row.summary.get(RUNNER)
    beat = who.get("heartbeat_sec") if isinstance(who, dict) else None
    beat = float(beat) if isinstance(beat, (int, float)) and beat > 0 else STORE_HEARTBEAT
    return gone_at(who, row.updated_at, now, max(STORE_STALE_AFTER, 3 * beat))


def stored_debate(row: RunRow, events: Sequence[StoredEvent], now: float) -> LiveDebate | None:
    """The debate in flight that the run's events tell of (its status `abandoned` when its process
    is gone); None once it has finished (its transcript is the page then)."""
    if any(event.kind == FINISHED for event in events):
        return None
    debate = fold(row.run_id, [e.data for e in events if e.kind == PROGRESS])
    debate.requirement = debate.requirement or str(row.summary.get("goal") or "")
    debate.started = debate.started or row.created_at
    went = runner_gone_at(row, now)
    if went is not None:
        debate.status = "abandoned"
        debate.updated = max(debate.updated or 0.0, went)
        debate.events += 1
    return debate
