"""Every preset type: a command of its own, allowed by default, and a config that loads."""

from __future__ import annotations

import pytest

from freemad.config import parse_config
from freemad.config.models import PRESET_COMMANDS, AgentType, SecurityConfig

TYPES = [t for t in AgentType if t is not AgentType.GENERIC]


def test_the_eight_presets() -> None:
    assert [t.value for t in TYPES] == [
        "claude_code",
        "openai_codex",
        "gemini_cli",
        "copilot_cli",
        "opencode",
        "qwen_code",
        "llm",
        "aider",
    ]


@pytest.mark.parametrize("agent_type", TYPES, ids=[t.value for t in TYPES])
def test_each_type_runs_its_own_program_which_is_allowed_by_default(agent_type: AgentType) -> None:
    program = PRESET_COMMANDS[agent_type].split()[0]
    assert program in SecurityConfig().cli_allowed_commands
    config = parse_config(f'{{"agents": [{{"id": "a", "type": "{agent_type.value}"}}]}}')
    assert config.agents[0].command_words[0] == program


def test_an_unknown_type_names_the_known_ones() -> None:
    with pytest.raises(Exception, match="copilot_cli") as caught:
        parse_config('{"agents": [{"id": "a", "type": "copilot"}]}')
    assert "aider" in str(caught.value)
