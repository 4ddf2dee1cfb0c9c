"""Agents that are one agent several times (issue 42: three agents on one local model gave
byte-identical answers and nothing said so): the result warns, and per-agent model options
(`config.seed`, `config.temperature`) reach an llm agent's command line, so they can differ."""

from __future__ import annotations

from freemad.agents.invocation import build_argv
from freemad.config.models import AgentConfig, AgentType, Mode
from freemad.debate import run_debate
from tests.conftest import ScriptedAgent, generation, keep, make_config


def debate(answers: dict[str, str], **agent: object) -> object:
    ports = {a: ScriptedAgent(a).script(generation(text), keep()) for a, text in answers.items()}
    config = make_config([{"id": a, "cli_command": "scripted", **agent} for a in answers])
    return run_debate("q", config, rounds=1, agents=ports)


def test_agents_configured_alike_with_one_answer_are_flagged() -> None:
    result = debate({"a": "42", "b": "42", "c": "42"})
    [flag] = result.flags
    assert flag.kind == "same_answers" and flag.answer_id == result.final_answer_id
    assert flag.message.startswith("a, b, c run one model with the same options")
    assert "heard one voice 3 times" in flag.message and "config.seed" in flag.message
    assert debate({"a": "42", "b": "42", "c": "41"}).flags == []  # one differs: voices


def test_agents_told_apart_by_their_options_are_not_flagged() -> None:
    ports = {a: ScriptedAgent(a).script(generation("42"), keep()) for a in "ab"}
    config = make_config(
        [
            {"id": "a", "cli_command": "scripted", "config": {"seed": 1}},
            {"id": "b", "cli_command": "scripted", "config": {"seed": 2}},
        ]
    )
    assert run_debate("q", config, rounds=1, agents=ports).flags == []


def test_a_failed_agent_does_not_hide_two_that_answered_alike() -> None:
    ports = {
        "a": ScriptedAgent("a").script(generation("42"), keep()),
        "b": ScriptedAgent("b").script(generation("42"), keep()),
        "c": ScriptedAgent("c").script("no markers", "still none"),
    }
    config = make_config([{"id": a, "cli_command": "scripted"} for a in ports])
    [flag] = run_debate("q", config, rounds=1, agents=ports).flags
    assert flag.message.startswith("a, b run one model") and "2 times" in flag.message


def test_model_options_reach_llm_as_dash_o_and_no_other_cli() -> None:
    options = {"temperature": 0.7, "seed": 3}
    llm = AgentConfig(id="s", type=AgentType.LLM, cli_args={"-m": "SmolLM2"}, config=options)
    argv = build_argv(llm, Mode.GENERATE)
    assert argv[-6:] == ["-o", "temperature", "0.7", "-o", "seed", "3"]
    claude = AgentConfig(id="c", type=AgentType.CLAUDE_CODE, config=options)
    assert "temperature" not in build_argv(claude, Mode.GENERATE)
    plain = AgentConfig(id="p", type=AgentType.LLM, cli_args={"-m": "SmolLM2"})
    assert "-o" not in build_argv(plain, Mode.GENERATE)
