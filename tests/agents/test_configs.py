"""The shipped configs for real agent CLIs: they load, the YAML and JSON twins agree, and they
run the preset commands within the allowed list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from freemad.agents.invocation import build_argv
from freemad.config import config_digest, load_config
from freemad.config.models import AgentType, Mode

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_multi_agent_yaml_and_json_are_the_same_config() -> None:
    from_yaml = load_config(CONFIGS / "multi_agent.yaml")
    from_json = load_config(CONFIGS / "multi_agent.json")
    assert from_yaml == from_json
    assert config_digest(from_yaml) == config_digest(from_json)
    # The same keys were written, too, not only the same values after defaults.
    raw_yaml = yaml.safe_load((CONFIGS / "multi_agent.yaml").read_text(encoding="utf-8"))
    assert raw_yaml == json.loads((CONFIGS / "multi_agent.json").read_text(encoding="utf-8"))


def test_multi_agent_is_claude_and_codex_on_their_presets() -> None:
    config = load_config(CONFIGS / "multi_agent.yaml")
    assert [(a.id, a.type) for a in config.enabled_agents] == [
        ("claude", AgentType.CLAUDE_CODE),
        ("codex", AgentType.OPENAI_CODEX),
    ]
    assert config.security.cli_allowed_commands == ["claude", "codex"]
    assert build_argv(config.agents[0], Mode.GENERATE)[0] == "claude"
    assert build_argv(config.agents[1], Mode.GENERATE)[:2] == ["codex", "exec"]
    assert all(a.pricing is None for a in config.agents)


@pytest.mark.parametrize("name", ["multi_agent.yaml", "gemini.yaml"])
def test_real_agent_configs_allow_minutes_per_call(name: str) -> None:
    config = load_config(CONFIGS / name)
    assert all(a.timeout >= 300 for a in config.agents)
    assert config.deadlines.soft_timeout_ms >= 5 * 60_000
    assert config.deadlines.hard_timeout_ms >= 10 * 60_000
    assert config.security.cli_timeout_ms >= max(a.timeout for a in config.agents) * 1000


def test_gemini_config_runs_two_models() -> None:
    config = load_config(CONFIGS / "gemini.yaml")
    argvs = [build_argv(a, Mode.CRITIQUE) for a in config.enabled_agents]
    assert [argv[0] for argv in argvs] == ["gemini", "gemini"]
    assert [argv[-2:] for argv in argvs] == [
        ["--model", "gemini-2.5-pro"],
        ["--model", "gemini-2.5-flash"],
    ]
