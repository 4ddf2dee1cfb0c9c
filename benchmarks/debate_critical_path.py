"""How close a debate's wall time comes to its critical path, through the library and the CLI.

16 real subprocess agents (benchmarks/timed_agent.py under `python -I -S`) each answer exactly
1.0 s after they are forked, so a debate of 2 critique rounds (3 rounds) has a critical path of
3.0 s. Everything above 3.0 s is overhead: spawning, prompts, parsing, scoring, and for the CLI
its start-up and exit. Target: wall <= 1.10 x critical path.

For scale it also runs a floor: the same agents, rounds and pipes driven by bare asyncio with no
FREE-MAD at all, which shows what starting 16 interpreters a round costs on the machine.
The CLI is run as the environment has it, and again with a bytecode cache (see _common.py:
where PYTHONDONTWRITEBYTECODE is set, an editable install recompiles its modules every start).

Run: .venv/bin/python benchmarks/debate_critical_path.py [--repeat 3] [--agents 16] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import cached_bytecode_env, console_script, emit, machine, progress, summary

from freemad.config import parse_config
from freemad.debate import run_debate
from freemad.wiring import ADAPTERS

AGENT = Path(__file__).with_name("timed_agent.py")
REQUIREMENT = "Return the answer to the benchmark question as a Python function."
TARGET_RATIO = 1.10
REFERENCE = {
    "cli_ratio": 1.36,
    "cli_startup_s": 0.9,
    "note": "the issue's figures for the reference implementation; nothing else is known",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2, help="critique rounds")
    parser.add_argument("--delay", type=float, default=1.0, help="seconds per agent call")
    parser.add_argument("--skip-cli", action="store_true")
    args = parser.parse_args()
    critical_path = (args.rounds + 1) * args.delay
    load_at_start = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="freemad-bench-") as folder:
        work = Path(folder)
        log = work / "calls.tsv"
        config_path = work / "config.yaml"
        config_path.write_text(config_yaml(args.agents, args.delay, log, work), encoding="utf-8")
        config = parse_config(config_path.read_text(encoding="utf-8"), name=str(config_path))

        progress("agent start-up alone ...")
        startup = {
            "timed_agent_call_with_delay_0_ms": summary(time_agent_alone(work), 1),
            "mock_agent_call_with_delay_0_ms": summary(time_mock_agent(), 1),
        }

        floor: list[dict[str, Any]] = []
        for i in range(args.repeat):
            progress(f"bare asyncio floor run {i + 1}/{args.repeat} ...")
            floor.append(floor_run(args.agents, args.rounds, args.delay, log))
        library: list[dict[str, Any]] = []
        for i in range(args.repeat):
            progress(f"library run {i + 1}/{args.repeat} ...")
            library.append(library_run(config, args.rounds, log))
        cli: list[dict[str, Any]] = []
        cli_cached: list[dict[str, Any]] = []
        if not args.skip_cli:
            for i in range(args.repeat):
                progress(f"cli run {i + 1}/{args.repeat} ...")
                cli.append(cli_run(config_path, args.rounds, log, None))
            cached = cached_bytecode_env(work / "pycache")
            cli_run(config_path, args.rounds, log, cached)  # fills the bytecode cache
            for i in range(args.repeat):
                progress(f"cli run with a bytecode cache {i + 1}/{args.repeat} ...")
                cli_cached.append(cli_run(config_path, args.rounds, log, cached))

    every_run = floor + library + cli + cli_cached
    calls = [ms for run in every_run for ms in run.pop("fork_to_main_ms")]
    startup["timed_agent_fork_to_main_in_debate_ms"] = summary(calls, 1)
    figures: dict[str, Any] = {
        "benchmark": "debate_critical_path",
        "machine": machine(),
        "loadavg_1m_at_start": load_at_start,
        "setup": {
            "agents": args.agents,
            "critique_rounds": args.rounds,
            "agent_call_s": args.delay,
            "critical_path_s": critical_path,
            "agent": f"{Path(sys.executable).name} -I -S {AGENT.name} (stdlib only)",
            "topology": "all_to_all",
            "max_concurrent_agents": args.agents,
            "cache": False,
            "save_transcript": False,
            "repeat": args.repeat,
        },
        "agent_startup": startup,
        "floor_bare_asyncio": aggregate(floor, critical_path),
        "library": aggregate(library, critical_path),
        "target_ratio": TARGET_RATIO,
        "reference": REFERENCE,
    }
    if cli:
        figures["cli"] = aggregate(cli, critical_path)
        figures["cli_with_bytecode_cache"] = aggregate(cli_cached, critical_path)
    figures["median_overhead_s"] = overheads(floor, library, cli, cli_cached)
    emit(figures)


def agent_argv(index: int, delay: float, log: Path) -> list[str]:
    answer = str(index % 4)  # four distinct answers, so scoring has something to do
    return [sys.executable, "-I", "-S", str(AGENT), "--delay", str(delay), "--answer", answer,
            "--log", str(log)]  # fmt: skip


def config_yaml(agents: int, delay: float, log: Path, work: Path) -> str:
    python = sys.executable
    lines = ["agents:"]
    for i in range(agents):
        command = shlex.join(agent_argv(i, delay, log))
        lines += [
            f"  - id: agent-{i:02d}",
            f"    cli_command: {command!r}",
            "    cli_mode_arg: true",
            "    timeout: 120",
        ]
    lines += [
        "topology: {type: all_to_all}",
        f"deadlines: {{soft_timeout_ms: 120000, hard_timeout_ms: 240000, min_agents: {agents}}}",
        f"security: {{cli_allowed_commands: [{python!r}]}}",
        f"budget: {{max_concurrent_agents: {agents}}}",
        "cache: {enabled: false}",
        f"output: {{save_transcript: false, transcript_dir: {str(work / 'transcripts')!r}}}",
        "logging: {level: ERROR}",
    ]
    return "\n".join(lines) + "\n"


def time_agent_alone(work: Path, runs: int = 10) -> list[float]:
    """A whole call of the timed agent with no delay: its interpreter's start-up and exit."""
    argv = [sys.executable, "-I", "-S", str(AGENT), "generate", "--delay", "0"]
    return [timed_call(argv, work) for _ in range(runs)]


def time_mock_agent(runs: int = 10) -> list[float]:
    """The bundled mock agent, for comparison: its start-up would add to any --delay given it."""
    argv = [console_script("freemad-mock-agent"), "generate", "--delay", "0"]
    return [timed_call(argv, None) for _ in range(runs)]


def timed_call(argv: list[str], cwd: Path | None) -> float:
    started = time.perf_counter()
    subprocess.run(argv, input=REQUIREMENT, capture_output=True, text=True, check=True, cwd=cwd)
    return (time.perf_counter() - started) * 1000


def floor_run(agents: int, rounds: int, delay: float, log: Path) -> dict[str, Any]:
    """The same calls as a debate, made by bare asyncio: no prompts, parsing or scoring."""

    async def call(argv: list[str], prompt: bytes) -> None:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        await process.communicate(prompt)

    async def debate() -> None:
        for round_no in range(rounds + 1):
            mode = "critique" if round_no else "generate"
            prompt = f"{REQUIREMENT}\nThis is critique round {round_no}.\n".encode()
            argvs = [[*agent_argv(i, delay, log), mode] for i in range(agents)]
            await asyncio.gather(*(call(argv, prompt) for argv in argvs))

    return timed(lambda: asyncio.run(debate()), log)


def timed(action: Any, log: Path) -> dict[str, Any]:
    """Run `action` once; its wall time, this process's CPU time, and the agents' breakdown."""
    log.write_text("", encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_SELF)
    boot_start = time.clock_gettime(time.CLOCK_BOOTTIME)
    started = time.perf_counter()
    value = action()
    wall = time.perf_counter() - started
    boot_end = time.clock_gettime(time.CLOCK_BOOTTIME)
    after = resource.getrusage(resource.RUSAGE_SELF)
    run = breakdown(log, boot_start, boot_end)
    run["wall_s"] = wall
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    run["parent_cpu_ms"] = cpu * 1000
    run["value"] = value
    return run


def library_run(config: Any, rounds: int, log: Path) -> dict[str, Any]:
    run = timed(lambda: run_debate(REQUIREMENT, config, rounds=rounds, adapters=ADAPTERS), log)
    result = run.pop("value")
    if result.status != "completed" or result.metrics["failures"] or result.metrics["cut"]:
        sys.exit(f"the debate did not complete cleanly: {result.error} {result.metrics}")
    run["critical_path_ms"] = result.metrics["critical_path_ms"]
    run["round_duration_ms"] = [r.duration_ms for r in result.transcript]
    return run


def cli_run(
    config_path: Path, rounds: int, log: Path, env: dict[str, str] | None
) -> dict[str, Any]:
    argv = [console_script("freemad"), REQUIREMENT, "--rounds", str(rounds)]
    argv += ["--config", str(config_path), "--quiet"]
    run = timed(
        lambda: subprocess.run(
            argv, capture_output=True, text=True, check=False, cwd=config_path.parent, env=env
        ),
        log,
    )
    done = run.pop("value")
    if done.returncode != 0:
        sys.exit(f"freemad exited {done.returncode}: {done.stderr.strip()}")
    del run["parent_cpu_ms"]  # the CLI's CPU time is its child's, not ours
    return run


def breakdown(log: Path, boot_start: float, boot_end: float) -> dict[str, Any]:
    """Where a run's time went, from the agents' own log of fork, start and reply times."""
    rounds: dict[int, list[tuple[float, float, float]]] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        _mode, round_no, _pid, forked, started, replied = line.split("\t")
        rounds.setdefault(int(round_no), []).append((float(forked), float(started), float(replied)))
    ordered = [rounds[r] for r in sorted(rounds)]
    first_fork = [min(c[0] for c in calls) for calls in ordered]
    last_fork = [max(c[0] for c in calls) for calls in ordered]
    last_reply = [max(c[2] for c in calls) for calls in ordered]
    ms = 1000
    return {
        "calls": sum(len(calls) for calls in ordered),
        "fork_to_main_ms": [(c[1] - c[0]) * ms for calls in ordered for c in calls],
        "parts_ms": {
            "before_first_spawn": (first_fork[0] - boot_start) * ms,
            "spawn_spread_per_round": [
                (b - a) * ms for a, b in zip(first_fork, last_fork, strict=True)
            ],
            "last_reply_to_next_spawn": [
                (first_fork[i + 1] - last_reply[i]) * ms for i in range(len(ordered) - 1)
            ],
            "last_reply_to_return": (boot_end - last_reply[-1]) * ms,
        },
    }


def aggregate(runs: list[dict[str, Any]], critical_path: float) -> dict[str, Any]:
    walls = [run["wall_s"] for run in runs]
    figures: dict[str, Any] = {
        "wall_s": summary(walls),
        "ratio_to_critical_path": summary([w / critical_path for w in walls]),
        "meets_target": min(walls) / critical_path <= TARGET_RATIO,
        "meets_target_at_median": statistics.median(walls) / critical_path <= TARGET_RATIO,
        "calls_per_run": runs[0]["calls"],
    }
    if "parent_cpu_ms" in runs[0]:
        figures["parent_cpu_ms"] = summary([run["parent_cpu_ms"] for run in runs], 0)
    if "critical_path_ms" in runs[0]:
        measured = [run["critical_path_ms"] for run in runs]
        figures["transcript_critical_path_ms"] = summary(measured, 0)
        figures["ratio_to_transcript_critical_path"] = summary(
            [w * 1000 / c for w, c in zip(walls, measured, strict=True)]
        )
        figures["round_duration_ms_per_run"] = [run["round_duration_ms"] for run in runs]
    parts = [run["parts_ms"] for run in runs]
    figures["breakdown_ms_median"] = {
        key: median_of([p[key] for p in parts]) for key in parts[0]
    }  # fork times have 10 ms resolution
    return figures


def overheads(*groups: list[dict[str, Any]]) -> dict[str, float]:
    """Median wall time each layer adds: FREE-MAD over bare asyncio, the CLI over the library."""
    floor, library, cli, cached = (
        statistics.median(r["wall_s"] for r in g) if g else 0.0 for g in groups
    )
    figures = {"library_over_floor": round(library - floor, 3)}
    if cli:
        figures["cli_over_library"] = round(cli - library, 3)
        figures["cli_with_bytecode_cache_over_library"] = round(cached - library, 3)
    return figures


def median_of(values: list[Any]) -> Any:
    if isinstance(values[0], list):
        return [round(statistics.median(column), 1) for column in zip(*values, strict=True)]
    return round(statistics.median(values), 1)


if __name__ == "__main__":
    main()
