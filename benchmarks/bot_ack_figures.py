"""Figures `bot_ack.py` reads and derives: a server's CPU and memory from /proc, p99, and the
ratios of one server's figures to another's (the peer's, the stack floor's)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def tree_cpu(pid: int) -> float:
    """Seconds of CPU used by `pid` and the children it reaped, plus its live children's."""
    fields = _stat(pid)
    total = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    for child in children(pid):
        try:
            total += sum(int(value) for value in _stat(child)[11:13])
        except OSError:
            continue  # gone meanwhile: its time moves to the parent's cutime once reaped
    return total / _TICK


def settled_cpu(pid: int, *, window: float = 0.25, windows: int = 3, idle: float = 0.004) -> float:
    """`tree_cpu` once the server has been idle (under `idle` seconds of CPU in each of
    `windows` windows of `window` seconds in a row, at most 60 s): the work it does after its
    last answer (the bot's spool commits about 50 ms later, its WAL checkpoint 200 ms after
    that) is counted as its own, and never runs during the next server's volley."""
    last = tree_cpu(pid)
    quiet = 0
    deadline = time.monotonic() + 60
    while quiet < windows and time.monotonic() < deadline:
        time.sleep(window)
        now = tree_cpu(pid)
        quiet = quiet + 1 if now - last < idle else 0
        last = now
    return last


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def peer_ratios(ours: dict[str, Any], peer: dict[str, Any]) -> dict[str, Any]:
    def ratio(path: tuple[str, ...]) -> float:
        a: Any = ours
        b: Any = peer
        for key in path:
            a, b = a[key], b[key]
        return round(float(a) / float(b), 2)

    closed_p99 = ratio(("closed_loop", "ack_latency_ms", "p99"))
    throughput = ratio(("closed_loop", "deliveries_per_second"))
    return {
        "closed_loop_p99": closed_p99,
        "open_loop_p99": ratio(("open_loop", "ack_latency_ms", "p99")),
        "closed_loop_p50": ratio(("closed_loop", "ack_latency_ms", "median")),
        "throughput": throughput,
        "cpu_per_ack": ratio(("closed_loop", "cpu_ms_per_ack")),
        "p99_within_2x": closed_p99 <= 2.0,
        "throughput_at_least_half": throughput >= 0.5,
    }


def floor_ratios(ours: dict[str, Any], floor: dict[str, Any]) -> dict[str, Any]:
    """Against Flask + gunicorn answering 202 alone: the targets are p99 at most 1.1x and
    throughput at least 0.9x the floor's."""
    p99 = (
        ours["closed_loop"]["ack_latency_ms"]["p99"] / floor["closed_loop"]["ack_latency_ms"]["p99"]
    )
    rate = (
        ours["closed_loop"]["deliveries_per_second"] / floor["closed_loop"]["deliveries_per_second"]
    )
    cpu = ours["closed_loop"]["cpu_ms_per_ack"] / floor["closed_loop"]["cpu_ms_per_ack"]
    return {
        "closed_loop_p99": round(p99, 2),
        "throughput": round(rate, 2),
        "cpu_per_ack": round(cpu, 2),
        "p99_within_1_1x": p99 <= 1.1,
        "throughput_at_least_0_9x": rate >= 0.9,
    }


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
