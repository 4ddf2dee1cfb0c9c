"""A debate beside its floor, interleaved in one run: wall time at 4 to 128 agents, and start-up.

The floor is benchmarks/asyncio_floor.py: bare asyncio driving the same agent processes
(timed_agent.py under `python -I -S`, each answering DELAY seconds after its fork) through the
same rounds. Each repeat runs, in a rotating order, the floor, the floor with every agent under
`setpriv --pdeathsig KILL --` (as FREE-MAD starts agents, so they die with it), and the library's
`run_debate` (all_to_all, max_concurrent_agents = agents, cache and transcript off). The figure
is the ratio of each debate to the floor run beside it. Target: within 1.05x at 4 to 128 agents.

Start-up: a 4-agent debate whose agents answer at once (`--rounds 0 --delay 0`) through the
console script, against asyncio_floor.py run as a script; the time from start to the first
agent's fork (from the agents' log), with a bytecode cache as an installed package has one.
Target: under 0.15 s.

Run: .venv/bin/python benchmarks/debate_floor.py [--sizes 4 16 64 128] [--repeat 3]
     [--rounds 2] [--delay 0.5] [--startup-runs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncio_floor
from _common import cached_bytecode_env, console_script, emit, machine, progress, summary
from debate_critical_path import breakdown, config_yaml, library_run, timed

from freemad.config import parse_config

TARGET_RATIO = 1.05
TARGET_STARTUP_S = 0.15


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 16, 64, 128])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="critique rounds")
    parser.add_argument("--delay", type=float, default=0.5, help="seconds per agent call")
    parser.add_argument("--startup-runs", type=int, default=10)
    parser.add_argument(
        "--startup-only", action="store_true", help="only the start-up runs, no debate sizes"
    )
    args = parser.parse_args()
    load_at_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="freemad-floor-") as folder:
        work = Path(folder)
        sizes = (
            {} if args.startup_only else {f"agents={n}": by_size(work, n, args) for n in args.sizes}
        )
        startup = start_up(work, args.startup_runs)
    emit(
        {
            "benchmark": "debate_floor",
            "machine": machine(),
            "loadavg_1m_at_start": load_at_start,
            "setup": {
                "critique_rounds": args.rounds,
                "agent_call_s": args.delay,
                "critical_path_s": (args.rounds + 1) * args.delay,
                "repeat": args.repeat,
                "topology": "all_to_all",
            },
            "target_ratio": TARGET_RATIO,
            "by_size": sizes,
            "startup": startup,
        }
    )


def by_size(work: Path, agents: int, args: argparse.Namespace) -> dict[str, Any]:
    log = work / f"calls-{agents}.tsv"
    text = config_yaml(agents, args.delay, log, work)
    config = parse_config(text, name=f"floor-{agents}.yaml")
    prefix = asyncio_floor.pdeathsig_prefix()

    def floor(wrap: list[str]) -> dict[str, Any]:
        debate = asyncio_floor.debate(agents, args.rounds, args.delay, str(log), wrap)
        return timed(lambda: asyncio.run(debate), log)

    kinds = {
        "floor": lambda: floor([]),
        "floor_pdeathsig": lambda: floor(prefix),
        "library": lambda: library_run(config, args.rounds, log),
    }
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in kinds}
    names = list(kinds)
    for i in range(args.repeat):
        order = names[i % 3 :] + names[: i % 3]  # rotated: no kind always runs first
        progress(f"{agents} agents, repeat {i + 1}/{args.repeat}: {', '.join(order)} ...")
        for name in order:
            runs[name].append(kinds[name]())
    walls = {name: [r["wall_s"] for r in rs] for name, rs in runs.items()}
    lib_vs_floor = [lib / fl for lib, fl in zip(walls["library"], walls["floor"], strict=True)]
    lib_vs_wrapped = [
        lib / fl for lib, fl in zip(walls["library"], walls["floor_pdeathsig"], strict=True)
    ]
    return {
        "calls_per_run": runs["library"][0]["calls"],
        "wall_s": {name: summary(values) for name, values in walls.items()},
        "parent_cpu_ms": {
            name: summary([r["parent_cpu_ms"] for r in rs], 0) for name, rs in runs.items()
        },
        "library_over_floor": summary(lib_vs_floor),
        "library_over_floor_pdeathsig": summary(lib_vs_wrapped),
        "pdeathsig_floor_over_floor": summary(
            [w / f for w, f in zip(walls["floor_pdeathsig"], walls["floor"], strict=True)]
        ),
        "within_target_at_median": statistics.median(lib_vs_floor) <= TARGET_RATIO,
        "spawn_spread_per_round_ms_median": {
            name: [
                round(statistics.median(col), 1)
                for col in zip(*(r["parts_ms"]["spawn_spread_per_round"] for r in rs), strict=True)
            ]
            for name, rs in runs.items()
        },
        # Where the rest goes (10 ms resolution): before the first agent, between rounds, after.
        "other_parts_ms_median": {
            name: {
                part: round(statistics.median(_total(r["parts_ms"][part]) for r in rs), 1)
                for part in (
                    "before_first_spawn",
                    "last_reply_to_next_spawn",
                    "last_reply_to_return",
                )
            }
            for name, rs in runs.items()
        },
    }


def _total(value: float | list[float]) -> float:
    return sum(value) if isinstance(value, list) else value


def start_up(work: Path, runs: int) -> dict[str, Any]:
    """Start to first agent fork: the console script's debate against the floor script's."""
    log = work / "startup.tsv"
    config = work / "startup.yaml"
    config.write_text(config_yaml(4, 0.0, log, work), encoding="utf-8")
    cached = cached_bytecode_env(work / "pycache")
    floor_script = str(Path(asyncio_floor.__file__))
    commands = {
        "floor_script": [sys.executable, floor_script, "--agents", "4", "--rounds", "0",
                         "--delay", "0", "--log", str(log)],
        "freemad_cli": [console_script("freemad"), "debate", "x", "--rounds", "0", "--quiet",
                        "--config", str(config)],
    }  # fmt: skip
    envs = {"as_is": None, "with_bytecode_cache": cached}
    samples: dict[str, list[float]] = {f"{c}/{e}": [] for c in commands for e in envs}
    walls: dict[str, list[float]] = {key: [] for key in samples}
    for argv in commands.values():  # warm the page cache and the bytecode cache
        subprocess.run(argv, capture_output=True, check=True, env=cached, cwd=work)
    for i in range(runs):
        if i % 5 == 0:
            progress(f"start-up run {i + 1}/{runs} ...")
        for command, argv in commands.items():
            for env_name, env in envs.items():
                log.write_text("", encoding="utf-8")
                boot = time.clock_gettime(time.CLOCK_BOOTTIME)
                started = time.perf_counter()
                subprocess.run(argv, capture_output=True, check=True, env=env, cwd=work)
                walls[f"{command}/{env_name}"].append(time.perf_counter() - started)
                end = time.clock_gettime(time.CLOCK_BOOTTIME)
                parts = breakdown(log, boot, end)["parts_ms"]
                samples[f"{command}/{env_name}"].append(parts["before_first_spawn"] / 1000)
    before = {key: summary(values) for key, values in samples.items()}
    cli = statistics.median(samples["freemad_cli/with_bytecode_cache"])
    return {
        "before_first_agent_s": before,
        "wall_s": {key: summary(values) for key, values in walls.items()},
        "target_s": TARGET_STARTUP_S,
        "meets_target_with_bytecode_cache_at_median": cli < TARGET_STARTUP_S,
        "note": "fork times have 10 ms resolution (/proc clock ticks)",
    }


if __name__ == "__main__":
    main()
