"""Shared pieces of the attack tests: the evolve toy and a pytest judge with a hostile worker,
and finding what a worker left running by the marker in its argv."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.config.load import parse_config
from freemad.evolve.evolve_runner import EvolveRunner
from freemad.store import SqliteStore
from freemad.wiring import ADAPTERS, open_evolve_store
from tests.conftest import needs_bwrap
from tests.processes import alive, settles

__all__ = ["needs_bwrap"]

PROJECT = Path(__file__).resolve().parents[2]
HOSTILE = Path(__file__).with_name("hostile_worker.py")
PY = sys.executable


PYTEST_BENCH = """import json, sys, time
sys.path.insert(0, "")
from slow_sum import slow_sum
start = time.perf_counter()
for n in range(0, 300, 10):
    slow_sum(n)
print(json.dumps({"components": {"runtime_ms": (time.perf_counter() - start) * 1000}}))
"""
PYTEST_TESTS = """import pytest

from slow_sum import slow_sum


def test_small_sums():
    assert [slow_sum(n) for n in range(5)] == [0, 0, 1, 3, 6]


def test_negative_refused():
    with pytest.raises(ValueError):
        slow_sum(-1)
"""


def new_marker() -> str:
    return f"freemad-attack-{uuid.uuid4().hex[:12]}"


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return done.stdout.strip()


def commit_all(repo: Path) -> None:
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "seed")


def toy_repo(root: Path) -> Path:
    """The evolve toy as a user has it: a copy of examples/evolve_toy, committed."""
    repo = root / "toy"
    shutil.copytree(PROJECT / "examples" / "evolve_toy", repo)
    (repo / ".gitignore").write_text(".freemad/\n__pycache__/\n")
    commit_all(repo)
    return repo


def pytest_repo(root: Path) -> Path:
    """A repository judged the way docs/evolve.md shows: `python -m pytest -q tests`."""
    repo = root / "pyrepo"
    (repo / "tests").mkdir(parents=True)
    shutil.copy(PROJECT / "examples" / "evolve_toy" / "slow_sum.py", repo / "slow_sum.py")
    (repo / "tests" / "test_sum.py").write_text(PYTEST_TESTS)
    (repo / "bench.py").write_text(PYTEST_BENCH)
    (repo / ".gitignore").write_text(".freemad/\n__pycache__/\n.pytest_cache/\n")
    commit_all(repo)
    return repo


def toy_judge() -> dict[str, Any]:
    return {
        "stages": [
            {"name": "tests", "command": f"{PY} tests/check.py", "provides": ["tests_pass"]},
            {
                "name": "bench",
                "command": f"{PY} bench.py --repeat 1",
                "parse": "json_stdout",
                "provides": ["runtime_ms"],
            },
        ],
        "gate": ["tests_pass == 1"],
        "comparator": [{"component": "runtime_ms", "direction": "minimize"}],
        "protected_paths": ["tests", "bench.py", "scripted"],
    }


def pytest_judge() -> dict[str, Any]:
    return {
        "stages": [
            {"name": "tests", "command": f"{PY} -m pytest -q tests", "provides": ["tests_pass"]},
            {
                "name": "bench",
                "command": f"{PY} bench.py",
                "parse": "json_stdout",
                "provides": ["runtime_ms"],
            },
        ],
        "gate": ["tests_pass == 1"],
        "comparator": [{"component": "runtime_ms", "direction": "minimize"}],
        "protected_paths": ["tests", "bench.py"],
    }


def runner(
    root: Path,
    repo: Path,
    attack: str,
    marker: str,
    *,
    sandbox: str,
    judge: dict[str, Any],
    editable: list[str] | None = None,
) -> tuple[EvolveRunner, SqliteStore]:
    """One iteration of evolve on `repo` with the hostile worker doing `attack`."""
    evolve: dict[str, Any] = {
        "repo_path": str(repo),
        "store_path": str(root / "store" / "evolve.db"),
        "variation": {"mode": "single_agent", "agent_id": "worker"},
        "judge": judge,
        "stop": {"max_iterations": 1},
        "worker_budget": {"timeout_sec": 60},
    }
    if editable is not None:
        evolve["editable_paths"] = editable
    data = {
        "agents": [
            {"id": "worker", "cli_command": f"{PY} {HOSTILE} {attack} {marker}", "timeout": 60}
        ],
        "security": {"cli_allowed_commands": [PY], "sandbox": sandbox},
        "output": {"save_transcript": False},
        "evolve": evolve,
    }
    config = parse_config(yaml.safe_dump(data))
    assert config.evolve is not None
    store = open_evolve_store(config.evolve.resolved(root))
    run = EvolveRunner(
        config,
        store,
        config_dir=root,
        worktrees_dir=root / "worktrees",
        adapters=ADAPTERS,
    )
    return run, store


def marked(marker: str) -> list[int]:
    """The processes alive with `marker` in their command line."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def none_left(marker: str, wait: float = 5.0) -> bool:
    """Whether every marked process is gone within `wait` seconds."""
    return settles(lambda: not marked(marker), wait)


def kill_marked(marker: str) -> None:
    """Clean up after a test whose defence failed: nothing it started may outlive it."""
    for pid in marked(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_marked(marker: str, process: subprocess.Popen[bytes], limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not marked(marker):
        if process.poll() is not None:
            _, err = process.communicate()
            pytest.fail(f"the run ended before the worker started: {err.decode()[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail("the marked worker never started")
        time.sleep(0.05)
