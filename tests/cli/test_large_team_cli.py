"""A large team through the real console script: `config check` states the prompt bound and the
waves, and a debate with more agents than budget.max_concurrent_agents says so on stderr."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.cli.helpers import freemad
from tests.conftest import MOCK_AGENT, mock_agent


def write_config(folder: Path, agents: int, limit: int) -> Path:
    data = {
        "agents": [mock_agent(f"m{i:02d}") for i in range(agents)],
        "security": {"cli_allowed_commands": [MOCK_AGENT]},
        "budget": {"max_concurrent_agents": limit},
        "output": {"save_transcript": False},
        "deadlines": {"min_agents": 1},
    }
    path = folder / "team.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_config_check_states_the_prompt_bound_and_the_waves_of_a_large_team(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, 10, 4)
    done = freemad("config", "check", str(config), cwd=tmp_path, home=tmp_path)
    assert "ok (10 enabled agent(s)" in done.stdout
    assert (
        "freemad: note: 10 agents, topology all_to_all: a critique prompt shows up to 9 peers' "
        "answers and is bounded by debate.max_prompt_chars (200,000 characters)"
    ) in done.stderr
    assert "each round runs in 3 waves" in done.stderr


def test_a_debate_over_max_concurrent_agents_says_so_at_the_start(tmp_path: Path) -> None:
    config = write_config(tmp_path, 3, 2)
    done = freemad(
        "--config", str(config), "--rounds", "0", "--quiet", "Add two numbers.",
        cwd=tmp_path, home=tmp_path,
    )  # fmt: skip
    lines = [line for line in done.stderr.splitlines() if "max_concurrent_agents" in line]
    assert len(lines) == 1, done.stderr
    assert "3 agents and budget.max_concurrent_agents is 2: each round runs in 2 waves" in lines[0]
