"""Real runs of the three runtimes, made once per test session through the real CLI: debate
transcripts from the bundled mock agents, a task waiting for a person, and the evolve toy run to
its target. The dashboards' tests render these, as a user's would be."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import SANDBOX

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FREEMAD = str(BIN / "freemad")
FIB = "Write a function that returns Fibonacci(n)."
TASK_GOAL = "Critique this <b>architecture</b> until the plan is ready."
EVOLVE_GOAL = "make slow_sum as fast as possible"


@dataclass(frozen=True)
class Runs:
    root: Path
    transcripts: Path
    task_store: Path
    evolve_store: Path
    debate_id: str
    task_id: str
    evolve_id: str
    toy: Path


def environment(home: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        env.pop(name, None)
    return env


def run(*args: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    return done.stdout


def git_repo(path: Path, env: dict[str, str]) -> None:
    run("git", "init", "-q", "-b", "main", cwd=path, env=env)
    run("git", "add", "-A", cwd=path, env=env)
    run(
        "git",
        "-c",
        "user.name=u",
        "-c",
        "user.email=u@u",
        "commit",
        "-qm",
        "init",
        cwd=path,
        env=env,
    )


def start_plan_task(config: str, work: Path, goal: str, env: dict[str, str]) -> str:
    """`freemad task start --task-type plan` from `work` (its workspace); the task's id."""
    started = run(
        FREEMAD,
        "task",
        "start",
        "--config",
        config,
        "--task-type",
        "plan",
        "--json",
        "--workspace-root",
        str(work),
        goal,
        cwd=work,
        env=env,
    )
    return str(json.loads(started)["task_id"])


def make_runs(root: Path) -> Runs:
    env = environment(root)
    (root / "gitconfig").write_text("")
    work = root / "work"
    work.mkdir()
    (work / "README.md").write_text("a repository\n")
    git_repo(work, env)
    debate = json.loads(run(FREEMAD, FIB, "--rounds", "2", "--json", "--quiet", cwd=work, env=env))
    # configs/autonomous_smoke.yaml; its state here
    task_id = start_plan_task("builtin:autonomous_smoke", work, TASK_GOAL, env)
    toy = root / "toy"
    shutil.copytree(ROOT / "examples/evolve_toy", toy, ignore=shutil.ignore_patterns(".freemad"))
    if SANDBOX == "host":  # no bubblewrap here: the pages need a run all the same
        config = toy / "evolve.yaml"
        config.write_text(config.read_text().replace("security:\n", "security:\n  sandbox: host\n"))
    git_repo(toy, env)
    evolve = json.loads(
        run(
            FREEMAD,
            "evolve",
            "start",
            "--config",
            "evolve.yaml",
            "--json",
            EVOLVE_GOAL,
            cwd=toy,
            env=env,
        )
    )
    return Runs(
        root=root,
        transcripts=work / "transcripts",
        task_store=work / ".freemad/ui-smoke/tasks.db",
        evolve_store=toy / ".freemad/evolve/evolve.db",
        debate_id=str(debate["run_id"]),
        task_id=task_id,
        evolve_id=str(evolve["run_id"]),
        toy=toy,
    )


def site_build(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FREEMAD, "site", "build", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def transcript_of(runs: Runs) -> dict[str, Any]:
    for path in runs.transcripts.glob("*.json"):
        data = json.loads(path.read_text())
        if data["run_id"] == runs.debate_id:
            return dict(data)
    raise AssertionError("no transcript of the debate")


def winner_line(transcript: dict[str, Any]) -> str:
    """How a debate page names its winner: by the answer id the CLI and the comments print."""
    return f"<strong>Winner: <code>{transcript['final_answer_id']}</code></strong>"
