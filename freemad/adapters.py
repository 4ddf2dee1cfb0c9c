"""The adapters a surface hands a runtime, as one bundle: the agent factory, the sandbox factory
and the repositories (git). `freemad.wiring.ADAPTERS` is the real bundle; tests hand it, or one
with a part replaced, and agents they script as ports (`port_for` takes a given port first).
Stores are handed apart: each surface opens its own (`freemad.wiring`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from freemad.agents.agent_port import AgentFactory, AgentPort
from freemad.config.models import FreemadConfig
from freemad.sandbox.sandbox_port import Sandbox, SandboxFactory, View
from freemad.workspace.repository_port import Repositories


@dataclass(frozen=True)
class Adapters:
    """What a runtime is handed: `agents` makes the agent ports it was not given, `sandboxes`
    chooses where agent CLIs and code run, `repos` is git on the user's repositories."""

    agents: AgentFactory
    sandboxes: SandboxFactory
    repos: Repositories


def required(adapters: Adapters | None, what: str) -> Adapters:
    """`adapters`, or a LookupError saying that `what` needs them."""
    if adapters is None:
        raise LookupError(
            f"{what} needs its adapters and none were given (freemad.wiring.ADAPTERS has the "
            "real ones)"
        )
    return adapters


def port_for(
    agent_id: str,
    given: Mapping[str, AgentPort],
    adapters: Adapters | None,
    config: FreemadConfig,
    *,
    workdir: str,
    sandbox: Sandbox | None,
    view: View,
) -> AgentPort:
    """The port given for `agent_id`; without one, a new port that the adapters' agent factory
    makes for that agent of `config`."""
    port = given.get(agent_id)
    if port is not None:
        return port
    if adapters is None:
        raise LookupError(
            f"no port was given for agent {agent_id!r} and no adapters to make one "
            "(freemad.wiring.ADAPTERS: freemad.wiring.make_agent runs agent CLIs)"
        )
    agent = next(a for a in config.agents if a.id == agent_id)
    security = config.security
    max_output = 4 * security.max_solution_size + security.max_critique_size
    return adapters.agents(
        agent, max_output_bytes=max_output, workdir=workdir, sandbox=sandbox, view=view
    )
