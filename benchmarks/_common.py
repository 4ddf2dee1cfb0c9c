"""Helpers the benchmark scripts share: summary statistics, the machine's description, JSON out."""

from __future__ import annotations

import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

# The one row a delivery gets from the peers `bot_ack.py` measures the bot against (the
# gidgethub peer and the durable floor); `bot_ack.py` reads its delivery ids back.
DELIVERIES_TABLE = """
CREATE TABLE IF NOT EXISTS deliveries (
    delivery_id TEXT PRIMARY KEY,
    event TEXT NOT NULL,
    body BLOB NOT NULL,
    received_at REAL NOT NULL
)
"""
RECORD_DELIVERY = "INSERT OR IGNORE INTO deliveries VALUES (?, ?, ?, ?)"  # one row, once


def summary(values: list[float], digits: int = 3) -> dict[str, float]:
    """min, median, p90 and max of a sample, rounded for printing."""
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {
        "min": round(ordered[0], digits),
        "median": round(statistics.median(ordered), digits),
        "p90": round(p90, digits),
        "max": round(ordered[-1], digits),
        "n": len(ordered),
    }


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = "unknown"
    with open("/proc/cpuinfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory_kb = 0
    with open("/proc/meminfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                memory_kb = int(line.split()[1])
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu,
        "memory_gib": round(memory_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "loadavg_1m": os.getloadavg()[0],
        "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE"),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def cached_bytecode_env(cache_dir: Path) -> dict[str, str]:
    """The environment with a bytecode cache, as after a normal install, kept outside the tree.

    Some environments set PYTHONDONTWRITEBYTECODE, so every start of an editable install
    recompiles its modules; a prefix directory gives children a cache without writing
    __pycache__ folders into the source tree.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(cache_dir)
    return env


def console_script(name: str) -> str:
    """A console script installed beside the running interpreter (the virtualenv's bin/)."""
    return str(Path(sys.executable).parent / name)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_ready(port: int, process: subprocess.Popen[bytes], path: str) -> None:
    """Until a server started as `process` answers `path` on loopback (at most 60 s)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited before it answered {path}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the server did not answer {path} within 60 s")


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def emit(figures: dict[str, Any]) -> None:
    """The one JSON object a benchmark prints on stdout."""
    json.dump(figures, sys.stdout, indent=2)
    sys.stdout.write("\n")
