"""The start token (`freemad.dashboard.live.token_handover`): handed from `freemad-dashboard` to gunicorn's
workers in a pipe, and no further. Over real gunicorn on loopback, a debate started with
`POST /api/debates` runs a real agent CLI that writes down its environment and answers with it:
neither the token nor the variables it came in are there, and no process of the server holds it
in its environment (`/proc/PID/environ`, readable by any process of the same user)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.dashboard.live.token_handover import TOKEN, TOKEN_FD, take_token, token_pipe
from freemad.dashboard.live.wsgi import app_from_env
from freemad.errors import UsageError
from tests.conftest import SANDBOX, recording_agent, wait_for
from tests.dashboard.served import Served, serve

TOKEN_VALUE = "start-token-under-test-5b0c9e"
DEFAULT_NAMED = "token-in-the-default-variable-77a1"  # there too, but --token-env names another


def config_file(folder: Path, agent: Path) -> Path:
    path = folder / "freemad.yaml"
    entry = {"cli_command": str(agent), "cli_mode_arg": True}
    data: dict[str, Any] = {
        "agents": [{"id": "first", **entry}, {"id": "second", **entry}],
        "security": {
            "cli_allowed_commands": [str(agent)],
            "sandbox": SANDBOX,
            "redact_patterns": [],  # the transcript as the agents answered
        },
    }
    path.write_text(yaml.safe_dump(data))
    return path


def start_debate(server: Served, token: str) -> tuple[int, dict[str, Any]]:
    return server.post("/api/debates", token, {"requirement": "Say what your environment holds."})


def environ_of(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


def test_the_start_token_never_reaches_an_agent_nor_an_environment(tmp_path: Path) -> None:
    log = tmp_path / "agent-calls.jsonl"
    config = config_file(tmp_path, recording_agent(tmp_path, log))
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    env = {
        "MY_START_TOKEN": TOKEN_VALUE,
        TOKEN: DEFAULT_NAMED,
        "FREEMAD_PROBE_VISIBLE": "the rest of the environment does reach agents",
    }
    args = ["--dir", str(transcripts), "--config", str(config), "--workers", "1"]
    args += ["--allow-start", "--token-env", "MY_START_TOKEN"]
    with serve(tmp_path, *args, env=env) as server:
        (worker,) = server.workers()
        for pid in (server.process.pid, worker):
            held = environ_of(pid)
            assert TOKEN_VALUE.encode() not in held and DEFAULT_NAMED.encode() not in held
            assert b"MY_START_TOKEN" not in held  # only the pipe's number, read and closed
        assert start_debate(server, DEFAULT_NAMED)[0] == 401  # only --token-env's counts

        # The master hands the token to a worker that replaces a killed one, from memory.
        os.kill(worker, signal.SIGKILL)
        wait_for(lambda: server.workers() not in ([], [worker]), "a new worker")
        (worker,) = server.workers()
        assert TOKEN_VALUE.encode() not in environ_of(worker)
        status, started = start_debate(server, TOKEN_VALUE)
        assert status == 202, started

        def transcript() -> dict[str, Any] | None:
            for path in transcripts.glob("*.json"):
                return dict(json.loads(path.read_text()))
            return None

        done = wait_for(transcript, "the started debate's transcript", 120)
    assert done["run_id"] == started["run_id"] and done["status"] == "completed"
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) >= 2
    for call in calls:
        environment = call["env"]
        assert environment["FREEMAD_PROBE_VISIBLE"] == env["FREEMAD_PROBE_VISIBLE"]
        written = json.dumps(environment)
        assert TOKEN_VALUE not in written and DEFAULT_NAMED not in written
        assert "MY_START_TOKEN" not in environment and TOKEN_FD not in environment
        assert not [name for name in environment if name.startswith("FREEMAD_DASHBOARD_")]
    answers = json.dumps(done)
    assert "the rest of the environment does reach agents" in answers  # they answered with it
    assert TOKEN_VALUE not in answers and DEFAULT_NAMED not in answers


def test_the_app_takes_the_token_out_of_its_own_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a worker builds it: what the app starts (a debate's process) cannot inherit it."""
    monkeypatch.setenv(TOKEN, TOKEN_VALUE)
    monkeypatch.setenv("FREEMAD_DASHBOARD_DIR", str(tmp_path))
    monkeypatch.setenv("FREEMAD_DASHBOARD_ALLOW_START", "1")
    app = app_from_env()
    assert TOKEN not in os.environ
    assert app.extensions["freemad.dashboard"].starter.token == TOKEN_VALUE.encode()


def test_the_pipe_holds_the_token_once_and_nothing_else_is_taken_for_one() -> None:
    number = str(token_pipe("a token"))
    environ = {TOKEN_FD: number, TOKEN: "an older one"}
    assert take_token(environ) == "a token"
    assert environ == {}  # both gone: a process this one starts finds neither
    with pytest.raises(UsageError, match="not an open pipe"):
        take_token({TOKEN_FD: number})  # read and closed
    with pytest.raises(UsageError, match="at most 4096"):
        token_pipe("x" * 4097)
    with open(os.devnull, "rb") as not_a_pipe:
        for given in (str(not_a_pipe.fileno()), "3x"):
            with pytest.raises(UsageError, match="pipe"):
                take_token({TOKEN_FD: given})
