"""Who takes part in an evolve run's debates: `evolve.variation.debate_agent_ids` (every enabled
agent when unset), or the one agent `supervisor.intervention: single_agent` asks."""

from __future__ import annotations

from collections.abc import Sequence

from freemad.config.models import FreemadConfig, TopologyConfig


def scoped(config: FreemadConfig, agent_ids: Sequence[str]) -> FreemadConfig:
    """`config` with only `agent_ids` enabled (the config's checks made sure they are enabled
    and enough for its quorum and topology); one agent alone needs no quorum or topology.

    Without `debate.finalizer`: an evolve debate's decision picks a plan or directions, and a
    finalized text would be one more call that nothing reads (its agent may not even be one of
    `agent_ids`)."""
    keep = set(agent_ids)
    update: dict[str, object] = {}
    if config.debate.finalizer is not None:
        update["debate"] = config.debate.model_copy(update={"finalizer": None})
    if keep == {agent.id for agent in config.enabled_agents}:
        return config.model_copy(update=update) if update else config
    update["agents"] = [
        agent if agent.id in keep else agent.model_copy(update={"enabled": False})
        for agent in config.agents
    ]
    if len(keep) == 1:
        update["deadlines"] = config.deadlines.model_copy(update={"min_agents": 1})
        update["topology"] = TopologyConfig()
    return config.model_copy(update=update)
