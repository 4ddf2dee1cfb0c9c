"""The real adapters the surfaces hand the runtimes: one agent factory, one sandbox factory, the
repositories (git), as one bundle (`ADAPTERS`), and one place that opens stores.

The runtimes (debate, tasks, evolve) take ports (`freemad.ports.Adapters`, `freemad.store.port`)
and never build an adapter; the CLI, the GitHub layer, the bot, the dashboard and the benchmarks
take theirs from here, and tests hand scripted ports or these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from freemad.agents.subprocess_agent import CliAgent
from freemad.ports import Adapters
from freemad.sandbox.choose import agent_sandbox, code_sandbox
from freemad.store.sqlite import SqliteStore
from freemad.workspace.repositories import GitRepositories

if TYPE_CHECKING:
    from pathlib import Path

    from freemad.agents.port import AgentPort
    from freemad.config.evolve import EvolveConfig
    from freemad.config.models import AgentConfig, FreemadConfig
    from freemad.sandbox.port import Sandbox, View


def make_agent(
    config: AgentConfig,
    *,
    max_output_bytes: int,
    workdir: str,
    sandbox: Sandbox | None,
    view: View,
) -> AgentPort:
    """The agent factory (`freemad.agents.port.AgentFactory`): each agent CLI run in a process of
    its own, prompt on stdin, in `workdir`."""
    return CliAgent(
        config, max_output_bytes=max_output_bytes, workdir=workdir, sandbox=sandbox, view=view
    )


class Sandboxes:
    """The sandbox factory (`freemad.sandbox.port.SandboxFactory`): bubblewrap where it runs, a
    container where the judge asks, the host only on purpose, else a refusal that says why."""

    code = staticmethod(code_sandbox)
    agent = staticmethod(agent_sandbox)


# What every surface hands the runtimes.
ADAPTERS = Adapters(agents=make_agent, sandboxes=Sandboxes(), repos=GitRepositories())


def open_store(path: str | Path, artifacts_dir: str | Path | None = None) -> SqliteStore:
    """The event log in the SQLite file at `path`; artifacts in `artifacts_dir`, else in an
    `artifacts` folder beside it."""
    return SqliteStore(path, artifacts_dir)


def open_task_store(config: FreemadConfig) -> SqliteStore:
    """The store of the config's tasks (`task.store_path`, `task.artifacts_dir`)."""
    return open_store(config.task.store_path, config.task.artifacts_dir)


def open_evolve_store(evolve: EvolveConfig) -> SqliteStore:
    """The store of `evolve` (its paths already resolved), its artifacts in a folder beside it."""
    return open_store(evolve.store_path)
