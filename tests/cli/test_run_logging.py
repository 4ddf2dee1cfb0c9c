"""Logs of a run: every agent command (its argv, never the prompt or a secret), each round with
its deadlines, and the decision; to `logging.file` and stderr, at DEBUG with --verbose."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from freemad.redact import MARK, argv_for_log

ROOT = Path(__file__).resolve().parents[2]
FREEMAD = str(Path(sys.executable).parent / "freemad")
MOCK_AGENT = str(Path(sys.executable).parent / "freemad-mock-agent")
REQUIREMENT = "Write the zebra-quokka function."  # in every prompt; never in a log
SECRET = "sk-test-0123456789abcdef"
CONFIG = f"""\
agents:
  - id: alpha
    cli_command: "{MOCK_AGENT} --persona iterative"
  - id: beta
    cli_command: "{MOCK_AGENT} --persona memoized"
security:
  cli_allowed_commands: [{MOCK_AGENT}]
output:
  save_transcript: false
"""


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": SECRET, "MY_SERVICE_TOKEN": SECRET}
    return subprocess.run(
        [FREEMAD, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_successful_debate_logs_commands_rounds_and_the_decision(tmp_path: Path) -> None:
    logging_section = "logging:\n  level: INFO\n  file: run.log\n  console: false\n"
    (tmp_path / "cfg.yaml").write_text(CONFIG + logging_section)
    done = run(REQUIREMENT, "-c", "cfg.yaml", "-r", "1", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # console: false
    log = (tmp_path / "run.log").read_text()
    for agent, persona in (("alpha", "iterative"), ("beta", "memoized")):
        assert f"INFO: agent {agent}: runs {MOCK_AGENT} --persona {persona} (in " in log
        assert f"INFO: agent {agent}: ok after " in log
    assert "round 0 (generation) starts: alpha, beta; soft deadline in 300s, hard" in log
    assert "round 1 (critique) starts" in log and "round 1 ends; scores " in log
    winner = json.loads(done.stdout)["final_answer_id"]
    assert f"decision: {winner} (score " in log
    assert "zebra" not in log and SECRET not in log
    assert "DEBUG" not in log


def test_verbose_logs_at_debug_on_stderr_and_in_the_file(tmp_path: Path) -> None:
    (tmp_path / "cfg.yaml").write_text(CONFIG + "logging:\n  file: run.log\n")  # level WARNING
    done = run(REQUIREMENT, "-c", "cfg.yaml", "-r", "0", "--verbose", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "freemad: DEBUG: debate " in done.stderr and "round 0: alpha starts" in done.stderr
    assert "freemad: INFO: agent beta: runs " in done.stderr
    log = (tmp_path / "run.log").read_text()
    assert "DEBUG: debate " in log and "round 0: beta starts (generate)" in log
    assert "zebra" not in done.stderr + log and SECRET not in done.stderr + log
    assert done.stdout.startswith("Winner ")


def test_task_commands_log_steps_and_agent_commands_with_verbose(tmp_path: Path) -> None:
    shutil.copy(ROOT / "configs" / "autonomous_smoke.yaml", tmp_path / "smoke.yaml")
    done = run("task", "start", "-c", "smoke.yaml", "-v", "--json", REQUIREMENT, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    task_id = json.loads(done.stdout)["task_id"]
    assert f"freemad: INFO: task {task_id}: agent_replied stage=intake role=planner" in done.stderr
    assert "freemad: INFO: agent planner: runs " in done.stderr
    assert f"task {task_id}: waiting_for_human stage=plan_review" in done.stderr
    assert "zebra" not in done.stderr
    assert SECRET not in done.stderr
    quiet = run("task", "status", task_id, "-c", "smoke.yaml", "--json", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == ""  # level WARNING: nothing


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["claude", "-p", "--model", "opus"], "claude -p --model opus"),
        (["tool", "--api-key", SECRET, "-x"], f"tool --api-key '{MARK}' -x"),
        (["tool", "--token=abc123", "--max-tokens", "9"], f"tool '--token={MARK}' --max-tokens 9"),
        (["env", "OPENAI_API_KEY=abc", "tool"], f"env 'OPENAI_API_KEY={MARK}' tool"),
        (["tool", "--key", "ghp_abcdefghijklmnop"], f"tool --key '{MARK}'"),
        (["tool", SECRET], f"tool '{MARK}'"),
    ],
)
def test_a_logged_command_line_hides_credentials(argv: list[str], shown: str) -> None:
    assert argv_for_log(argv) == shown
