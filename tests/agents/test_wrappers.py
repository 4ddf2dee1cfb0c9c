"""The scripts in bin/: each runs as a real process, against fake claude/codex programs where needed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from freemad.agents.invocation import build_argv
from freemad.config.models import AgentConfig, AgentType, Mode
from freemad.core.replies import parse_critique, parse_generation
from tests.agents import samples
from tests.agents.conftest import FakeBin, env_without_keys

BIN = Path(__file__).resolve().parents[2] / "bin"
WRAPPERS = ["mock_agent.py", "claude_print_wrapper.py", "codex_exec_wrapper.py"]
PROMPT = "Write a function that returns Fibonacci(n)."


def run_script(name: str, *args: str, stdin: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BIN / name), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env_without_keys(**env),
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("name", WRAPPERS)
def test_wrappers_are_executable_python_scripts(name: str) -> None:
    path = BIN / name
    assert os.access(path, os.X_OK)
    assert path.read_text(encoding="utf-8").startswith("#!/usr/bin/env python3\n")


def test_mock_agent_script_answers_a_generate_prompt() -> None:
    done = run_script("mock_agent.py", "generate", "--persona", "memoized", stdin=PROMPT)
    assert done.returncode == 0, done.stderr
    reply = parse_generation(done.stdout)
    assert "lru_cache" in reply.solution


def test_mock_agent_script_reads_the_mode_from_the_prompt() -> None:
    done = run_script("mock_agent.py", stdin="Critique this.\nDECISION: KEEP or REVISE")
    assert done.returncode == 0, done.stderr
    assert parse_critique(done.stdout).decision.value == "keep"


# --- claude -----------------------------------------------------------------------------------

_CLAUDE_OK = f"""\
print({samples.CLAUDE_JSON_OK.strip()!r})
"""
_CLAUDE_NOT_LOGGED_IN = f"""\
print({samples.CLAUDE_JSON_NOT_LOGGED_IN.strip()!r})
sys.exit(1)
"""


def test_claude_wrapper_prints_the_result_of_print_mode(fake_bin: FakeBin) -> None:
    fake_bin.add("claude", _CLAUDE_OK)
    done = run_script("claude_print_wrapper.py", "critique", "--model", "sonnet", stdin=PROMPT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "HELLO-FROM-FAKE\n"
    (run,) = fake_bin.runs()
    preset = build_argv(AgentConfig(id="c", type=AgentType.CLAUDE_CODE), Mode.CRITIQUE)
    assert run["argv"] == [*preset[1:], "--model", "sonnet"]
    assert run["argv"][:2] == ["--tools", ""]
    assert run["stdin"] == PROMPT


def test_claude_wrapper_passes_a_failure_through(fake_bin: FakeBin) -> None:
    fake_bin.add("claude", _CLAUDE_NOT_LOGGED_IN)
    done = run_script("claude_print_wrapper.py", stdin=PROMPT)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Not logged in · Please run /login" in done.stderr


def test_claude_wrapper_exit_status_is_claudes(fake_bin: FakeBin) -> None:
    fake_bin.add("claude", "print('boom', file=sys.stderr); sys.exit(7)")
    done = run_script("claude_print_wrapper.py", stdin=PROMPT)
    assert done.returncode == 7
    assert "boom" in done.stderr


def test_claude_wrapper_says_when_claude_is_missing(tmp_path: Path) -> None:
    done = run_script("claude_print_wrapper.py", stdin=PROMPT, CLAUDE_BIN=str(tmp_path / "nope"))
    assert done.returncode == 127
    assert "cannot run" in done.stderr


# --- codex ------------------------------------------------------------------------------------

_CODEX_LOGGED_IN = f"""\
if argv[:2] == ["login", "status"]:
    print("Logged in using ChatGPT", file=sys.stderr)
    sys.exit(0)
print("2026-11-30T02:28:30Z ERROR codex_api: a log line on stderr", file=sys.stderr)
sys.stdout.write({samples.CODEX_JSON_OK!r})
"""
_CODEX_NOT_LOGGED_IN = f"""\
if argv[:2] == ["login", "status"]:
    sys.stderr.write({samples.CODEX_LOGIN_STATUS_STDERR!r})
    sys.exit(1)
sys.stdout.write({samples.CODEX_JSON_OK!r})
"""
_CODEX_TURN_FAILED = f"""\
sys.stdout.write({samples.CODEX_JSON_401!r})
sys.exit(1)
"""


def test_codex_wrapper_prints_the_final_agent_message(fake_bin: FakeBin) -> None:
    fake_bin.add("codex", _CODEX_LOGGED_IN)
    done = run_script("codex_exec_wrapper.py", "generate", "-m", "gpt-5.5", stdin=PROMPT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "HELLO-FROM-FAKE\n"
    assert "a log line on stderr" in done.stderr  # codex's log is passed through
    login, run = fake_bin.runs()
    assert login["argv"] == ["login", "status"]
    preset = build_argv(AgentConfig(id="c", type=AgentType.OPENAI_CODEX), Mode.GENERATE)
    assert run["argv"] == [*preset[1:-1], "-m", "gpt-5.5", "-"]
    assert run["stdin"] == PROMPT


def test_codex_wrapper_stops_when_not_logged_in(fake_bin: FakeBin) -> None:
    fake_bin.add("codex", _CODEX_NOT_LOGGED_IN)
    done = run_script("codex_exec_wrapper.py", stdin=PROMPT)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Not logged in" in done.stderr and "codex login" in done.stderr
    assert [run["argv"] for run in fake_bin.runs()] == [["login", "status"]]


def test_codex_wrapper_with_a_key_skips_the_login_check(fake_bin: FakeBin) -> None:
    fake_bin.add("codex", _CODEX_NOT_LOGGED_IN)
    done = run_script("codex_exec_wrapper.py", stdin=PROMPT, CODEX_API_KEY="sk-test")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "HELLO-FROM-FAKE\n"
    assert [run["argv"][0] for run in fake_bin.runs()] == ["exec"]


def test_codex_wrapper_reports_a_failed_turn(fake_bin: FakeBin) -> None:
    fake_bin.add("codex", _CODEX_TURN_FAILED)
    done = run_script("codex_exec_wrapper.py", stdin=PROMPT, OPENAI_API_KEY="sk-fake")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "401 Unauthorized: Incorrect API key provided" in done.stderr
