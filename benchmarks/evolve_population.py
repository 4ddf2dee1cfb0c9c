"""Candidates judged per hour at population 1, 4 and 8: what judging a generation at once buys.

The real EvolveRunner and its SQLite store on a small repository; an in-process worker writes
score.json (each candidate of a generation a different score, so every generation admits one);
the judge is one stage that either waits (`--judge io`: sleeps `--seconds`, like a benchmark
that waits on a service or the network) or burns one core for about `--seconds` (`--judge cpu`).
Each population runs `--generations` generations with `population.parallel` equal to its size.
Throughput counts the candidates judged after the baseline over the wall-clock time from the
first generation's start to the last `candidate_judged`.

Run: .venv/bin/python benchmarks/evolve_population.py [--judge io|cpu|both] [--seconds 1]
     [--generations 2] [--sizes 1,4,8] [--sandbox auto|host]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _common import emit, machine, progress
from evolve_iteration import git

from freemad.agents.agent_port import CallRequest, CallResult, CallStatus
from freemad.config import parse_config
from freemad.evolve.evolve_runner import EvolveRunner
from freemad.tasks.task_protocol import MARKER
from freemad.wiring import ADAPTERS, open_evolve_store

_CPU_LOOP = "n = 0\nfor i in range({count}):\n    n += i * i\n"


class Worker:
    """Writes a score every candidate of a later generation beats, candidate k best by k."""

    agent_id = "worker"

    async def call(self, request: CallRequest) -> CallResult:
        data = json.loads(request.prompt.split(MARKER, 1)[1])
        generation, k = data.get("generation", data["iteration"]), data.get("candidate", 0)
        score = {"components": {"runtime_ms": 10_000.0 - 100 * generation - k}}
        (Path(data["workspace_root"]) / "score.json").write_text(json.dumps(score))
        return CallResult(CallStatus.OK, json.dumps({"content": f"candidate {k}"}))


def cpu_count_for(seconds: float) -> int:
    """Loop iterations that take about `seconds` of one core in a fresh interpreter."""
    count = 2_000_000
    began = time.perf_counter()
    exec(_CPU_LOOP.format(count=count), {})  # our own constant loop
    return int(count * seconds / (time.perf_counter() - began))


def stage_command(kind: str, seconds: float, count: int) -> str:
    work = f"time.sleep({seconds})" if kind == "io" else f"exec({_CPU_LOOP.format(count=count)!r})"
    code = f"import time; {work}; print(open('score.json').read())"
    return f"{sys.executable} -c {json.dumps(code)}"


def config_for(kind: str, size: int, generations: int, command: str, sandbox: str) -> Any:
    data = {
        "agents": [{"id": "worker", "cli_command": "scripted"}],
        "security": {"cli_allowed_commands": ["scripted"], "sandbox": sandbox},
        "evolve": {
            "repo_path": "repo",
            "store_path": "store/evolve.db",
            "variation": {"mode": "single_agent", "agent_id": "worker"},
            "judge": {
                "stages": [
                    {
                        "name": kind,
                        "command": command,
                        "parse": "json_stdout",
                        "provides": ["runtime_ms"],
                    }
                ],
                "comparator": [{"component": "runtime_ms", "direction": "minimize"}],
                "network": True,  # the namespace's cost is not what this measures
            },
            "population": {"size": size, "parallel": size},
            "stop": {"max_iterations": generations},
        },
    }
    return parse_config(yaml.safe_dump(data))


def measure(kind: str, size: int, args: argparse.Namespace, count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="evolve-population-") as folder:
        root = Path(folder)
        repo = root / "repo"
        repo.mkdir()
        (repo / "score.json").write_text(json.dumps({"components": {"runtime_ms": 10_000.0}}))
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "seed")
        # Population 1 runs as many single iterations as the others judge candidates, at most 8.
        generations = args.generations if size > 1 else min(8, args.generations * 4)
        command = stage_command(kind, args.seconds, count)
        config = config_for(kind, size, generations, command, args.sandbox)
        marks: dict[str, float] = {}

        def on_step(step: str, data: dict[str, Any]) -> None:
            if step in ("generation_started", "iteration_started") and data["iteration"] == 1:
                marks.setdefault("first", time.perf_counter())
            elif step == "candidate_judged" and data["iteration"] > 0:
                marks["last"] = time.perf_counter()

        with open_evolve_store(config.evolve.resolved(root)) as store:
            runner = EvolveRunner(
                config,
                store,
                config_dir=root,
                ports={"worker": Worker()},
                on_step=on_step,
                worktrees_dir=root / "worktrees",
                adapters=ADAPTERS,
            )
            state = runner.start("make runtime_ms smaller")
    assert len(state.versions) == generations + 1, state.view()
    candidates = generations * size
    wall = marks["last"] - marks["first"]
    return {
        "judge": kind,
        "population": size,
        "candidates": candidates,
        "seconds": round(wall, 2),
        "seconds_per_generation": round(wall / generations, 2),
        "candidates_per_hour": round(candidates * 3600 / wall),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", choices=["io", "cpu", "both"], default="both")
    parser.add_argument("--seconds", type=float, default=1.0, help="a judge stage's wait or work")
    parser.add_argument("--generations", type=int, default=2)
    parser.add_argument("--sizes", default="1,4,8")
    parser.add_argument("--sandbox", choices=["auto", "host"], default="auto")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    kinds = ["io", "cpu"] if args.judge == "both" else [args.judge]
    count = cpu_count_for(args.seconds)
    rows = []
    for kind in kinds:
        for size in sizes:
            progress(f"{kind} judge, population {size}")
            rows.append(measure(kind, size, args, count))
    for row in rows:
        base = next(r for r in rows if r["judge"] == row["judge"] and r["population"] == sizes[0])
        row["speedup"] = round(row["candidates_per_hour"] / base["candidates_per_hour"], 2)
    emit(
        {
            "benchmark": "evolve_population",
            "machine": machine(),
            "cpus": os.cpu_count(),
            "judge_seconds": args.seconds,
            "results": rows,
        }
    )


if __name__ == "__main__":
    main()
