"""What an agent call does not repeat (the PATH search, the command's split) and what a debate
does not import (git): the per-call and start-up costs issue 19 measured, checked as behaviour."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from freemad.agents import invocation
from freemad.agents.agent_port import CallRequest, CallStatus
from freemad.agents.invocation import CommandNotFound, resolve_program
from freemad.agents.subprocess_agent import CliAgent
from freemad.config.models import AgentConfig, Mode
from tests.agents.conftest import FakeBin


def _counting_which(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    searched: list[str] = []
    real: Callable[..., str | None] = shutil.which

    def which(program: str, mode: int = 1, path: str | None = None) -> str | None:
        if program != "setpriv":  # the sandbox's own look-up, not an agent's
            searched.append(program)
        return real(program, mode, path)

    monkeypatch.setattr(invocation, "_FOUND", {})
    monkeypatch.setattr(invocation.shutil, "which", which)
    return searched


def test_a_debates_agents_search_path_for_their_program_once(
    fake_bin: FakeBin, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_bin.add("answerer", 'print("SOLUTION: 42")')
    searched = _counting_which(monkeypatch)
    agents = [
        CliAgent(AgentConfig(id=f"a{i}", cli_command="answerer"), max_output_bytes=10_000)
        for i in range(3)
    ]

    async def rounds() -> list[CallStatus]:
        statuses = []
        for _ in range(2):
            results = await asyncio.gather(
                *(a.call(CallRequest(Mode.GENERATE, "Hi.", 30)) for a in agents)
            )
            statuses += [r.status for r in results]
        return statuses

    assert asyncio.run(rounds()) == [CallStatus.OK] * 6
    assert searched == ["answerer"]
    assert len(fake_bin.runs()) == 6


def test_a_program_not_found_is_searched_again_and_found_once_installed(
    fake_bin: FakeBin, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched = _counting_which(monkeypatch)
    for _ in range(2):
        with pytest.raises(CommandNotFound):
            resolve_program("freemad-not-yet-installed")
    installed = fake_bin.add("freemad-not-yet-installed", "")
    assert resolve_program("freemad-not-yet-installed") == str(installed)
    assert resolve_program("freemad-not-yet-installed") == str(installed)
    assert searched == ["freemad-not-yet-installed"] * 3


def test_another_path_is_searched_anew(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    searched = _counting_which(monkeypatch)
    found = {}
    for name in ("first", "second"):
        folder = tmp_path / name
        folder.mkdir()
        program = folder / "twin"
        program.write_text("#!/bin/sh\n", encoding="utf-8")
        program.chmod(0o755)
        found[name] = resolve_program("twin", str(folder))
    assert found == {"first": str(tmp_path / "first/twin"), "second": str(tmp_path / "second/twin")}
    assert resolve_program("twin", str(tmp_path / "first")) == found["first"]
    assert searched == ["twin", "twin"]


def test_command_words_are_a_fresh_list_each_time() -> None:
    agent = AgentConfig(id="a", cli_command="python 'my agent.py' --x")
    words = agent.command_words
    words.append("changed")
    assert agent.command_words == ["python", "my agent.py", "--x"]


def test_what_a_debate_imports_leaves_git_and_sqlite_out() -> None:
    """GitPython and the store load where a repository or a store is opened, not for a debate."""
    code = (
        "import sys, freemad.cli.root, freemad.cli.output, freemad.wiring, freemad.debate, "
        "freemad.config; "
        "print(sorted(m for m in ('git', 'sqlite3', 'freemad.workspace.repositories', "
        "'freemad.store.sqlite') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
