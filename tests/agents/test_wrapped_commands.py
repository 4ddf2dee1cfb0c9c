"""Agents whose command is a wrapper script, as the reference implementation's configs have them:
no preset flags of a CLI they are not, and relative script paths that still work."""

from __future__ import annotations

from pathlib import Path

from freemad.agents.invocation import anchor_command_paths, build_argv
from freemad.agents.presets import PRESETS, preset_of
from freemad.config import AgentConfig, AgentType, Mode


def agent(**fields: object) -> AgentConfig:
    return AgentConfig.model_validate({"id": "a", **fields})


def test_a_typed_agent_running_another_program_is_called_as_configured() -> None:
    wrapped = agent(type="claude_code", cli_command="python bin/mock_agent.py", cli_mode_arg=True)
    assert preset_of(wrapped) is PRESETS[AgentType.GENERIC]
    assert build_argv(wrapped, Mode.GENERATE) == ["python", "bin/mock_agent.py", "generate"]
    codex = agent(type="openai_codex", cli_command="python bin/mock_agent.py")
    assert build_argv(codex, Mode.CRITIQUE) == ["python", "bin/mock_agent.py"]
    assert preset_of(codex).login_check == ()  # no `python login status`


def test_the_cli_itself_keeps_its_preset_wherever_it_lives() -> None:
    assert preset_of(agent(type="claude_code")) is PRESETS[AgentType.CLAUDE_CODE]
    at_path = agent(type="claude_code", cli_command="/opt/claude/bin/claude")
    assert preset_of(at_path) is PRESETS[AgentType.CLAUDE_CODE]
    codex = agent(type="openai_codex", cli_command="codex exec")
    assert preset_of(codex) is PRESETS[AgentType.OPENAI_CODEX]


def test_relative_paths_of_the_command_are_taken_from_where_freemad_started(
    tmp_path: Path,
) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "mock_agent.py").write_text("")
    argv = ["python", "bin/mock_agent.py", "generate", "--out", "bin/mock_agent.py"]
    anchored = anchor_command_paths(argv, 2, tmp_path)
    # Only the command's own words; options and arguments after it stay as written.
    assert anchored == [
        "python",
        str(tmp_path / "bin" / "mock_agent.py"),
        "generate",
        "--out",
        "bin/mock_agent.py",
    ]
    assert anchor_command_paths(["python", "missing/x.py"], 2, tmp_path) == [
        "python",
        "missing/x.py",
    ]


def test_a_path_that_names_a_file_in_the_workdir_means_that_file(tmp_path: Path) -> None:
    started, worktree = tmp_path / "here", tmp_path / "worktree"
    for folder in (started, worktree):
        (folder / "scripted").mkdir(parents=True)
        (folder / "scripted" / "steps.json").write_text("[]")
    argv = ["freemad-evolve-mock", "--steps", "scripted/steps.json"]
    assert anchor_command_paths(argv, 3, started, worktree) == argv


def test_config_check_says_which_typed_agents_get_no_preset(tmp_path: Path) -> None:
    import subprocess
    import sys

    config = tmp_path / "wrapped.yaml"
    config.write_text(
        "agents:\n"
        "  - {id: wrapped, type: claude_code, cli_command: my-claude-wrapper}\n"
        "  - {id: real, type: claude_code, cli_command: /opt/bin/claude}\n"
        "security: {cli_allowed_commands: [my-claude-wrapper, /opt/bin/claude]}\n"
    )
    freemad = str(Path(sys.executable).parent / "freemad")
    done = subprocess.run(
        [freemad, "config", "check", str(config)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if "note:" in line]
    assert len(notes) == 1, done.stderr
    assert "agent wrapped: type claude_code, but its command runs my-claude-wrapper" in notes[0]
