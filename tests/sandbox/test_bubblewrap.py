"""The bubblewrap sandbox, attacked from inside with real processes: nothing outlives its call or
FREE-MAD, no socket reaches out, nothing outside the worktree is written, no credential is seen."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from freemad.agents.agent_port import CallRequest
from freemad.agents.subprocess_agent import CliAgent
from freemad.config.models import AgentConfig, Mode
from freemad.debate.debate_runner import run_debate
from freemad.sandbox import View, agent_sandbox, code_sandbox
from freemad.store import SqliteStore
from freemad.wiring import ADAPTERS
from tests.conftest import MOCK_AGENT, make_config, mock_agent
from tests.sandbox.attacks import (
    HOSTILE,
    PROJECT,
    PY,
    kill_marked,
    marked,
    needs_bwrap,
    new_marker,
    none_left,
    wait_marked,
)

pytestmark = needs_bwrap

DAEMON = (
    "import os, sys, time\n"
    "if os.fork(): sys.exit(0)\n"
    "os.setsid()\n"
    "if os.fork(): sys.exit(0)\n"
    "time.sleep(60)\n"
)


@pytest.fixture
def marker() -> Iterator[str]:
    name = new_marker()
    yield name
    kill_marked(name)


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home folder outside /tmp (which the sandbox hides whole), with credentials in it."""
    folder = PROJECT / ".cache" / "test-homes" / uuid.uuid4().hex
    (folder / ".ssh").mkdir(parents=True)
    (folder / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (folder / ".netrc").write_text("machine github.com password hunter2")
    (folder / ".codex").mkdir()
    (folder / ".codex" / "auth.json").write_text('{"token": "codex-login"}')
    (folder / "notes.txt").write_text("readable")
    monkeypatch.setenv("HOME", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def run_code(cwd: Path, code: str, *, network: bool = False, view: View | None = None) -> object:
    box = code_sandbox("auto", network)
    return box.run([PY, "-c", code], cwd, 60, view or View.of([cwd]))


def test_a_setsid_daemon_started_by_a_stage_dies_with_it(tmp_path: Path, marker: str) -> None:
    code = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {DAEMON!r}, {marker!r}])"
    result = code_sandbox("auto").run([PY, "-c", code], tmp_path, 60, View.of([tmp_path]))
    assert result.ok(), result.stderr
    assert none_left(marker), "a daemon outlived its judge stage"


def test_a_timed_out_stage_leaves_nothing(tmp_path: Path, marker: str) -> None:
    code = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {DAEMON!r}, {marker!r}]); time.sleep(60)"
    result = code_sandbox("auto").run([PY, "-c", code, marker], tmp_path, 2.0, View.of([tmp_path]))
    assert result.timed_out
    assert none_left(marker)


def test_unix_sockets_are_refused_without_network_and_work_with_it(tmp_path: Path) -> None:
    path = tmp_path / "daemon.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    code = (
        f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({str(path)!r}); print('in')"
    )
    with server:
        closed = code_sandbox("auto", False).run(
            [PY, "-c", code], tmp_path, 60, View.of([tmp_path])
        )
        opened = code_sandbox("auto", True).run([PY, "-c", code], tmp_path, 60, View.of([tmp_path]))
    assert opened.stdout == "in\n", opened.stderr
    assert closed.exit_code != 0 and "PermissionError" in closed.stderr


def test_tcp_to_loopback_is_refused_without_network(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)"
        result = code_sandbox("auto").run([PY, "-c", code], tmp_path, 60, View.of([tmp_path]))
    assert result.exit_code != 0 and "Error" in result.stderr


def test_only_the_worktree_is_writable_and_protected_paths_are_not(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "check.py").write_text("original")
    outside = PROJECT / ".cache" / f"outside-{uuid.uuid4().hex}"
    code = (
        "import sys\n"
        "def attempt(path):\n"
        "    try:\n"
        "        open(path, 'w').write('x'); return 'written'\n"
        "    except OSError as exc:\n"
        "        return type(exc).__name__\n"
        f"print(attempt('new.py'), attempt('tests/check.py'), attempt({str(outside)!r}),"
        " attempt(sys.prefix + '/evil.pth'))\n"
    )
    view = View.of([work], [work / "tests"])
    result = code_sandbox("auto").run([PY, "-c", code], work, 60, view)
    assert result.stdout.split() == ["written", "OSError", "OSError", "OSError"], result.stderr
    assert (work / "new.py").read_text() == "x"
    assert (work / "tests" / "check.py").read_text() == "original"
    assert not outside.exists()


def test_code_sees_no_credentials_git_folder_or_secret(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    git_dir = PROJECT / ".cache" / f"fake-git-{uuid.uuid4().hex}"
    git_dir.mkdir(parents=True)
    (git_dir / "config").write_text("[core]")
    code = (
        "import os, pathlib\n"
        "home = pathlib.Path.home()\n"
        "def read(path):\n"
        "    try:\n"
        "        return path.read_text() or 'empty'\n"
        "    except OSError:\n"
        "        return 'unreadable'\n"
        "print(sorted(p.name for p in (home / '.ssh').iterdir()),"
        " read(home / '.netrc') in ('empty', 'unreadable'), read(home / 'notes.txt'),"
        f" os.listdir({str(git_dir)!r}), 'GITHUB_TOKEN' in os.environ,"
        " sorted(p.name for p in (home / '.codex').iterdir()))\n"
    )
    try:
        result = code_sandbox("auto").run(
            [PY, "-c", code], tmp_path, 60, View.of([tmp_path], hidden=[git_dir])
        )
    finally:
        shutil.rmtree(git_dir)
    assert result.stdout.strip() == "[] True readable [] False []", result.stderr


def test_a_toolchain_in_the_home_folder_still_runs(tmp_path: Path) -> None:
    python = Path(sys.executable).resolve()
    if not python.is_relative_to(Path.home()):
        pytest.skip(f"this Python ({python}) is not in the home folder")
    result = code_sandbox("auto").run([PY, "-c", "print('ran')"], tmp_path, 60, View.of([tmp_path]))
    assert result.stdout == "ran\n", result.stderr


def test_a_daemon_started_by_an_agent_call_dies_with_the_call(tmp_path: Path, marker: str) -> None:
    script = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {DAEMON!r}, {marker!r}]); print('SOLUTION: 42')"
    config = AgentConfig(id="a", cli_command=f"{PY} -c {_quoted(script)}")
    agent = CliAgent(
        config, max_output_bytes=100_000, sandbox=agent_sandbox("auto"), view=View.of([tmp_path])
    )
    result = asyncio.run(agent.call(CallRequest(Mode.GENERATE, "go", 30)))
    assert result.ok, result.detail
    assert none_left(marker), "a daemon outlived its agent call"


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _lingering_task(root: Path, marker: str) -> tuple[Path, list[str]]:
    """A config whose agents linger in their call (with a setsid daemon each), and the argv of
    `freemad task start` with it."""
    linger = f"{PY} {HOSTILE} linger {marker}"
    config = {
        "agents": [
            {"id": "a", "cli_command": linger, "roles": ["researcher", "planner", "implementer"]},
            {"id": "b", "cli_command": linger, "roles": ["reviewer", "verifier"]},
        ],
        "security": {"cli_allowed_commands": [PY], "sandbox_agents": True},
        "output": {"save_transcript": False},
        "task": {
            "store_path": str(root / "store" / "tasks.db"),
            "artifacts_dir": str(root / "store" / "artifacts"),
            "worktrees_dir": str(root / "worktrees"),
        },
    }
    path = root / "freemad.yaml"
    path.write_text(yaml.safe_dump(config))
    freemad = str(Path(PY).with_name("freemad"))
    return path, [freemad, "task", "start", "--config", str(path), "--workspace-root", str(root)]


def test_kill_9_of_freemad_takes_the_agent_and_its_daemons(tmp_path: Path, marker: str) -> None:
    _, argv = _lingering_task(tmp_path, marker)
    process = subprocess.Popen([*argv, "plan the work"], stderr=subprocess.PIPE)
    try:
        wait_marked(marker, process)
        deadline = time.monotonic() + 30
        while len(marked(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the agent, then the daemon it starts
        assert len(marked(marker)) >= 2, "the agent and its daemon run while FREE-MAD does"
        process.send_signal(signal.SIGKILL)
        process.communicate()
        assert none_left(marker, 10), "the agent CLI outlived a kill -9 of FREE-MAD"
    finally:
        process.kill()


def test_resume_while_a_task_runs_is_refused(tmp_path: Path, marker: str) -> None:
    config, argv = _lingering_task(tmp_path, marker)
    process = subprocess.Popen([*argv, "plan the work"], stderr=subprocess.PIPE)
    try:
        wait_marked(marker, process)
        with SqliteStore(
            tmp_path / "store" / "tasks.db", tmp_path / "store" / "artifacts"
        ) as store:
            [row] = store.runs(kind="task")
        freemad = argv[0]
        resumed = subprocess.run(
            [freemad, "task", "resume", "--config", str(config), row.run_id],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ},
            check=False,
        )
        assert resumed.returncode != 0
        assert f"task {row.run_id} is being run by another process" in resumed.stderr
        assert "Traceback" not in resumed.stderr
    finally:
        process.kill()
        process.communicate()


def test_debate_agents_run_sandboxed_when_asked(tmp_path: Path, marker: str) -> None:
    """security.sandbox_agents: each debate agent in the agent profile; a daemon one of them
    starts is gone with its call, and the debate still has a winner."""
    daemon_then_answer = (
        f"import subprocess, sys; subprocess.run([sys.executable, '-c', {DAEMON!r}, {marker!r}]); "
        "print('SOLUTION: 42'); print('REASONING: because'); print('DECISION: KEEP')"
    )
    agents = [mock_agent("m1"), mock_agent("m2")]
    agents.append({"id": "d", "cli_command": f"{PY} -c {_quoted(daemon_then_answer)}"})
    config = make_config(
        agents, security={"sandbox_agents": True, "cli_allowed_commands": [MOCK_AGENT, PY]}
    )
    result = run_debate("What is six times seven?", config, rounds=1, adapters=ADAPTERS)
    assert result.status == "completed", result.error
    assert "d" in result.holders_history[0], "the daemon's agent answered in round 0"
    assert none_left(marker), "a debate agent's daemon outlived its call"


def test_a_toolchain_under_tmp_is_still_found_by_code_and_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox's /tmp is private, but a virtual environment someone made in /tmp is a
    toolchain like any other: its `bin` on PATH (and a program named by path) still runs."""
    prefix = tmp_path / "venv"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "share.txt").write_text("from the prefix")
    tool = prefix / "bin" / "hello-tool"
    tool.write_text(f"#!/bin/sh\ncat {prefix / 'share.txt'}\necho ' SOLUTION: 42'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}")
    work = tmp_path / "work"
    work.mkdir()
    ran = code_sandbox("auto").run(["hello-tool"], work, 60, View.of([work]))
    assert ran.stdout.startswith("from the prefix"), ran.stderr
    write = code_sandbox("auto").run(
        ["sh", "-c", f"echo x > {prefix}/new"], work, 60, View.of([work])
    )
    assert write.exit_code != 0 and not (prefix / "new").exists()  # read-only, as all of /
    agent = CliAgent(
        AgentConfig(id="a", cli_command=str(tool)),
        max_output_bytes=10_000,
        sandbox=agent_sandbox("auto"),
        view=View.of([work]),
    )
    result = asyncio.run(agent.call(CallRequest(Mode.GENERATE, "go", 30)))
    assert result.ok, result.detail
