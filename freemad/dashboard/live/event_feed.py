"""The stream of changes behind `/events`: polled from the sources, sent as Server-Sent Events.

Every process polls its sources once per interval however many streams it has open (`Feed`), and
each stream (`stream`) sends the changes it has not sent yet. Change ids (`Change.id`) are the
same in every process and sort in time order, so a browser that reconnects (to any process)
with `Last-Event-ID` is sent everything from that time on: the window reaches `SLACK` seconds
further back, for events appended by processes whose clocks differ a little or whose writes
became visible late. A duplicate is possible; a loss is not.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence

from freemad.dashboard.reading.sources import RUN_ID, Change, Source
from freemad.errors import FreemadError

SLACK = 2.0  # seconds: how far back a stream looks beyond what it has already covered
WINDOW = 60.0  # seconds of changes a process keeps in memory for its streams
RETRY_MS = 2000
READ_ERRORS = (FreemadError, OSError)  # a store's failures are StoreErrors (FreemadError)


def stream(
    feed: Feed, resume: float | None, given: str, *, poll_interval: float, heartbeat: float
) -> Iterator[str]:
    """The body of `/events`: a stream that runs until the client goes away.

    Without `resume` it starts from now: what the sources hold when it starts is marked as
    sent without being sent. With `resume` (the time of the client's Last-Event-ID) it
    first sends every change from `resume - SLACK` on, except the one named `given`.
    """
    asked = time.monotonic()
    since = time.time() - SLACK if resume is None else resume - SLACK
    sent: dict[str, float] = {}  # id: time, pruned to what a later poll can return
    if given:
        sent[given] = resume or 0.0
    try:
        found, covered = feed.changes(since, polled_after=asked)
        first = [c for c in found if c.id not in sent]
        sent.update((c.id, c.time) for c in found)
        since = covered - SLACK
        if resume is None:
            first = []  # what was there before the client came is not news to it
        yield f"retry: {RETRY_MS}\n\n" + "".join(format_change(c) for c in first)
        quiet_since = time.monotonic()
        while True:
            time.sleep(poll_interval)
            found, covered = feed.changes(since)
            fresh = [c for c in found if c.id not in sent]
            sent.update((c.id, c.time) for c in fresh)
            since = covered - SLACK
            for old in [i for i, t in sent.items() if t < since]:
                del sent[old]
            if fresh:
                yield "".join(format_change(c) for c in fresh)
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= heartbeat:
                yield ": keepalive\n\n"
                quiet_since = time.monotonic()
    except GeneratorExit:
        return  # the client went away: the server closed us at a yield


class Feed:
    """The changes of the last WINDOW seconds, polled from the sources at most once per interval
    however many streams a process has open. Each source keeps its own cursor, so one that cannot
    be read for a while is caught up on when it can be again."""

    def __init__(self, sources: Sequence[Source], interval: float) -> None:
        self.sources = tuple(sources)
        self.interval = interval
        self._lock = threading.Lock()
        self._cursors: list[float] = []  # per source: the `since` of its next query
        self._buffer: dict[str, Change] = {}
        self._floor = float("inf")  # the buffer holds every change from here on
        self._covered = 0.0  # polled up to here (when the last good poll began)
        self._polled = float("-inf")  # when the last poll began (time.monotonic())

    def changes(
        self, since: float, *, polled_after: float | None = None
    ) -> tuple[list[Change], float]:
        """Changes from `since` on, sorted by id, and up to when they are complete: the caller's
        next `since` is that time minus SLACK. With `polled_after` (a `time.monotonic()`), from
        a poll that began after it, not one an interval old."""
        with self._lock:
            stale = time.monotonic() - self._polled >= self.interval * 0.9
            if stale or (polled_after is not None and self._polled < polled_after):
                self._poll()
            if since >= self._floor:
                found = [c for c in self._buffer.values() if c.time >= since]
                return sorted(found, key=lambda c: c.id), self._covered
        # From before the window (a client resuming after a long gap): ask the sources.
        covered = time.time()
        direct: dict[str, Change] = {}
        for source in self.sources:
            try:
                direct.update((c.id, c) for c in _ours(source.changes(since)))
            except READ_ERRORS:
                continue
        return sorted(direct.values(), key=lambda c: c.id), covered

    def _poll(self) -> None:
        self._polled = time.monotonic()
        now = time.time()
        if not self._cursors:
            self._cursors = [now - SLACK] * len(self.sources)
            self._floor = now - SLACK
        good: list[float] = []
        for i, source in enumerate(self.sources):
            began = time.time()
            try:
                found = source.changes(self._cursors[i])
            except READ_ERRORS:
                continue  # read again from the same cursor next time
            self._buffer.update((c.id, c) for c in _ours(found))
            self._cursors[i] = began - SLACK
            good.append(began)
        if good:
            self._covered = min(good)
        if now - WINDOW > self._floor:
            self._floor = now - WINDOW
            self._buffer = {i: c for i, c in self._buffer.items() if c.time >= self._floor}


def _ours(changes: Sequence[Change]) -> list[Change]:
    # A run id goes into the `id:` line as it is: it must not be able to break the framing.
    return [c for c in changes if RUN_ID.fullmatch(c.run_id)]


def format_change(change: Change) -> str:
    data = {
        "kind": change.kind,
        "run_id": change.run_id,
        "seq": change.seq,
        "event": change.event,
        "time": change.time,
    }
    return f"id: {change.id}\nevent: run\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
