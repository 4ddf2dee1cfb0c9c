"""The reference implementation's example configs load as they are: each of its own spellings is
read as ours with one warning line naming our key, or saying why it is ignored; never silently."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.config import load_config, parse_config
from freemad.config.legacy import upgrade
from tests.conftest import reference_file

FREEMAD = str(Path(sys.executable).parent / "freemad")
ROOT = Path(__file__).resolve().parents[2]
CONFIG_NAMES = [
    "ALL_KEYS.yaml",
    "mock_agents.yaml",
    "multi_agent.json",
    "multi_agent.yaml",
    "user_override.yaml",
]


def test_the_reference_configs_are_where_the_tests_expect_them() -> None:
    folder = reference_file("upstream-configs")
    assert sorted(p.name for p in folder.iterdir()) == sorted(CONFIG_NAMES)


@pytest.mark.parametrize("name", CONFIG_NAMES)
def test_config_check_passes_with_one_warning_line_per_old_spelling(name: str) -> None:
    path = reference_file("upstream-configs", name)
    done = subprocess.run(
        [FREEMAD, "config", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{path}: ok")
    lines = done.stderr.splitlines()
    # Besides the warnings, a note for each typed agent that runs another program (no preset).
    warnings = [line for line in lines if not line.startswith("freemad: note: agent ")]
    assert all(line.startswith(f"freemad: warning: {path} line ") for line in warnings), warnings
    said = "\n".join(warnings)
    assert "topology.hub_agent: deprecated (the reference implementation's name): read as " in said
    assert "topology.hub" in said.replace("topology.hub_agent", "")
    for key in ("security.api_key_source", "security.api_key_name"):
        assert f"{key}: ignored: FREE-MAD never reads or passes API keys" in said
    assert "budget.max_concurrent_agents: null (no limit) is deprecated: read as " in said
    assert "cache.max_entries: null (no limit) is not supported" in said
    assert len(warnings) == 5


@pytest.mark.parametrize("name", CONFIG_NAMES)
def test_old_spellings_become_our_values(name: str) -> None:
    path = reference_file("upstream-configs", name)
    said: list[str] = []
    config = load_config(path, warn=said.append)
    assert len(said) == 5
    assert config.topology.hub is None
    # null meant one process per agent: every agent in the file, enabled or not.
    assert config.budget.max_concurrent_agents == len(config.agents)
    assert config.cache.max_entries == 1000


def test_a_star_hub_given_by_its_old_name_is_our_hub() -> None:
    text = (
        "agents:\n  - {id: a, cli_command: tool}\n  - {id: b, cli_command: tool}\n"
        "security: {cli_allowed_commands: [tool]}\n"
        "topology:\n  type: star\n  hub_agent: b\n"
    )
    said: list[str] = []
    config = parse_config(text, name="cfg.yaml", warn=said.append)
    assert config.topology.hub == "b"
    assert said == [
        "cfg.yaml line 7: topology.hub_agent: deprecated (the reference implementation's name): "
        "read as topology.hub"
    ]


def test_a_wrong_hub_under_the_old_name_is_blamed_on_its_line() -> None:
    text = (
        "agents:\n  - {id: a, cli_command: tool}\n  - {id: b, cli_command: tool}\n"
        "security: {cli_allowed_commands: [tool]}\n"
        "topology:\n  type: star\n  hub_agent: nobody\n"
    )
    from freemad.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        parse_config(text, name="cfg.yaml", warn=lambda line: None)
    assert str(caught.value).startswith("cfg.yaml line 7: topology.hub: 'nobody' is not an enabled")


def test_both_names_keep_ours_and_say_the_old_one_is_ignored() -> None:
    data, notes = upgrade({"agents": [], "topology": {"hub": "a", "hub_agent": "b"}})
    assert data["topology"] == {"hub": "a"}
    assert [(n.loc, n.message) for n in notes] == [
        (("topology", "hub_agent"), "ignored: topology.hub is given as well")
    ]


def test_our_own_configs_give_no_warning() -> None:
    for path in sorted((ROOT / "configs").glob("*.*")):
        said: list[str] = []
        load_config(path, warn=said.append)
        assert said == [], path


def test_upgrading_leaves_the_given_data_alone() -> None:
    data: dict[str, Any] = yaml.safe_load(
        reference_file("upstream-configs", "mock_agents.yaml").read_text()
    )
    before = yaml.safe_dump(data)
    upgrade(data)
    assert yaml.safe_dump(data) == before
