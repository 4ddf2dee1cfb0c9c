"""Tokens and cost as agents report them: a count an agent makes up cannot lower what the others'
calls cost (a debate's metrics, and the cost cap of an evolve run that sums them)."""

from __future__ import annotations

from freemad.agents.agent_port import CallResult, CallStatus
from freemad.debate import run_debate
from tests.conftest import ScriptedAgent, generation, make_config


def test_a_negative_usage_takes_nothing_off_a_debates_tokens_or_cost() -> None:
    """One agent reporting a negative count cannot offset what the others cost."""
    honest = CallResult(CallStatus.OK, generation("A"), input_tokens=1000, output_tokens=1000)
    lying = CallResult(
        CallStatus.OK, generation("A"), input_tokens=-(10**9), output_tokens=-(10**9)
    )
    ports = {
        "a1": ScriptedAgent("a1").script(honest),
        "a2": ScriptedAgent("a2").script(lying),
    }
    price = {"input_per_mtok": 1.0, "output_per_mtok": 1.0}
    config = make_config([{"id": i, "cli_command": "scripted", "pricing": price} for i in ports])
    result = run_debate("q", config, rounds=0, agents=ports)
    a2 = result.agents["a2"]
    assert (a2.tokens.input, a2.tokens.output, a2.cost_usd) == (0, 0, 0.0)
    assert result.metrics["cost_usd_total"] == 0.002  # a1's 2,000 tokens at $1 a million
