"""How fast the SQLite store appends events and reads a run back (the fold behind every status).

Appends: events per second with single `append` calls (one transaction, and with
synchronous=FULL one fsync, each) and with `append_many` batches of 100, each data payload a
realistic ~500 bytes of JSON, for synchronous=FULL (the default) and NORMAL.
Reads: a store holding 100,000 events across 1,000 runs (100 each; 80% task runs, 20% evolve);
the latency of `events(run_id)` for a random run, of `runs(kind="task", limit=50)`, and of what
a `status` command pays: open the store, read one run's events, close. Median and p90 over
--repeat. Files go to a temporary folder under --dir (default: the system's temp folder).

Run: .venv/bin/python benchmarks/store_speed.py [--appends 2000] [--batches 100] [--repeat 200]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import emit, machine, progress, summary

from freemad.store import SqliteStore

RUNS = 1_000
EVENTS_PER_RUN = 100
KINDS = ("stage_started", "agent_reply", "review_finding", "stage_passed", "question")
_LETTERS = random.Random(0)
_SUMMARIES = [
    "".join(_LETTERS.choice("abcdefghij klmnopqrstuvwxyz") for _ in range(260)) for _ in range(64)
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=2000, help="single appends timed")
    parser.add_argument("--batches", type=int, default=100, help="append_many batches of 100")
    parser.add_argument("--repeat", type=int, default=200, help="repeats of each read")
    parser.add_argument("--dir", default=None, help="where the store files go")
    parser.add_argument("--seed", type=int, default=2509)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="store-speed-") as folder:
        root = Path(folder)
        appends = {
            mode: measure_appends(root / mode.lower(), mode, args, rng)
            for mode in ("FULL", "NORMAL")
        }
        reads = measure_reads(root / "reads", args, rng)
        filesystem = describe_filesystem(root)
    sample = [len(json.dumps(payload(rng, i), separators=(",", ":"))) for i in range(1000)]
    info = machine()
    info["nproc"] = len(os.sched_getaffinity(0))
    info["sqlite"] = sqlite3.sqlite_version
    info["filesystem"] = filesystem
    emit(
        {
            "benchmark": "store_speed",
            "machine": info,
            "payload_bytes_mean": round(sum(sample) / len(sample)),
            "appends": appends,
            "reads": reads,
        }
    )


def measure_appends(
    folder: Path, synchronous: str, args: argparse.Namespace, rng: random.Random
) -> dict[str, Any]:
    progress(f"appends, synchronous={synchronous}")
    with SqliteStore(folder / "store.db", synchronous=synchronous) as store:
        store.create_run("single", "task", {})
        store.create_run("batched", "task", {})
        singles = [payload(rng, i) for i in range(args.appends)]
        started = time.perf_counter()
        for data in singles:
            store.append("single", "agent_reply", data)
        single_s = time.perf_counter() - started
        batches = [
            [("agent_reply", payload(rng, i)) for i in range(100)] for _ in range(args.batches)
        ]
        started = time.perf_counter()
        for batch in batches:
            store.append_many("batched", batch)
        batched_s = time.perf_counter() - started
    return {
        "single_append_per_s": round(args.appends / single_s),
        "single_append_mean_ms": round(single_s / args.appends * 1000, 3),
        "append_many_100_events_per_s": round(args.batches * 100 / batched_s),
        "append_many_100_batch_mean_ms": round(batched_s / args.batches * 1000, 3),
        "single_appends": args.appends,
        "batches": args.batches,
    }


def measure_reads(folder: Path, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    path = folder / "store.db"
    progress(f"filling {RUNS} runs x {EVENTS_PER_RUN} events")
    run_ids = [f"run-{n:05d}" for n in range(RUNS)]
    started = time.perf_counter()
    with SqliteStore(path) as store:
        for n, run_id in enumerate(run_ids):
            kind = "evolve" if n % 5 == 4 else "task"
            store.create_run(run_id, kind, {"title": f"run {n}", "stage": "review"})
            events = [(rng.choice(KINDS), payload(rng, i)) for i in range(EVENTS_PER_RUN)]
            store.append_many(run_id, events)
            store.update_run(run_id, status=rng.choice(("running", "waiting", "done")))
        fill_s = time.perf_counter() - started
        progress("reading")
        one_run = timed(args.repeat, lambda: store.events(rng.choice(run_ids)))
        listing = timed(args.repeat, lambda: store.runs(kind="task", limit=50))
        assert len(store.events(run_ids[0])) == EVENTS_PER_RUN
        assert len(store.runs(kind="task", limit=50)) == 50

    def open_read_close() -> None:
        with SqliteStore(path) as reader:
            reader.events(rng.choice(run_ids))

    cold = timed(args.repeat, open_read_close)
    return {
        "events_in_store": RUNS * EVENTS_PER_RUN,
        "runs_in_store": RUNS,
        "fill_s": round(fill_s, 2),
        "db_mib": round(path.stat().st_size / 2**20, 1),
        "events_of_one_run_ms": one_run,
        "runs_task_limit_50_ms": listing,
        "open_events_close_ms": cold,
    }


def timed(repeat: int, action: Callable[[], object]) -> dict[str, float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return summary(samples)


def payload(rng: random.Random, i: int) -> dict[str, Any]:
    """What a task's agent_reply event carries: about 500 bytes of JSON."""
    return {
        "stage": rng.choice(("plan", "review", "implement", "verify")),
        "role": rng.choice(("planner", "reviewer", "arbiter")),
        "agent": rng.choice(("claude", "codex", "gemini")),
        "attempt": i % 3 + 1,
        "exit_status": 0,
        "duration_s": round(rng.uniform(5, 120), 3),
        "tokens": {"input": rng.randint(500, 9000), "output": rng.randint(100, 3000)},
        "decision": rng.choice(("approve", "revise", "ask")),
        "summary": rng.choice(_SUMMARIES),
        "files": ["freemad/tasks/runtime.py", "tests/tasks/test_runtime.py"],
    }


def describe_filesystem(folder: Path) -> str:
    try:
        out = subprocess.run(
            ["df", "--output=fstype", str(folder)], capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out[-1] if out else "unknown"


if __name__ == "__main__":
    main()
