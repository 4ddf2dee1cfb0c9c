"""Endurance, accelerated: one evolve run of the toy, hundreds of iterations, nobody watching.

A copy of examples/evolve_toy, committed to a repository of its own, evolved by the scripted
worker replaying its steps in a cycle (`freemad-evolve-mock --cycle`): admissions, wrong
versions, tamper attempts and no-improvement candidates, over and over; stalls bring
interventions (debates of scripted agents) on their own, and no question ever reaches a person.
The judge runs for real (tests/check.py and bench.py) in its sandbox.

Checks (exit 1 when one fails, with the figures still printed):
- every iteration 0..N is judged exactly once, every start ends judged or abandoned, every
  admission has its version, and every version's tag names a commit on the run's branch;
- the runner's resident memory and open file descriptors, sampled every --sample iterations,
  stay flat after the first sample (allowances: --rss-mb, 2 descriptors);
- nothing is left: no worktree of the run, no process started by it.

Run: .venv/bin/python benchmarks/evolve_endurance.py [--iterations 500] [--sample 50]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit, machine, progress

from freemad.config.load import load_config
from freemad.evolve.evolve_runner import EvolveRunner
from freemad.sandbox import reaper
from freemad.wiring import ADAPTERS, open_evolve_store

TOY = Path(__file__).resolve().parents[1] / "examples" / "evolve_toy"
GIT_USER = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com"]


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def toy_repository(root: Path) -> Path:
    repo = root / "toy"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns(".freemad", "__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, *GIT_USER, "commit", "-qm", "init")
    return repo


def endurance_config(repo: Path, iterations: int) -> Any:
    config = load_config(repo / "evolve.yaml")
    assert config.evolve is not None
    agents = [
        a.model_copy(update={"cli_command": a.cli_command.replace("--steps", "--cycle --steps")})
        for a in config.agents
    ]
    evolve = config.evolve.model_copy(
        update={
            "stop": config.evolve.stop.model_copy(
                update={"max_iterations": iterations, "target": [], "max_wall_clock_minutes": None}
            ),
            "supervisor": config.evolve.supervisor.model_copy(
                update={"max_interventions_before_human": 1_000_000}
            ),
        }
    )
    return config.model_copy(update={"agents": agents, "evolve": evolve})


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def started_by_us(worktrees: Path, spare: int | None = None) -> list[str]:
    """Processes still alive that this run started: our children, or anything working in the
    run's worktrees folder; but `spare`, this process's reaper (freemad/sandbox/reaper.py),
    which lives as long as this process does and is checked apart (`reaper.announced`)."""
    found: list[str] = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in (me, spare):
            continue
        try:
            stat = (entry / "stat").read_text()
            cwd = os.readlink(entry / "cwd")
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if (parent == me or cwd.startswith(str(worktrees))) and " Z " not in stat:
            found.append(f"{entry.name}: {command.strip()[:120]}")
    return found


def accounting(events: list[tuple[str, dict[str, Any]]], iterations: int) -> list[str]:
    """What the event log fails to account for; empty when every iteration is there once."""
    problems: list[str] = []
    judged = [d["iteration"] for k, d in events if k == "candidate_judged"]
    if judged != list(range(iterations + 1)):
        problems.append(f"judged iterations are not exactly 0..{iterations} once each")
    open_start: int | None = None
    for kind, data in events:
        if kind == "iteration_started":
            if open_start is not None:
                problems.append(f"iteration {open_start} started twice without an end")
            open_start = data["iteration"]
        elif kind in ("candidate_judged", "iteration_abandoned"):
            if open_start != data["iteration"]:
                problems.append(f"iteration {data['iteration']} ended without a start")
            open_start = None
    admitted = [d["version"] for k, d in events if k == "candidate_judged" and "version" in d]
    versions = [d["version"] for k, d in events if k == "version_admitted"]
    if admitted != versions or versions != list(range(len(versions))):
        problems.append(f"admissions {admitted} and versions {versions} differ")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--sample", type=int, default=50)
    parser.add_argument("--rss-mb", type=float, default=40.0, help="allowed RSS growth")
    args = parser.parse_args()
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    with tempfile.TemporaryDirectory(prefix="freemad-endurance-") as folder:
        root = Path(folder)
        repo = toy_repository(root)
        config = endurance_config(repo, args.iterations)
        worktrees = root / "worktrees"
        samples: list[dict[str, int]] = []

        def on_step(kind: str, data: dict[str, Any]) -> None:
            if kind == "candidate_judged" and data["iteration"] % args.sample == 0:
                samples.append(
                    {"iteration": data["iteration"], "rss_kib": rss_kib(), "fds": open_fds()}
                )
                progress(f"iteration {data['iteration']}: {samples[-1]}")

        assert config.evolve is not None
        store = open_evolve_store(config.evolve.resolved(repo))
        began = time.monotonic()
        with store:
            runner = EvolveRunner(
                config,
                store,
                config_dir=repo,
                on_step=on_step,
                worktrees_dir=worktrees,
                adapters=ADAPTERS,
            )
            state = runner.start("make slow_sum as fast as possible")
            events = [(e.kind, e.data) for e in store.events(state.run_id)]
        wall = time.monotonic() - began
        problems = accounting(events, args.iterations)
        branch = f"freemad/evolve/{state.run_id}"
        for version in state.versions:
            tag = git(repo, "rev-parse", f"evolve/{state.run_id}/v{version.version}^{{commit}}")
            ancestor = ["git", "merge-base", "--is-ancestor", tag, branch]
            done = subprocess.run(ancestor, cwd=repo, check=False)
            if tag != version.commit or done.returncode != 0:
                problems.append(f"v{version.version} is not its tag on the branch")
        # Flat after warm-up: the first sample after the baseline iteration is the reference.
        baseline = samples[min(1, len(samples) - 1)] if samples else {"rss_kib": 0, "fds": 0}
        rss_growth = max(s["rss_kib"] for s in samples) - baseline["rss_kib"] if samples else 0
        fd_growth = max(s["fds"] for s in samples) - baseline["fds"] if samples else 0
        if rss_growth > args.rss_mb * 1024:
            problems.append(f"resident memory grew by {rss_growth} KiB")
        if fd_growth > 2:
            problems.append(f"open file descriptors grew by {fd_growth}")
        worktree_list = git(repo, "worktree", "list", "--porcelain").count("worktree ")
        if worktree_list != 1 or (worktrees / state.run_id).exists():
            problems.append("a worktree of the run is left")
        leftovers = started_by_us(worktrees, spare=reaper.watcher_pid())
        if leftovers:
            problems.append(f"processes left: {leftovers}")
        if reaper.announced():  # a call or stage that was never killed and forgotten
            problems.append(f"process groups still announced: {sorted(reaper.announced())}")
        kinds: dict[str, int] = {}
        for kind, _ in events:
            kinds[kind] = kinds.get(kind, 0) + 1
        emit(
            {
                "benchmark": "evolve_endurance",
                "machine": machine(),
                "iterations": args.iterations,
                "status": state.status.value,
                "stop_reason": state.stop_reason,
                "versions": len(state.versions),
                "events": kinds,
                "wall_seconds": round(wall, 1),
                "seconds_per_iteration": round(wall / (args.iterations + 1), 3),
                "samples": samples,
                "rss_growth_kib": rss_growth,
                "fd_growth": fd_growth,
                "problems": problems,
                "ok": not problems,
            }
        )
    sys.exit(0 if not problems else 1)


if __name__ == "__main__":
    main()
