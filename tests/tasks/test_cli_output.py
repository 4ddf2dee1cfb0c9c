"""What `freemad task ...` prints: text for a person (on a terminal, or `--text`) that asks the
question with the command that answers it, acknowledges the answer and shows the final plan;
JSON for programs (`--json`, or stdout not a terminal)."""

from __future__ import annotations

import json
import os
import pty
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import terminal

ROOT = Path(__file__).resolve().parents[2]
FREEMAD = str(Path(sys.executable).parent / "freemad")
GOAL = "Plan a key-value store with a small HTTP API."
QUESTION = "Which storage backend should we use first? (SQLite, Postgres)"


def freemad(*args: str, cwd: Path, check: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [FREEMAD, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == check, done.stdout + done.stderr
    return done


def on_terminal(*args: str, cwd: Path) -> str:
    """Run with stdout on a pseudo-terminal; what the terminal showed."""
    status, _, seen = terminal.on_terminal([FREEMAD, *args], cwd=cwd, stdout_too=True)
    assert status == 0, seen
    return seen.replace("\r\n", "\n")


@pytest.fixture
def smoke(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "configs" / "autonomous_smoke.yaml", tmp_path / "smoke.yaml")
    return tmp_path


def started(smoke: Path) -> str:
    out = freemad("task", "start", "--config", "smoke.yaml", "--json", GOAL, cwd=smoke).stdout
    return str(json.loads(out)["task_id"])


def test_the_question_is_asked_with_the_command_that_answers_it(smoke: Path) -> None:
    out = freemad("task", "start", "--config", "smoke.yaml", "--text", GOAL, cwd=smoke).stdout
    assert "waiting_for_human (plan_review)" in out
    assert f"The task asks:\n  {QUESTION}\n" in out
    assert not out.lstrip().startswith("{")
    command = next(line.strip() for line in out.splitlines() if " task answer " in line)
    argv = shlex.split(command)
    assert argv[:3] == ["freemad", "task", "answer"] and "--config" in argv

    # The command works as printed (the answer put in its place), from the same folder.
    argv[argv.index("YOUR ANSWER")] = "Use SQLite."
    answered = freemad(*argv[1:], "--text", cwd=smoke).stdout
    assert answered.startswith("answer recorded; the task goes on\n")
    assert QUESTION not in answered and "waiting_for_human" not in answered
    assert "completed" in answered
    plan = answered.split("Final plan:", 1)[1]
    assert f"# Final plan for: {GOAL}" in plan and "Decision from a person: Use SQLite." in plan


def test_json_after_an_answer_no_longer_says_waiting(smoke: Path) -> None:
    task_id = started(smoke)
    done = freemad(
        "task", "answer", task_id, "Use SQLite.", "-c", "smoke.yaml", "--json", cwd=smoke
    )
    state = json.loads(done.stdout)  # stdout is JSON alone; the acknowledgement is on stderr
    assert state["status"] == "completed" and state["question"] is None
    assert "answer recorded" in done.stderr
    # A resume after that (the old two-step way) shows the completed task and succeeds.
    again = freemad("task", "resume", task_id, "-c", "smoke.yaml", "--json", cwd=smoke)
    assert json.loads(again.stdout)["status"] == "completed"
    assert "already completed" in again.stderr


def test_programs_get_json_without_asking(smoke: Path) -> None:
    """stdout not a terminal: the JSON scripts have always read, `task_id` first of all."""
    out = freemad("task", "start", "--config", "smoke.yaml", GOAL, cwd=smoke).stdout
    assert json.loads(out)["question"] == QUESTION
    listed = json.loads(freemad("task", "list", "--config", "smoke.yaml", cwd=smoke).stdout)
    assert [t["status"] for t in listed] == ["waiting_for_human"]


def test_status_is_a_short_table_on_a_terminal(smoke: Path) -> None:
    task_id = started(smoke)
    shown = on_terminal("task", "status", "--config", "smoke.yaml", cwd=smoke)
    header, row = shown.strip().splitlines()[:2]
    assert header.split() == ["ID", "KIND", "STATE", "UPDATED", "WAITS", "FOR"]
    assert row.startswith(f"{task_id}  plan  waiting_for_human (plan_review)  ")
    assert row.endswith(f"your answer: {QUESTION}")

    one = on_terminal("task", "status", task_id, "--config", "smoke.yaml", cwd=smoke)
    assert one.startswith(header) and f"The task asks:\n  {QUESTION}" in one
    assert json.loads(freemad("task", "status", task_id, "-c", "smoke.yaml", cwd=smoke).stdout)


def test_list_shows_what_each_task_waits_for(smoke: Path) -> None:
    waiting, cancelled = started(smoke), started(smoke)
    freemad("task", "cancel", cancelled, "-c", "smoke.yaml", cwd=smoke)
    table = freemad("task", "list", "-c", "smoke.yaml", "--text", cwd=smoke).stdout
    rows = {line.split()[0]: line for line in table.splitlines()[1:]}
    assert rows[cancelled].split()[2] == "cancelled" and rows[cancelled].endswith("  -")
    assert rows[waiting].endswith(f"your answer: {QUESTION}")


def test_a_live_line_shows_the_agent_at_work_on_a_terminal(smoke: Path) -> None:
    config = (smoke / "smoke.yaml").read_text()
    slow = config.replace(
        "cli_command: freemad-task-mock", "cli_command: freemad-task-mock --delay 1"
    )
    (smoke / "smoke.yaml").write_text(slow)
    controller, terminal = pty.openpty()
    with subprocess.Popen(
        [FREEMAD, "task", "start", "-c", "smoke.yaml", "--json", GOAL],
        cwd=smoke,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
    ) as process:
        os.close(terminal)
        seen = bytearray()
        while b"intake: planner planner" not in seen or b"\xe2\x9c\x93 intake" not in seen:
            try:
                seen += os.read(controller, 4096)
            except OSError:
                break
        process.kill()
        os.close(controller)
    err = seen.decode(errors="replace")
    working = re.search(r"… intake: planner planner \d+\.\ds", err)
    assert working is not None, err
    assert working.start() < err.index("✓ intake: planner planner"), err
