"""Events: what every runtime appends as it works; status, progress and reports are folds over them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Event:
    run_id: str
    seq: int
    time: float
    kind: str
    data: dict[str, Any] = field(default_factory=dict)


EventSink = Callable[[Event], None]


def fan_out(*sinks: EventSink | None) -> EventSink | None:
    """One sink that hands each event to every one of `sinks` given (None when none is)."""
    given = [sink for sink in sinks if sink is not None]
    if len(given) <= 1:
        return given[0] if given else None

    def each(event: Event) -> None:
        for sink in given:
            sink(event)

    return each


class EventLog:
    """Numbers events in order, keeps them, and hands each to the subscribers as it happens."""

    def __init__(self, run_id: str, clock: Callable[[], float], sinks: list[EventSink]) -> None:
        self.run_id = run_id
        self.clock = clock
        self.sinks = sinks
        self.events: list[Event] = []

    def emit(self, kind: str, **data: Any) -> Event:
        event = Event(self.run_id, len(self.events), self.clock(), kind, data)
        self.events.append(event)
        for sink in self.sinks:
            sink(event)
        return event
