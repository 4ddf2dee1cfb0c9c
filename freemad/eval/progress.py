"""The live progress line of an evaluation: items done, Free-MAD's accuracy so far and the time
left, estimated from the pace of this run's own items (items kept from an earlier run took no
time now). Pure: counts and clock readings in, a line out."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Tracker:
    total: int
    done: int = 0
    correct: int = 0
    started: float | None = None  # the clock when this run's first item began
    ran: int = field(default=0)  # items finished by this run

    def start(self, now: float) -> None:
        if self.started is None:
            self.started = now

    def finished(self, *, right: bool, now: float) -> None:
        self.start(now)
        self.done += 1
        self.ran += 1
        self.correct += right

    def eta(self, now: float) -> float | None:
        """Seconds left at this run's pace; None before any item of this run finished."""
        if self.started is None or self.ran == 0:
            return None
        return (now - self.started) / self.ran * (self.total - self.done)

    def line(self, last: str, status: str, now: float) -> str:
        accuracy = f"{self.correct / self.done:.1%}" if self.done else "-"
        eta = self.eta(now)
        left = "ETA -" if eta is None else f"ETA {clock(eta)}"
        return (
            f"[{self.done}/{self.total}] freemad {accuracy} so far ({self.correct} right), "
            f"{left}; last: {last} {status}"
        )


def clock(seconds: float) -> str:
    """`42s`, `3m 05s`, `1h 02m`."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
