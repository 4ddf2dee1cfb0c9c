"""The event log: numbering, the clock, every sink in order; and fanning one sink out to many."""

from __future__ import annotations

from freemad.core.run_events import Event, EventLog, fan_out


def test_events_are_numbered_in_order_timed_by_the_clock_and_handed_to_every_sink() -> None:
    times = iter([10.0, 11.5])
    first: list[Event] = []
    second: list[Event] = []
    log = EventLog("run", lambda: next(times), [first.append, second.append])
    a = log.emit("started", goal="g")
    b = log.emit("finished")
    assert a == Event("run", 0, 10.0, "started", {"goal": "g"})
    assert b == Event("run", 1, 11.5, "finished", {})
    assert log.events == [a, b]
    assert first == [a, b]
    assert second == [a, b]


def test_fan_out_of_no_sink_is_none_and_of_one_is_that_sink() -> None:
    assert fan_out() is None
    assert fan_out(None, None) is None
    sink: list[Event] = []
    assert fan_out(None, sink.append) == sink.append


def test_fan_out_hands_each_event_to_every_sink_in_order() -> None:
    seen: list[tuple[str, int]] = []
    one = fan_out(lambda e: seen.append(("a", e.seq)), None, lambda e: seen.append(("b", e.seq)))
    assert one is not None
    one(Event("r", 0, 0.0, "x"))
    one(Event("r", 1, 0.0, "y"))
    assert seen == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]
