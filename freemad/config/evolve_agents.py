"""The evolve settings that name agents, checked against the config's agents: the planning and
directions debate's `variation.debate_agent_ids`, and the agent `supervisor.intervention:
single_agent` calls. One-line errors, located where the value was written."""

from __future__ import annotations

from typing import TYPE_CHECKING

from freemad.config.strict import LocatedValueError
from freemad.core.topology import TopologyKind

if TYPE_CHECKING:
    from freemad.config.models import FreemadConfig

_IDS = ("evolve", "variation", "debate_agent_ids")


def check_evolve_agents(config: FreemadConfig) -> None:
    evolve = config.evolve
    if evolve is None:
        return
    enabled = [a.id for a in config.enabled_agents]
    named = evolve.variation.agent_id
    if evolve.supervisor.intervention == "single_agent" and named and named not in enabled:
        raise LocatedValueError(
            ("evolve", "variation", "agent_id"),
            f"{named!r} is not an enabled agent, and supervisor.intervention: single_agent "
            f"calls it; choose among {', '.join(enabled)}",
        )
    chosen = evolve.variation.debate_agent_ids
    if chosen is None:
        return
    seen: set[str] = set()
    for index, agent_id in enumerate(chosen):
        if agent_id not in enabled:
            raise LocatedValueError(
                (*_IDS, index),
                f"{agent_id!r} is not an enabled agent; choose among {', '.join(enabled)}",
            )
        if agent_id in seen:
            raise LocatedValueError((*_IDS, index), f"{agent_id!r} is listed twice")
        seen.add(agent_id)
    quorum = config.deadlines.min_agents
    if len(chosen) < quorum:
        raise LocatedValueError(
            _IDS,
            f"{len(chosen)} agent(s), fewer than the {quorum} a debate round needs "
            "(deadlines.min_agents)",
        )
    topology = config.topology
    if topology.type is TopologyKind.STAR and topology.hub not in chosen:
        raise LocatedValueError(_IDS, f"leaves out {topology.hub!r}, the star's hub (topology.hub)")
    peers = len(chosen) - 1
    if topology.type is TopologyKind.K_REVIEWERS and peers and (topology.k or 0) > peers:
        raise LocatedValueError(
            _IDS, f"{len(chosen)} agents leave too few peers for topology.k = {topology.k}"
        )


def debate_agents(config: FreemadConfig) -> list[str]:
    """The agents of an evolve run's planning and directions debates, in config order."""
    evolve = config.evolve
    chosen = evolve.variation.debate_agent_ids if evolve is not None else None
    return [a.id for a in config.enabled_agents if chosen is None or a.id in chosen]


def intervention_agent(config: FreemadConfig) -> str:
    """The agent `supervisor.intervention: single_agent` calls: the variation's worker when it
    names one, else the first debate agent."""
    evolve = config.evolve
    named = evolve.variation.agent_id if evolve is not None else None
    return named or debate_agents(config)[0]
