"""What a large team changes, said before it runs: rounds in waves, prompts bounded by a share."""

from __future__ import annotations

from freemad.config.models import FreemadConfig
from freemad.core.topology import assign_peers

# A team this large or larger is named in `freemad config check`'s output.
LARGE_TEAM = 8


def waves_note(agents: int, limit: int) -> str | None:
    """The line saying a round cannot start every agent at once; None when it can."""
    if agents <= limit:
        return None
    waves = -(-agents // limit)
    return (
        f"{agents} agents and budget.max_concurrent_agents is {limit}: each round runs in "
        f"{waves} waves (raise max_concurrent_agents to start them all at once)"
    )


def team_notes(config: FreemadConfig) -> list[str]:
    """What `config check` says about a large team: waves, and how a critique prompt is bounded."""
    ids = [a.id for a in config.enabled_agents]
    if len(ids) < LARGE_TEAM:
        return []
    topology = config.topology
    peers = assign_peers(ids, topology.type, k=topology.k, hub=topology.hub, seed=topology.seed)
    shown = max((len(p) for p in peers.values()), default=0)
    bound = config.debate.max_prompt_chars
    notes = []
    if bound is None:
        notes.append(
            f"{len(ids)} agents, topology {topology.type.value}: a critique prompt shows up to "
            f"{shown} peers' answers, and debate.max_prompt_chars is null, so nothing bounds it "
            "(it grows with the answers' size times the peers shown)"
        )
    else:
        share = bound // (shown + 1)
        notes.append(
            f"{len(ids)} agents, topology {topology.type.value}: a critique prompt shows up to "
            f"{shown} peers' answers and is bounded by debate.max_prompt_chars ({bound:,} "
            f"characters): past it the peers' answers share the room, about {share:,} "
            "characters each when all are long"
        )
    waves = waves_note(len(ids), config.budget.max_concurrent_agents)
    if waves:
        notes.append(waves)
    return notes
