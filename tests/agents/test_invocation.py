"""From an agent's config to its argv: order, modes, presets and overrides; and finding the program."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from freemad.agents.invocation import CommandNotFound, build_argv, resolve_program
from freemad.agents.presets import GEMINI_DENY_ALL
from freemad.config import parse_config
from freemad.config.models import AgentConfig, AgentType, Mode
from tests.agents.conftest import FakeBin


def agent(**fields: Any) -> AgentConfig:
    return AgentConfig.model_validate({"id": "a", **fields})


def test_argv_order_is_command_mode_mode_flags_flags_args_positional() -> None:
    config = agent(
        cli_command="tool sub --global",
        cli_mode_arg=True,
        cli_mode_flags={"generate": ["--gen"], "critique": ["--crit"]},
        cli_flags=["--flag", "x"],
        cli_args={"model": "m1", "-t": 0.2},
        cli_positional=["-"],
    )
    assert build_argv(config, Mode.GENERATE) == [
        "tool", "sub", "--global",
        "generate",
        "--gen",
        "--flag", "x",
        "--model", "m1", "-t", "0.2",
        "-",
    ]  # fmt: skip
    assert build_argv(config, Mode.CRITIQUE)[3:5] == ["critique", "--crit"]
    # No flags for task mode were given: none are added.
    assert build_argv(config, Mode.TASK) == [
        "tool", "sub", "--global", "task", "--flag", "x", "--model", "m1", "-t", "0.2", "-",
    ]  # fmt: skip


def test_no_mode_argument_unless_asked() -> None:
    assert build_argv(agent(cli_command="tool"), Mode.CRITIQUE) == ["tool"]


def test_command_words_are_split_like_a_shell_but_never_run_by_one() -> None:
    config = agent(cli_command="'/opt/my tools/agent' --say 'two words' ; rm -rf /")
    assert build_argv(config, Mode.GENERATE) == [
        "/opt/my tools/agent", "--say", "two words", ";", "rm", "-rf", "/",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"model": "sonnet"}, ["--model", "sonnet"]),
        ({"--model": "sonnet"}, ["--model", "sonnet"]),
        ({"-m": "sonnet"}, ["-m", "sonnet"]),
        ({"max-turns": 3}, ["--max-turns", "3"]),
        ({"temperature": 0.5}, ["--temperature", "0.5"]),
        ({"verbose": True}, ["--verbose"]),
        ({"verbose": False}, []),
        ({"empty": ""}, ["--empty", ""]),
        ({"b": 1, "a": 2}, ["--b", "1", "--a", "2"]),  # the config's order, not sorted
    ],
)
def test_args_become_options(args: dict[str, Any], words: list[str]) -> None:
    assert build_argv(agent(cli_command="tool", cli_args=args), Mode.GENERATE)[1:] == words


@pytest.mark.parametrize(
    ("key", "mode"),
    [
        ("generate", Mode.GENERATE),
        ("generating", Mode.GENERATE),  # the reference README's spelling
        ("generation", Mode.GENERATE),
        ("critique", Mode.CRITIQUE),
        ("critiquing", Mode.CRITIQUE),
        ("task", Mode.TASK),
    ],
)
def test_mode_flags_keys_accept_the_reference_spellings(key: str, mode: Mode) -> None:
    text = (
        f"agents:\n  - id: a\n    cli_command: tool\n    cli_mode_flags:\n      {key}: [--x]\n"
        "security:\n  cli_allowed_commands: [tool]\n"
    )
    config = parse_config(text).agents[0]
    assert build_argv(config, mode) == ["tool", "--x"]
    other = Mode.CRITIQUE if mode is not Mode.CRITIQUE else Mode.GENERATE
    assert build_argv(config, other) == ["tool"]


def test_presets_fill_what_is_left_unset() -> None:
    assert build_argv(agent(type="claude_code"), Mode.GENERATE) == [
        "claude",
        "--tools", "", "--max-turns", "1",
        "-p", "--output-format", "json", "--no-session-persistence",
    ]  # fmt: skip
    assert build_argv(agent(type="openai_codex"), Mode.CRITIQUE) == [
        "codex", "exec",
        "--disable", "shell_tool",
        "--skip-git-repo-check", "--ephemeral", "--sandbox", "read-only", "--color", "never",
        "--disable", "unbounded_connection_retries", "--json",
        "-",
    ]  # fmt: skip
    assert build_argv(agent(type="gemini_cli"), Mode.GENERATE) == [
        "gemini",
        "--policy", GEMINI_DENY_ALL,
        "-p", "", "--output-format", "json", "--skip-trust",
    ]  # fmt: skip


def test_preset_task_mode_has_no_tool_switches() -> None:
    assert build_argv(agent(type="claude_code"), Mode.TASK) == [
        "claude", "-p", "--output-format", "json", "--no-session-persistence",
    ]  # fmt: skip


def test_explicit_empty_lists_replace_the_preset() -> None:
    config = agent(
        type="openai_codex",
        cli_flags=[],
        cli_args={},
        cli_positional=[],
        cli_mode_flags={"generate": []},
    )
    assert build_argv(config, Mode.GENERATE) == ["codex", "exec"]
    # Only the mode given is overridden; critique keeps the preset's mode flags.
    assert build_argv(config, Mode.CRITIQUE) == ["codex", "exec", "--disable", "shell_tool"]


def test_explicit_values_replace_the_preset_and_args_are_added() -> None:
    config = agent(
        type="claude_code",
        cli_command="/opt/claude/bin/claude",
        cli_flags=["-p", "--output-format", "json"],
        cli_args={"model": "sonnet"},
        cli_mode_flags={"critique": ["--tools", "", "--max-turns", "2"]},
    )
    assert build_argv(config, Mode.CRITIQUE) == [
        "/opt/claude/bin/claude",
        "--tools", "", "--max-turns", "2",
        "-p", "--output-format", "json",
        "--model", "sonnet",
    ]  # fmt: skip


def test_generic_agent_has_no_preset_words() -> None:
    assert build_argv(agent(cli_command="tool", cli_mode_arg=True), Mode.TASK) == ["tool", "task"]


# --- resolve_program --------------------------------------------------------------------------


def test_resolve_finds_a_program_on_path(fake_bin: FakeBin) -> None:
    fake = fake_bin.add("freemad-test-agent", "")
    assert resolve_program("freemad-test-agent") == str(fake)


def test_resolve_finds_a_program_beside_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    # The virtualenv's bin/ need not be on PATH for its console scripts to be found.
    monkeypatch.setenv("PATH", "")
    beside = Path(sys.executable).parent / "freemad-mock-agent"
    assert beside.is_file()
    assert resolve_program("freemad-mock-agent") == str(beside)


def test_resolve_names_a_missing_program(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(CommandNotFound, match="'no-such-agent-cli' is not on PATH"):
        resolve_program("no-such-agent-cli")


def test_resolve_takes_a_path_as_it_is(tmp_path: Path) -> None:
    program = tmp_path / "agent"
    program.write_text("")
    assert resolve_program(str(program)) == str(program)
    with pytest.raises(CommandNotFound, match="does not exist"):
        resolve_program(str(tmp_path / "missing"))


def test_resolve_skips_a_file_on_path_that_is_not_executable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "freemad-test-plain").write_text("not a program")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CommandNotFound):
        resolve_program("freemad-test-plain")


def test_preset_command_defaults_to_the_clis_name() -> None:
    assert agent(type=AgentType.CLAUDE_CODE).command_words == ["claude"]
    assert agent(type=AgentType.OPENAI_CODEX).command_words == ["codex", "exec"]
    assert agent(type=AgentType.GEMINI_CLI).command_words == ["gemini"]
