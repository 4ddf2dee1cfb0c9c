"""The evaluation harness's own overhead: `freemad eval run` over 200 items x 3 agents.

Three real subprocess agents (benchmarks/timed_agent.py under `python -I -S`) each answer exactly
DELAY seconds after they are forked, so every item's debate (round 0 and one critique round) has
a critical path of 2 x DELAY, and with C items at a time the run cannot finish before
ceil(items / C) x 2 x DELAY. Reported:

- `wall_over_ideal`: the run's wall time over that ideal (everything FREE-MAD does between agent
  calls: spawning, prompts, parsing, scoring, grading, transcripts, rows, report);
- `harness_cpu_share`: the CPU time of the harness's own process (agents excluded, they are
  children) over the agents' time (the sum of every call's duration): the issue's "overhead under
  5% of the agents' time";
- `rescore_s`: `eval rescore` of the same 200 transcripts (no agent at all): reading, grading and
  the report alone.

Run: .venv/bin/python benchmarks/eval_overhead.py [--items 200] [--delay 0.25] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit, machine, progress, summary

from freemad.config import parse_config
from freemad.eval.datasets import load_dataset
from freemad.eval.rescore import rescore
from freemad.eval.runs import run_evaluation
from freemad.wiring import ADAPTERS

AGENT = Path(__file__).with_name("timed_agent.py")
AGENTS = 3
CRITIQUE_ROUNDS = 1
TARGET_SHARE = 0.05


def config_yaml(delay: float, log: Path, work: Path) -> str:
    lines = ["agents:"]
    for i in range(AGENTS):
        argv = [sys.executable, "-I", "-S", str(AGENT), "--delay", str(delay)]
        argv += ["--answer", str(i % 2), "--log", str(log)]
        lines += [
            f"  - id: agent-{i}",
            f"    cli_command: {shlex.join(argv)!r}",
            "    cli_mode_arg: true",
            "    timeout: 120",
        ]
    lines += [
        f"deadlines: {{soft_timeout_ms: 120000, hard_timeout_ms: 240000, min_agents: {AGENTS}}}",
        f"security: {{cli_allowed_commands: [{sys.executable!r}]}}",
        "budget: {max_concurrent_agents: 16}",
        "cache: {enabled: false}",
        f"output: {{save_transcript: false, transcript_dir: {str(work / 'unused')!r}}}",
        "logging: {level: ERROR}",
    ]
    return "\n".join(lines) + "\n"


def agent_seconds(log: Path) -> float:
    """The sum of every call's duration, fork to reply, from the agents' own log."""
    total = 0.0
    for line in log.read_text(encoding="utf-8").splitlines():
        _mode, _round, _pid, forked, _main, replied = line.split("\t")
        total += float(replied) - float(forked)
    return total


def one_run(items: int, delay: float, work: Path) -> dict[str, Any]:
    log = work / "calls.tsv"
    log.unlink(missing_ok=True)
    config_path = work / "config.yaml"
    config_path.write_text(config_yaml(delay, log, work), encoding="utf-8")
    config = parse_config(config_path.read_text(encoding="utf-8"), name=str(config_path))
    dataset_path = work / "items.jsonl"
    dataset_path.write_text(
        "".join(
            json.dumps({"id": f"q{k}", "question": f"Question {k}: give the answer.",
                        "answer": 1, "checker": "numeric"}) + "\n"
            for k in range(items)
        ),
        encoding="utf-8",
    )  # fmt: skip
    dataset = load_dataset(str(dataset_path))
    out = work / f"out-{time.monotonic_ns()}"
    concurrency = 16 // AGENTS
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    report = run_evaluation(
        dataset, config, out, rounds=CRITIQUE_ROUNDS, adapters=ADAPTERS, concurrency=concurrency
    )
    wall = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    agents = agent_seconds(log)
    ideal = math.ceil(items / concurrency) * (CRITIQUE_ROUNDS + 1) * delay
    started = time.perf_counter()
    rescore(dataset, out / "transcripts", config, work / f"rescored-{time.monotonic_ns()}",
            adapters=ADAPTERS)  # fmt: skip
    rescore_s = time.perf_counter() - started
    assert report["graded"] == items and report["methods"]["freemad"]["total"] == items
    return {
        "wall_s": round(wall, 3),
        "ideal_s": ideal,
        "wall_over_ideal": round(wall / ideal, 4),
        "agent_calls": sum(1 for _ in log.read_text(encoding="utf-8").splitlines()),
        "agent_seconds": round(agents, 3),
        "harness_cpu_s": round(cpu, 3),
        "harness_cpu_share": round(cpu / agents, 4),
        "harness_cpu_ms_per_item": round(1000 * cpu / items, 2),
        "rescore_s": round(rescore_s, 3),
        "rescore_share_of_agent_seconds": round(rescore_s / agents, 4),
        "concurrency": concurrency,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.25, help="seconds per agent call")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    load_at_start = os.getloadavg()[0]
    runs = []
    with tempfile.TemporaryDirectory(prefix="freemad-bench-eval-") as folder:
        for i in range(args.repeat):
            progress(f"eval run {i + 1}/{args.repeat}: {args.items} items x {AGENTS} agents ...")
            runs.append(one_run(args.items, args.delay, Path(folder)))
    emit(
        {
            "benchmark": "eval_overhead",
            "machine": machine(),
            "loadavg_1m_at_start": load_at_start,
            "setup": {
                "items": args.items,
                "agents": AGENTS,
                "critique_rounds": CRITIQUE_ROUNDS,
                "agent_call_s": args.delay,
                "agent": f"{Path(sys.executable).name} -I -S {AGENT.name} (stdlib only)",
                "repeat": args.repeat,
            },
            "runs": runs,
            "harness_cpu_share": summary([r["harness_cpu_share"] for r in runs], 4),
            "wall_over_ideal": summary([r["wall_over_ideal"] for r in runs], 4),
            "target_harness_cpu_share": TARGET_SHARE,
        }
    )


if __name__ == "__main__":
    main()
