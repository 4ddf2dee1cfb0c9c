"""Small differences between bots, by the median of many short interleaved closed-loop volleys.

`bot_ack.py` sums a few long volleys per server, which is what the tables in docs/benchmarks.md
report; a change worth a few percent of CPU drowns in the spread between two such runs on a
shared machine. This script starts the stack's floor (Flask + gunicorn answering 202), with
`--durable-floor` the floor that commits each delivery as one SQLite row (bot_ack_floor_app.py),
the installed bot and the bot of each `--baseline-tree`, then sends each of them `--volleys`
short closed-loop volleys (16 senders x `--per-sender` deliveries), in a new random order every
turn, and prints each server's median CPU per acknowledgement (counted until the server is idle
again, as in bot_ack.py), median deliveries a second and median p99, and their ratios to the
floor's.

Run: .venv/bin/python benchmarks/bot_ack_ab.py [--volleys 20] [--per-sender 30] [--senders 16]
     [--workers N] [--baseline-tree DIR ...] [--durable-floor]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import emit, machine, progress
from bot_ack import FLOOR, Target, start_ours, start_stack_floor, volley
from bot_ack_figures import p99


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--volleys", type=int, default=20)
    parser.add_argument("--per-sender", type=int, default=30)
    parser.add_argument("--senders", type=int, default=16)
    parser.add_argument("--workers", type=int, default=min((os.cpu_count() or 1) + 1, 8))
    parser.add_argument("--baseline-tree", type=Path, action="append", default=[])
    parser.add_argument(
        "--durable-floor",
        action="store_true",
        help="also Flask + gunicorn committing each delivery as one SQLite row before its 202",
    )
    return parser.parse_args()


def main() -> None:
    args = arguments()
    samples: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="freemad-bot-ab-") as folder:
        targets: list[Target] = []
        try:
            targets.append(start_stack_floor(Path(folder), args.workers))
            if args.durable_floor:
                targets.append(start_stack_floor(Path(folder), args.workers, durable=True))
            targets.append(start_ours(Path(folder), args.workers, None))
            for tree in args.baseline_tree:
                targets.append(start_ours(Path(folder), args.workers, None, tree=tree))
            for target in targets:
                volley(target, args.senders, 5)  # warm up
                samples[target.name] = {"cpu_ms_per_ack": [], "per_second": [], "p99_ms": []}
            for number in range(args.volleys):
                progress(f"turn {number + 1} of {args.volleys}")
                for target in random.sample(targets, len(targets)):
                    latencies, seconds, cpu = volley(target, args.senders, args.per_sender)
                    kept = samples[target.name]
                    kept["cpu_ms_per_ack"].append(1000 * cpu / len(latencies))
                    kept["per_second"].append(len(latencies) / seconds)
                    kept["p99_ms"].append(p99(latencies))
            lost = {t.name: len(t.lost) + len(t.refused) for t in targets if t.lost or t.refused}
        finally:
            for target in targets:
                target.stop()
    medians = {
        name: {figure: round(statistics.median(values), 3) for figure, values in kept.items()}
        for name, kept in samples.items()
    }
    floor = medians[FLOOR]
    out: dict[str, Any] = {
        "benchmark": "bot_ack_ab",
        "machine": machine(),
        "volleys": args.volleys,
        "deliveries_per_volley": args.senders * args.per_sender,
        "baseline_trees": [str(tree) for tree in args.baseline_tree],
        "medians": medians,
        "ratios_over_floor": {
            name: {figure: round(value / floor[figure], 2) for figure, value in figures.items()}
            for name, figures in medians.items()
            if name != FLOOR
        },
        "not_answered_202": lost,
    }
    emit(out)
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
