"""`--health` passes an agent's program only when `--version` gets a version for an answer:
a program that ignores the flag (prints nothing, or starts its work) fails."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from freemad import __version__
from freemad.agents.health import check_agent, version_line
from freemad.config import parse_config

DEBATE_REPLY = (
    "SOLUTION:\n```python\ndef fibonacci(n):\n    return n\n```\n\n"
    "REASONING:\nversion 1.2 of the answer; simple.\n"
)


def script(folder: Path, name: str, body: str) -> str:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def health_of(program: str, agent_type: str = "generic") -> tuple[bool, str]:
    config = parse_config(
        f"agents:\n  - id: a\n    type: {agent_type}\n    cli_command: {program}\n"
        f"security:\n  cli_allowed_commands: [{program}]\n"
    )
    report = check_agent(config.agents[0])
    return report.ok, report.problem or report.version


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ("echo 'mytool 1.4.2'", True),
        ("echo v0.61.0", True),
        ("echo 'git version 2.43.0'; echo 'built by someone'", True),
        ("cat", False),  # ignores --version, echoes its (empty) stdin
        ("echo ok", False),
        (f"printf '%s' '{DEBATE_REPLY}'", False),  # answers --version with a debate
        ("seq 1 20 | sed 's/$/.0/'", False),  # a version-looking first line, then pages more
        ("echo 'mytool 1.4.2'; exit 3", False),
    ],
)
def test_only_a_version_passes(tmp_path: Path, body: str, ok: bool) -> None:
    passed, said = health_of(script(tmp_path, "tool", body))
    assert passed is ok, said
    if not ok and "exit" not in body:
        assert "--version gave no version" in said


def test_a_preset_agent_must_answer_as_its_cli_does(tmp_path: Path) -> None:
    """A `claude_code` agent whose `claude` prints some other program's version fails."""
    impostor = script(tmp_path, "claude", "echo 'mytool 1.4.2'")
    passed, said = health_of(impostor, "claude_code")
    assert not passed and "Claude Code" in said
    (tmp_path / "real").mkdir()
    real = script(tmp_path / "real", "claude", "echo '2.1.197 (Claude Code)'")
    assert health_of(real, "claude_code") == (True, "2.1.197 (Claude Code)")


@pytest.mark.parametrize(
    "program", ["freemad-mock-agent", "freemad-task-mock", "freemad-evolve-mock"]
)
def test_the_bundled_mock_agents_pass(program: str) -> None:
    passed, said = health_of(str(Path(sys.executable).parent / program))
    assert passed and said == f"{program} {__version__}"
    assert version_line(f"{program} 1") is None  # what they used to answer
