"""What the git side of one evolve iteration costs: prepare, restore, stage, commit, advance.

A repository of --folders x --files small .py files plus a protected tests/ folder of 20 files,
one commit. One Lineage; each iteration resets the worktree to the incumbent, edits 3 files
(what the worker would do), restores the protected tests/, stages, reads the protected ids and
the changed paths, commits and advances the branch to version K (every iteration is admitted,
so the incumbent moves each time). The store append the runtime does per iteration is not
included: `store_step` is the hook where its owner adds it. Median and p90 per iteration and
per step over --iterations, after --warmup. Target: under 300 ms per iteration.

Run: .venv/bin/python benchmarks/evolve_iteration.py [--iterations 30] [--folders 50] [--files 20]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import emit, machine, progress, summary

from freemad.core.evolve.git_names import commit_message
from freemad.workspace.lineage import Lineage, resolve_seed

TARGET_MS = 300
RUN_ID = "a1b2c3d4e5f60718"
PROTECTED = ["tests"]
USER = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com", "-c", "commit.gpgsign=false"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--folders", type=int, default=50)
    parser.add_argument("--files", type=int, default=20, help="files per folder")
    parser.add_argument("--dir", default=None, help="where the repository and worktree go")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="evolve-iteration-") as folder:
        root = Path(folder)
        progress(f"building a repository of {args.folders * args.files} files")
        repo = build_repository(root / "repo", args.folders, args.files)
        lineage = Lineage.open(repo, RUN_ID, resolve_seed(repo, "HEAD"), root / "worktrees")
        steps: dict[str, list[float]] = {}
        totals: list[float] = []
        incumbent = lineage.seed
        for k in range(1, args.warmup + args.iterations + 1):
            timings: dict[str, float] = {}
            incumbent = iteration(lineage, incumbent, k, args.folders, timings)
            if k > args.warmup:
                totals.append(sum(timings.values()))
                for name, value in timings.items():
                    steps.setdefault(name, []).append(value)
        processes = count_git_processes(
            lineage, incumbent, args.warmup + args.iterations + 1, args.folders
        )
    median = summary(totals)["median"]
    emit(
        {
            "benchmark": "evolve_iteration",
            "machine": machine() | {"git": git_version()},
            "repository_files": args.folders * args.files + 20,
            "iteration_ms": summary(totals),
            "steps_ms": {name: summary(values) for name, values in steps.items()},
            "git_processes_per_iteration": processes,
            "target_ms": TARGET_MS,
            "meets_target": median < TARGET_MS,
        }
    )


def iteration(
    lineage: Lineage, incumbent: str, version: int, folders: int, timings: dict[str, float]
) -> str:
    """One admitted iteration; each step's milliseconds go into `timings`."""

    def timed(name: str, step: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = step()
        timings[name] = (time.perf_counter() - start) * 1000
        return result

    timed("prepare", lambda: lineage.prepare(incumbent))
    for n in range(3):  # the worker's edit, not timed
        path = lineage.worktree / f"pkg{(version * 3 + n) % folders:02d}" / f"mod{n:02d}.py"
        path.write_text(path.read_text() + f"VERSION_{version} = {version}\n")
    timed("restore_protected", lambda: lineage.restore_protected(PROTECTED))
    tree = timed("stage", lineage.stage)
    timed("protected_ids", lambda: lineage.protected_ids(tree, PROTECTED))
    changed = timed("changed_paths", lambda: lineage.changed_paths(tree, incumbent))
    assert len(changed) == 3, changed
    message = commit_message("make it faster", RUN_ID, version, version, {"score": 1.0})
    commit = timed("commit", lambda: lineage.commit(tree, incumbent, message))
    timed("advance", lambda: lineage.advance(incumbent, commit, version))
    timed("store_step", store_step)
    return str(commit)


def store_step() -> None:
    """Hook: the runtime's store appends for one iteration (judged, admitted) go here."""


def build_repository(root: Path, folders: int, files: int) -> Path:
    root.mkdir(parents=True)
    for f in range(folders):
        package = root / f"pkg{f:02d}"
        package.mkdir()
        for n in range(files):
            body = "".join(f"def f{i}(x):\n    return x * {i} + {n}\n\n" for i in range(12))
            (package / f"mod{n:02d}.py").write_text(body)
    (root / "tests").mkdir()
    for n in range(20):
        (root / "tests" / f"test_{n:02d}.py").write_text(f"def test_{n}():\n    assert True\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "seed")
    return root


def count_git_processes(lineage: Lineage, incumbent: str, version: int, folders: int) -> int:
    """git processes one iteration starts, counted with GIT_TRACE2 on a final, untimed iteration."""
    with tempfile.NamedTemporaryFile(suffix=".trace") as trace:
        os.environ["GIT_TRACE2_EVENT"] = trace.name
        try:
            iteration(lineage, incumbent, version, folders, {})
        finally:
            del os.environ["GIT_TRACE2_EVENT"]
        return Path(trace.name).read_text().count('"event":"start"')


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *USER, *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def git_version() -> str:
    return subprocess.run(
        ["git", "--version"], check=True, capture_output=True, text=True
    ).stdout.strip()


if __name__ == "__main__":
    main()
