"""Code tasks on real git repositories: their own branch, verification, the tool policy, and
the user's checkout left exactly as it was."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.config import parse_config
from freemad.store import SqliteStore
from freemad.tasks.task_runner import TaskRunner
from freemad.wiring import ADAPTERS
from tests.conftest import SANDBOX, needs_bwrap
from tests.sandbox.attacks import kill_marked, new_marker, none_left

PY = sys.executable
CHECK = (
    f"{PY} -c \"import sys; sys.path.insert(0, 'src'); import calc; assert calc.add(2, 3) == 5\""
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "me@example.com")
    git(repo, "config", "user.name", "Me")
    (repo / "README.md").write_text("# calc\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    (repo / "README.md").write_text("# calc\n\nwork in progress\n")  # the user's uncommitted edit
    return repo


def mock(*args: str) -> str:
    return shlex.join(["freemad-task-mock", *args])


def runner(
    tmp_path: Path,
    implementer: str,
    planner: str = mock("--approve"),
    sandbox: str = SANDBOX,
    **policy: Any,
) -> tuple[TaskRunner, SqliteStore]:
    data = {
        "agents": [
            {"id": "planner", "cli_command": planner, "roles": ["planner", "researcher"]},
            {"id": "reviewer", "cli_command": mock("--approve"), "roles": ["reviewer"]},
            {"id": "coder", "cli_command": implementer, "roles": ["implementer"]},
        ],
        "security": {"cli_allowed_commands": ["freemad-task-mock"], "sandbox": sandbox},
        "task": {
            "store_path": str(tmp_path / "store" / "tasks.db"),
            "artifacts_dir": str(tmp_path / "store" / "artifacts"),
            "worktrees_dir": str(tmp_path / "worktrees"),
            "max_stage_retries": 1,
            "tool_policy": {
                "allow_workspace_write": True,
                "allowed_write_roots": ["src"],
                "allow_local_commands": True,
                "allowed_local_commands": [PY],
                "verification_commands": [CHECK],
                **policy,
            },
        },
    }
    config = parse_config(yaml.safe_dump(data))
    store = SqliteStore(config.task.store_path, config.task.artifacts_dir)
    return TaskRunner(config, store, adapters=ADAPTERS), store


def checkout(repo: Path) -> tuple[str, str, str]:
    return git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), git(repo, "diff")


def test_a_code_task_lands_on_its_own_branch_and_leaves_the_checkout_alone(
    tmp_path: Path, repo: Path
) -> None:
    before = checkout(repo)
    coder = mock("--write", "src/calc.py=def add(a, b): return a + b", "--command", f"{PY} -c pass")
    tasks, store = runner(tmp_path, coder)
    state = tasks.start("code", "Add calc.add", repo)
    assert state.status.value == "completed", state.question
    assert checkout(repo) == before
    assert not (repo / "src").exists()
    branch = f"freemad/task/{state.task_id}"
    assert state.branch == branch
    assert git(repo, "show", f"{branch}:src/calc.py").strip() == "def add(a, b): return a + b"
    events = store.events(state.task_id)
    (verification,) = [e for e in events if e.kind == "verification"]
    assert verification.data["passed"] is True
    (done,) = [e for e in events if e.kind == "item_done"]
    assert done.data["written"] == ["src/calc.py"] and done.data["commit"]
    assert done.data["commands"][0]["exit_code"] == 0
    log = store.read_artifact(done.data["commands"][0]["artifact_id"]).decode()
    assert "[exit 0]" in log
    published = tasks.approve(state.task_id, "publish")
    assert published.publish_approved
    store.close()


def test_policy_violations_become_findings_not_crashes(tmp_path: Path, repo: Path) -> None:
    coder = mock(
        "--write",
        "src/calc.py=def add(a, b): return a + b",
        "--write",
        "../escape.txt=x",
        "--write",
        "tests/sneaky.py=x",
        "--command",
        "curl http://example.com",
    )
    tasks, store = runner(tmp_path, coder)
    state = tasks.start("code", "Add calc.add", repo)
    (done,) = [e for e in store.events(state.task_id) if e.kind == "item_done"]
    violations = " | ".join(done.data["violations"])
    assert "../escape.txt" in violations and "tests/sneaky.py" in violations
    assert "curl" in violations
    assert not (tmp_path / "escape.txt").exists()
    reviews = [
        e
        for e in store.events(state.task_id)
        if e.kind == "agent_replied" and e.data["stage"] == "code_review"
    ]
    assert reviews, "the reviewer saw the work (and its findings)"
    store.close()


def test_a_failing_verification_is_an_attempt_then_a_question(tmp_path: Path, repo: Path) -> None:
    coder = mock("--write", "src/calc.py=def add(a, b): return a - b")
    tasks, store = runner(tmp_path, coder)
    state = tasks.start("code", "Add calc.add", repo)
    assert state.status.value == "waiting_for_human"
    assert state.current_stage == "verify"
    assert "AssertionError" in (state.question or "") or "exited 1" in (state.question or "")
    verifications = [e for e in store.events(state.task_id) if e.kind == "verification"]
    assert [v.data["passed"] for v in verifications] == [False, False]
    store.close()


def items(*specs: tuple[str, list[str], list[str]]) -> str:
    return json.dumps(
        [
            {"id": i, "title": i, "depends_on": deps, "write_scope": scope}
            for i, deps, scope in specs
        ]
    )


def test_independent_items_run_at_once_and_overlapping_ones_never(
    tmp_path: Path, repo: Path
) -> None:
    meet, alone = tmp_path / "meet", tmp_path / "alone"
    plan = items(
        ("a", [], ["src/a"]),
        ("b", [], ["src/b"]),
        ("c", ["a", "b"], ["src"]),
        ("d", [], ["src/a/x"]),
    )
    tasks, store = runner(
        tmp_path,
        mock(
            "--write",
            "src/calc.py=def add(a, b): return a + b",
            "--rendezvous",
            str(meet),
            "--exclusive",
            str(alone),
        ),
        planner=mock("--approve", "--items", plan),
        # The implementers meet in folders outside their worktree, which a sandbox hides.
        sandbox="host",
        verification_commands=[],
    )
    state = tasks.start("code", "Add calc.add", repo)
    assert state.status.value == "completed", state.question
    done = [e.data["item_id"] for e in store.events(state.task_id) if e.kind == "item_done"]
    assert sorted(done) == ["a", "b", "c", "d"]
    assert done.index("c") > max(done.index("a"), done.index("b")), "depends_on is honoured"
    assert (meet / "met-a").exists() or (meet / "met-b").exists(), "a and b ran at once"
    assert not list(alone.glob("overlap-*")), "items with overlapping scopes ran at once"
    store.close()


def test_kill_9_during_execute_never_reruns_a_finished_item(tmp_path: Path, repo: Path) -> None:
    plan = items(("first", [], ["src"]), ("second", ["first"], ["src"]))
    coder = mock("--write", "src/calc.py=def add(a, b): return a + b", "--delay", "1.5")
    tasks, store = runner(
        tmp_path, coder, planner=mock("--approve", "--items", plan), verification_commands=[]
    )
    config_path = tmp_path / "cfg.yaml"
    config_path.write_text(yaml.safe_dump(tasks.config.model_dump(mode="json", exclude_none=True)))
    store.close()
    freemad_bin = str(Path(sys.executable).parent / "freemad")
    run = subprocess.Popen(
        [
            freemad_bin,
            "task",
            "start",
            "--config",
            str(config_path),
            "--task-type",
            "code",
            "--workspace-root",
            str(repo),
            "Add calc.add",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    task_id = None
    for _ in range(600):
        time.sleep(0.05)
        store = SqliteStore(tmp_path / "store" / "tasks.db", tmp_path / "store" / "artifacts")
        runs = store.runs()
        if runs and any(e.kind == "item_done" for e in store.events(runs[0].run_id)):
            task_id = runs[0].run_id
        store.close()
        if task_id:
            break
    assert task_id is not None, "the first item never finished"
    os.killpg(run.pid, signal.SIGKILL)
    run.communicate()
    resumed = subprocess.run(
        [freemad_bin, "task", "resume", task_id, "--config", str(config_path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert json.loads(resumed.stdout)["status"] == "completed", resumed.stderr
    store = SqliteStore(tmp_path / "store" / "tasks.db", tmp_path / "store" / "artifacts")
    events = store.events(task_id)
    calls = [
        e.data["item"] for e in events if e.kind == "agent_replied" and e.data["stage"] == "execute"
    ]
    assert calls.count("first") == 1, calls
    assert [e.data["item_id"] for e in events if e.kind == "item_done"] == ["first", "second"]
    store.close()


@needs_bwrap
def test_a_daemon_a_command_starts_is_gone_when_the_command_ends(
    tmp_path: Path, repo: Path
) -> None:
    """Both kinds of task command (the implementer's and verification) run in the sandbox: a
    double-forked, setsid daemon either starts dies with its command."""
    marker = new_marker()
    daemon = (
        "import os, sys, time; os.fork() and sys.exit(0); os.setsid(); "
        "os.fork() and sys.exit(0); time.sleep(60)"
    )
    command = f"{PY} -c {shlex.quote(daemon)} {marker}"
    coder = mock("--write", "src/calc.py=def add(a, b): return a + b", "--command", command)
    tasks, store = runner(tmp_path, coder, verification_commands=[CHECK, command])
    try:
        state = tasks.start("code", "Add calc.add", repo)
        assert state.status.value == "completed", state.question
        (done,) = [e for e in store.events(state.task_id) if e.kind == "item_done"]
        assert done.data["commands"][0]["exit_code"] == 0
        assert none_left(marker), "a task command's daemon outlived it"
    finally:
        kill_marked(marker)
        store.close()
