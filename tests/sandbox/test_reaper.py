"""The reaper (`freemad.sandbox.reaper`): what FREE-MAD starts on this host dies with it, kill -9
included, with no `setpriv` before each command; and nothing it was not given dies with it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from freemad.agents.agent_port import CallRequest
from freemad.agents.subprocess_agent import CliAgent
from freemad.config.models import AgentConfig, Mode
from freemad.sandbox import host, reaper
from freemad.sandbox.reaper import Reaper
from tests.conftest import MOCK_AGENT
from tests.processes import alive, children, gone, parent
from tests.sandbox.attacks import kill_marked, marked, new_marker, none_left

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")

PY = sys.executable
STANDIN = Path(__file__).with_name("reaper_standin.py")
# An agent that starts a child in its own group and a daemon in a session of its own (both
# marked by argv), then lingers: what kill -9 of FREE-MAD must take down with it.
LINGERING_AGENT = """
import os, subprocess, sys, time
marker = sys.argv[1]
sleep = [sys.executable, "-c", "import time; time.sleep(120)", marker]
subprocess.Popen(sleep)
subprocess.Popen(sleep, start_new_session=True)
time.sleep(120)
"""


@pytest.fixture
def marker() -> Iterator[str]:
    name = new_marker()
    yield name
    kill_marked(name)


def standin(marker: str, *what: str) -> tuple[subprocess.Popen[str], dict[str, int]]:
    process = subprocess.Popen([PY, str(STANDIN), marker, *what], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, f"the stand-in printed nothing (exit status {process.poll()})"
    return process, json.loads(line)


def kill_9(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.communicate(timeout=10)


def test_kill_9_of_a_debate_takes_its_agents_their_children_and_their_daemons(
    tmp_path: Path, marker: str
) -> None:
    script = tmp_path / "linger.py"
    script.write_text(LINGERING_AGENT)
    config = {
        "agents": [
            {"id": "lingers", "cli_command": f"{PY} {script} {marker}"},
            {"id": "mock", "cli_command": MOCK_AGENT},
        ],
        "security": {"cli_allowed_commands": [PY, MOCK_AGENT]},
        "output": {"save_transcript": False},
    }
    path = tmp_path / "freemad.yaml"
    path.write_text(yaml.safe_dump(config))
    freemad = str(Path(PY).with_name("freemad"))
    process = subprocess.Popen(
        [freemad, "what is six times seven?", "--config", str(path), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 60
        while len(marked(marker)) < 3 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        running = marked(marker)
        assert len(running) == 3, "the agent, its child and its daemon run while FREE-MAD does"
        assert all(_parent_name(pid) != "setpriv" for pid in running)
        process.send_signal(signal.SIGKILL)
        process.communicate()
        assert none_left(marker, 10), "an agent, its child or its daemon outlived kill -9"
    finally:
        process.kill()
        process.communicate()


def _parent_name(pid: int) -> str:
    ppid = parent(pid)
    try:
        return Path(f"/proc/{ppid}/comm").read_text().strip() if ppid else ""
    except OSError:
        return ""


def test_a_command_killed_before_it_was_announced_still_dies_by_its_mark(marker: str) -> None:
    process, pids = standin(marker, "watched", "unwatched")
    assert alive(pids["watched"]) and alive(pids["unwatched"])
    kill_9(process)
    assert gone(pids["watched"]) and gone(pids["unwatched"])
    assert gone(pids["watcher"]), "the watcher ends once it has reaped"


def test_a_forged_line_cannot_aim_the_reaper_at_a_process_without_its_mark(marker: str) -> None:
    """A process of the same user can open the watcher's pipe through /proc and write to it. The
    lines it writes name a bystander, init, garbage and a line longer than any pid: the
    bystander (not started by FREE-MAD, so without the mark) survives FREE-MAD's death."""
    bystander = subprocess.Popen(
        [PY, "-c", "import time; time.sleep(120)", marker], start_new_session=True
    )
    process, pids = standin(marker, "watched")
    try:
        with open(f"/proc/{pids['watcher']}/fd/0", "wb", buffering=0) as pipe:
            for line in (f"+{bystander.pid}\n", "+1\n", "+0\n", "+-5\n", "+x\n", "+" + "9" * 80):
                pipe.write(line.encode())
        kill_9(process)
        assert gone(pids["watched"]), "the announced, marked command died"
        assert gone(pids["watcher"])
        assert bystander.poll() is None, "a forged line killed a process FREE-MAD never started"
    finally:
        bystander.kill()
        bystander.wait()


def test_a_dead_watcher_is_replaced_and_told_of_what_runs(marker: str) -> None:
    process, pids = standin(marker, "kill-watcher", "watched")
    assert pids["watcher"] != pids["first_watcher"] and alive(pids["watcher"])
    kill_9(process)
    assert gone(pids["watched"]), "the second watcher reaped what the first was told of"


def test_a_forked_child_has_a_watcher_of_its_own(marker: str) -> None:
    """The child drops its copy of the parent's pipe: the parent's death still ends the parent's
    watch, and the child's commands are the child's watcher's, killed when the child dies."""
    process, pids = standin(marker, "fork", "watched")
    [child] = [pid for pid in children(process.pid) if pid != pids["first_watcher"]]
    try:
        assert pids["watcher"] != pids["first_watcher"]
        process.kill()
        process.wait()
        assert gone(pids["first_watcher"]), "the parent's watcher saw its parent die"
        assert alive(pids["watched"]), "the child lives: its command runs on"
        os.kill(child, signal.SIGKILL)
        assert gone(pids["watched"]), "the child's own watcher reaped the child's command"
        assert gone(pids["watcher"])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
        process.communicate()


def test_an_agent_call_announces_its_group_and_forgets_it_once_killed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[tuple[str, int]] = []
    monkeypatch.setattr(reaper, "watch", lambda pgid: sent.append(("watch", pgid)))
    monkeypatch.setattr(reaper, "forget", lambda pgid: sent.append(("forget", pgid)))
    agent = CliAgent(AgentConfig(id="m", cli_command=MOCK_AGENT), max_output_bytes=100_000)
    result = asyncio.run(agent.call(CallRequest(Mode.GENERATE, "what is six times seven?", 30)))
    assert result.ok, result.detail
    assert [kind for kind, _ in sent] == ["watch", "forget"]
    assert sent[0][1] == sent[1][1]


def test_commands_run_without_setpriv_while_the_reaper_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert reaper.enabled()
    assert host.guard() == []
    monkeypatch.setattr(reaper, "enabled", lambda: False)
    assert host.guard() == host.die_with_parent()


def test_without_an_interpreter_to_run_it_the_reaper_stands_aside(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "executable", "")
    fresh = Reaper()
    assert not fresh.enabled()
    assert fresh.watcher_pid() is None
    fresh.watch(os.getpid())  # nothing to tell, nothing raised
    fresh.forget(os.getpid())


def test_a_finished_call_leaves_nothing_announced() -> None:
    agent = CliAgent(AgentConfig(id="m", cli_command=MOCK_AGENT), max_output_bytes=100_000)
    result = asyncio.run(agent.call(CallRequest(Mode.GENERATE, "what is six times seven?", 30)))
    assert result.ok, result.detail
    assert reaper.watcher_pid() is not None
    assert reaper.announced() == frozenset()
