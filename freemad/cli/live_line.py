"""A live line at the bottom of a terminal: redrawn in place a few times a second while work goes
on, with permanent lines (progress, log records) printed above it without tearing it."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TextIO

# Redraws per second at most: enough to see time pass, too few to flicker or cost anything.
REDRAWS_PER_SECOND = 4


class LiveLine:
    """`render()` gives the line to show (None: none); a thread redraws it when it changes.

    Redraws use a carriage return and spaces, no escape sequences, so any terminal shows them;
    the line is cut to the terminal's width, since a wrapped line cannot be redrawn in place.
    Everything else written to the terminal must go through `print` or `stream`.
    """

    def __init__(self, out: TextIO, render: Callable[[], str | None]) -> None:
        self.out = out
        self.render = render
        self.lock = threading.RLock()
        self._shown = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.stream = _Through(self)

    def __enter__(self) -> LiveLine:
        self._thread = threading.Thread(target=self._tick, name="freemad-live-line", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self.lock:
            self._clear()
            self.out.flush()

    def print(self, text: str) -> None:
        """A permanent line above the live one (which comes back at the next redraw)."""
        self.write(text + "\n")

    def write(self, text: str) -> None:
        with self.lock:
            self._clear()
            self.out.write(text)
            self.out.flush()

    def redraw(self) -> None:
        with self.lock:
            line = self.render()
            if line is None:
                self._clear()
            else:
                line = _fit(line, _width(self.out))
                if line != self._shown:
                    padding = " " * max(len(self._shown) - len(line), 0)
                    self.out.write(f"\r{line}{padding}")
                    self._shown = line
            self.out.flush()

    def _clear(self) -> None:
        if self._shown:
            self.out.write("\r" + " " * len(self._shown) + "\r")
            self._shown = ""

    def _tick(self) -> None:
        while not self._stop.wait(1 / REDRAWS_PER_SECOND):
            self.redraw()


class _Through:
    """A file-like view of a LiveLine for a logging handler: each record is a permanent line."""

    def __init__(self, line: LiveLine) -> None:
        self.line = line

    def write(self, text: str) -> int:
        self.line.write(text)
        return len(text)

    def flush(self) -> None:
        self.line.out.flush()


def _width(out: TextIO) -> int:
    try:
        columns = os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError, AttributeError):
        columns = 0
    if columns <= 0:  # a terminal that does not say (a new pseudo-terminal says 0)
        given = os.environ.get("COLUMNS", "")
        columns = int(given) if given.isdigit() and int(given) > 0 else 80
    return columns


def _fit(line: str, width: int) -> str:
    room = max(width - 2, 10)  # a symbol may take two columns on some terminals
    return line if len(line) <= room else line[: room - 1] + "…"


class WorkLine:
    """The work in flight on a terminal, each piece with its elapsed time, on one live line
    (`  … research: researcher planner 3.2s`); finished work is printed above it."""

    def __init__(self, out: TextIO) -> None:
        self._work: dict[str, tuple[str, float]] = {}
        self.live = LiveLine(out, self._render)
        self.stream = self.live.stream

    def __enter__(self) -> WorkLine:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(*exc)

    def begin(self, key: str, label: str) -> None:
        with self.live.lock:
            started = self._work.get(key, ("", time.monotonic()))[1]
            self._work[key] = (label, started)

    def end(self, key: str) -> str:
        """The work is done: how long it took (" 3.2s"), or "" if it was never begun."""
        with self.live.lock:
            begun = self._work.pop(key, None)
        return "" if begun is None else f" {time.monotonic() - begun[1]:.1f}s"

    def print(self, text: str) -> None:
        self.live.print(text)

    def _render(self) -> str | None:
        if not self._work:
            return None
        now = time.monotonic()
        shown = [f"{label} {now - started:.1f}s" for label, started in self._work.values()]
        return "  … " + ", ".join(shown)
