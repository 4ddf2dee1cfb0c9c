"""The README's autonomous quick start, verbatim through the real CLI, and its bad inputs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.store import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
FREEMAD = str(Path(sys.executable).parent / "freemad")
GOAL = "Critique this architecture until the agents approve an implementation-ready plan."


def freemad(*args: str, cwd: Path, check: int | None = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [FREEMAD, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    if check is not None:
        assert done.returncode == check, done.stderr
    return done


def start_task(smoke: Path) -> dict[str, Any]:
    started = freemad(
        "task",
        "start",
        "--config",
        "smoke.yaml",
        "--json",
        "--workspace-root",
        str(smoke),
        GOAL,
        cwd=smoke,
    )
    return json.loads(started.stdout)


def slow_agents(smoke: Path, delay: float) -> None:
    config = yaml.safe_load((smoke / "smoke.yaml").read_text())
    for agent in config["agents"]:
        agent["cli_command"] = f"freemad-task-mock --delay {delay}"
    (smoke / "smoke.yaml").write_text(yaml.safe_dump(config))


def start_in_background(smoke: Path, **options: Any) -> subprocess.Popen[Any]:
    return subprocess.Popen(
        [
            FREEMAD,
            "task",
            "start",
            "--config",
            "smoke.yaml",
            "--json",
            "--workspace-root",
            str(smoke),
            GOAL,
        ],
        cwd=smoke,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **options,
    )


def wait_for_task(smoke: Path, min_events: int = 0) -> str:
    """The id of the task a background start created, once it has `min_events` events."""
    db = smoke / ".freemad/ui-smoke/tasks.db"
    for _ in range(400):
        time.sleep(0.05)
        if db.exists():
            with SqliteStore(db, smoke / ".freemad/ui-smoke/artifacts") as store:
                runs = store.runs()
                if runs and len(store.events(runs[0].run_id)) >= min_events:
                    return runs[0].run_id
    raise AssertionError("the task never got going")


@pytest.fixture
def smoke(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "configs" / "autonomous_smoke.yaml", tmp_path / "smoke.yaml")
    return tmp_path


def test_the_quick_start_waits_for_a_person_then_completes(smoke: Path) -> None:
    started = json.loads(
        freemad(
            "task",
            "start",
            "--config",
            "smoke.yaml",
            "--task-type",
            "plan",
            "--json",
            "--workspace-root",
            str(smoke),
            GOAL,
            cwd=smoke,
        ).stdout
    )
    task_id = started["task_id"]
    assert started["status"] == "waiting_for_human"
    assert started["current_stage"] == "plan_review"
    assert started["question"] == "Which storage backend should we use first? (SQLite, Postgres)"
    status = json.loads(
        freemad("task", "status", task_id, "--config", "smoke.yaml", "--json", cwd=smoke).stdout
    )
    assert status == started
    freemad("task", "answer", task_id, "Use SQLite.", "--config", "smoke.yaml", cwd=smoke)
    done = json.loads(
        freemad("task", "resume", task_id, "--config", "smoke.yaml", "--json", cwd=smoke).stdout
    )
    assert done["status"] == "completed" and done["current_stage"] == "finalize"
    inspected = json.loads(
        freemad("task", "inspect", task_id, "--config", "smoke.yaml", "--json", cwd=smoke).stdout
    )
    final = [e for e in inspected["events"] if e["kind"] == "agent_replied"][-1]
    assert "Decision from a person: Use SQLite." in final["data"]["response"]["content"]
    requests = [
        e
        for e in inspected["events"]
        if e["kind"] == "agent_replied" and e["data"]["role"] == "reviewer"
    ]
    assert requests[-1]["data"]["response"]["review_decision"] == "approve"
    listed = json.loads(
        freemad("task", "list", "--config", "smoke.yaml", "--json", cwd=smoke).stdout
    )
    assert [t["task_id"] for t in listed] == [task_id] and listed[0]["status"] == "completed"
    assert (smoke / ".freemad" / "ui-smoke" / "tasks.db").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("task", "status", "nope"), "no task 'nope'"),
        (("task", "answer", "nope", "x"), "no task 'nope'"),
        (("task", "approve", "{id}", "launch"), "has no stage 'launch'"),
        (("task", "answer", "{done}", "x"), "is not waiting for an answer (status: completed)"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(smoke: Path, args, message: str) -> None:
    started = start_task(smoke)
    task_id = started["task_id"]
    done_id = task_id
    freemad("task", "answer", task_id, "Use SQLite.", "--config", "smoke.yaml", cwd=smoke)
    freemad("task", "resume", task_id, "--config", "smoke.yaml", cwd=smoke)
    if "{id}" in args:
        other = start_task(smoke)
        task_id = other["task_id"]
    store = SqliteStore(smoke / ".freemad/ui-smoke/tasks.db", smoke / ".freemad/ui-smoke/artifacts")
    before = {r.run_id: len(store.events(r.run_id)) for r in store.runs()}
    store.close()
    argv = [a.format(id=task_id, done=done_id) for a in args]
    result = freemad(*argv, "--config", "smoke.yaml", cwd=smoke, check=None)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr
    store = SqliteStore(smoke / ".freemad/ui-smoke/tasks.db", smoke / ".freemad/ui-smoke/artifacts")
    assert {r.run_id: len(store.events(r.run_id)) for r in store.runs()} == before
    store.close()


def test_an_approving_reviewer_needs_no_person(smoke: Path) -> None:
    config = yaml.safe_load((smoke / "smoke.yaml").read_text())
    config["agents"][1]["cli_command"] = "freemad-task-mock --approve"
    (smoke / "smoke.yaml").write_text(yaml.safe_dump(config))
    done = start_task(smoke)
    assert done["status"] == "completed"


def test_a_config_without_a_reviewer_says_which_role_is_missing(smoke: Path) -> None:
    config = yaml.safe_load((smoke / "smoke.yaml").read_text())
    config["agents"] = [a for a in config["agents"] if a["id"] != "reviewer"]
    (smoke / "smoke.yaml").write_text(yaml.safe_dump(config))
    result = freemad("task", "start", "--config", "smoke.yaml", GOAL, cwd=smoke, check=2)
    assert "no enabled agent has the role 'reviewer'" in result.stderr
    assert (
        not (smoke / ".freemad/ui-smoke/tasks.db").exists()
        or not SqliteStore(smoke / ".freemad/ui-smoke/tasks.db").runs()
    )


def test_a_reply_that_is_not_json_is_recorded_and_the_task_asks_for_help(smoke: Path) -> None:
    config = yaml.safe_load((smoke / "smoke.yaml").read_text())
    config["agents"][0]["cli_command"] = "freemad-task-mock --fault not-json --fault-at research"
    (smoke / "smoke.yaml").write_text(yaml.safe_dump(config))
    started = start_task(smoke)
    assert started["status"] == "waiting_for_human" and started["current_stage"] == "research"
    assert "unparseable" in started["question"]


def test_kill_9_mid_task_then_resume_finishes_without_duplicates(smoke: Path) -> None:
    slow_agents(smoke, 0.3)
    db = smoke / ".freemad/ui-smoke/tasks.db"
    run = start_in_background(smoke, start_new_session=True)
    task_id = wait_for_task(smoke, min_events=4)
    os.killpg(run.pid, signal.SIGKILL)
    run.communicate()
    for _ in range(2):  # the run waits for a person once, like the quick start
        state = json.loads(
            freemad("task", "resume", task_id, "--config", "smoke.yaml", "--json", cwd=smoke).stdout
        )
        if state["status"] == "waiting_for_human":
            freemad("task", "answer", task_id, "Use SQLite.", "--config", "smoke.yaml", cwd=smoke)
    assert state["status"] == "completed"
    store = SqliteStore(db, smoke / ".freemad/ui-smoke/artifacts")
    events = store.events(task_id)
    assert [e.seq for e in events] == list(range(len(events)))
    finals = [e for e in events if e.kind == "completed"]
    assert len(finals) == 1
    shas = [a.sha256 for a in store.artifacts(task_id)]
    names = [a.name for a in store.artifacts(task_id)]
    assert len(names) == len(set(names)), "an artifact was recorded twice"
    assert len(shas) >= 1
    store.close()


def test_pause_from_another_process_stops_after_the_step_in_flight(smoke: Path) -> None:
    slow_agents(smoke, 0.5)
    run = start_in_background(smoke, text=True)
    task_id = wait_for_task(smoke)
    paused = json.loads(
        freemad("task", "pause", task_id, "--config", "smoke.yaml", "--json", cwd=smoke).stdout
    )
    assert paused["status"] == "paused"
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert json.loads(out)["status"] == "paused"
    state = json.loads(
        freemad("task", "resume", task_id, "--config", "smoke.yaml", "--json", cwd=smoke).stdout
    )
    assert state["status"] == "waiting_for_human"  # it carried on to the quick start's question
    cancelled = json.loads(
        freemad("task", "cancel", task_id, "--config", "smoke.yaml", "--json", cwd=smoke).stdout
    )
    assert cancelled["status"] == "cancelled"
    again = freemad("task", "resume", task_id, "--config", "smoke.yaml", cwd=smoke, check=2)
    assert "is cancelled" in again.stderr
