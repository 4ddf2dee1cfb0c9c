"""The agent port's factory: a runtime is handed one and makes with it the ports it was not given."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from freemad.agents.agent_port import AgentFactory, AgentPort
from freemad.config.models import AgentConfig
from freemad.debate import run_debate
from freemad.sandbox import View
from freemad.wiring import ADAPTERS, make_agent
from tests.conftest import ScriptedAgent, generation, scripted_config


class RecordingFactory:
    """Makes scripted agents, and keeps what each was made with."""

    def __init__(self) -> None:
        self.made: dict[str, dict[str, Any]] = {}

    def __call__(self, config: AgentConfig, **made_with: Any) -> AgentPort:
        self.made[config.id] = made_with
        return ScriptedAgent(config.id).script(generation(f"from {config.id}"))


def test_a_debate_makes_the_ports_it_was_not_given_with_its_factory() -> None:
    factory = RecordingFactory()
    given = {"a": ScriptedAgent("a").script(generation("from a"))}
    config = scripted_config(["a", "b", "c"])
    adapters = replace(ADAPTERS, agents=factory)
    result = run_debate("q", config, rounds=0, agents=given, adapters=adapters)

    assert result.status == "completed"
    assert set(factory.made) == {"b", "c"}
    security = config.security
    cap = 4 * security.max_solution_size + security.max_critique_size
    assert {made["max_output_bytes"] for made in factory.made.values()} == {cap}
    # Each made agent works in a folder of its own, named after it.
    assert sorted(Path(made["workdir"]).name for made in factory.made.values()) == ["b", "c"]


def test_an_agent_with_neither_a_port_nor_a_factory_is_an_error_naming_it() -> None:
    given = {"a": ScriptedAgent("a").script(generation("from a"))}
    with pytest.raises(LookupError, match=r"agent 'b'.*freemad\.wiring\.make_agent"):
        run_debate("q", scripted_config(["a", "b"]), rounds=0, agents=given)


def test_the_wiring_makes_agents_as_the_port_says() -> None:
    factory: AgentFactory = make_agent
    agent = AgentConfig.model_validate({"id": "x", "cli_command": "scripted"})
    port = factory(agent, max_output_bytes=10, workdir="/nonexistent", sandbox=None, view=View())
    assert port.agent_id == "x"
