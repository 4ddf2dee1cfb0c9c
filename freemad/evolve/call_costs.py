"""What an evolve run's agent calls cost, in US dollars, for `evolve.stop.max_total_cost_usd`.

A worker's call is priced like a debate's turns are (freemad.debate.outcome): the tokens the
agent reports, else an estimate from the text sent and received, times the agent's `pricing`.
An agent without pricing costs nothing here: `freemad evolve validate` warns that a cap over
such agents cannot be enforced. Each cost is stored in the event of its call (`cost_usd`), so a
resumed run keeps counting from the store.
"""

from __future__ import annotations

from freemad.agents.agent_port import CallResult
from freemad.config.models import FreemadConfig
from freemad.debate.debate_record import DebateResult
from freemad.debate.turns import Usage


def call_cost(config: FreemadConfig, agent_id: str, prompt: str, result: CallResult) -> float:
    agent = next((a for a in config.agents if a.id == agent_id), None)
    price = agent.pricing if agent is not None else None
    if price is None:
        return 0.0
    usage = Usage()  # as a debate counts a turn: reported, else estimated, never below 0
    usage.add(prompt, result)
    return round(
        (usage.input * price.input_per_mtok + usage.output * price.output_per_mtok) / 1e6, 6
    )


def debate_cost(result: DebateResult) -> float:
    return max(float(result.metrics.get("cost_usd_total") or 0.0), 0.0)


def unpriced(config: FreemadConfig, agent_ids: list[str]) -> list[str]:
    """The agents among `agent_ids` that have no pricing: their calls count as free."""
    priced = {a.id for a in config.agents if a.pricing is not None}
    return [agent_id for agent_id in agent_ids if agent_id not in priced]


def cap_warning(config: FreemadConfig) -> str | None:
    """`freemad evolve validate`'s warning when the run's cost cap cannot be fully enforced:
    some agent the run may call has no pricing, so its calls count as free."""
    evolve = config.evolve
    if evolve is None or evolve.stop.max_total_cost_usd is None:
        return None
    callable_ids = [a.id for a in config.enabled_agents]
    missing = unpriced(config, callable_ids)
    if not missing:
        return None
    return (
        f"evolve.stop.max_total_cost_usd is set, but agent(s) {', '.join(missing)} have no "
        "pricing: their calls count as $0, so the cap cannot be enforced for them; give each "
        "agent pricing (input_per_mtok, output_per_mtok)"
    )
