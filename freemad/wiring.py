"""The real adapters the surfaces hand the runtimes: one agent factory, one sandbox factory, the
repositories (git), as one bundle (`ADAPTERS`), and one place that opens stores.

The runtimes (debate, tasks, evolve) take ports (`freemad.adapters.Adapters`, `freemad.store.store_port`)
and never build an adapter; the CLI, the GitHub layer, the bot, the dashboard and the benchmarks
take theirs from here, and tests hand scripted ports or these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from freemad.adapters import Adapters
from freemad.agents.subprocess_agent import CliAgent
from freemad.core.evolve.git_names import DEFAULT_BRANCH_PREFIX
from freemad.sandbox.choose import agent_sandbox, code_sandbox

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from pathlib import Path

    from freemad.agents.agent_port import AgentPort
    from freemad.config.evolve_section import EvolveConfig
    from freemad.config.models import AgentConfig, FreemadConfig
    from freemad.sandbox.sandbox_port import Sandbox, View
    from freemad.store.sqlite import SqliteStore
    from freemad.workspace.repositories import GitRepositories
    from freemad.workspace.repository_port import (
        GitFolderCheck,
        RunLineage,
        RunRefs,
        Tampering,
        TaskWorktree,
    )


def make_agent(
    config: AgentConfig,
    *,
    max_output_bytes: int,
    workdir: str,
    sandbox: Sandbox | None,
    view: View,
) -> AgentPort:
    """The agent factory (`freemad.agents.agent_port.AgentFactory`): each agent CLI run in a process of
    its own, prompt on stdin, in `workdir`."""
    return CliAgent(
        config, max_output_bytes=max_output_bytes, workdir=workdir, sandbox=sandbox, view=view
    )


class Sandboxes:
    """The sandbox factory (`freemad.sandbox.sandbox_port.SandboxFactory`): bubblewrap where it runs, a
    container where the judge asks, the host only on purpose, else a refusal that says why."""

    code = staticmethod(code_sandbox)
    agent = staticmethod(agent_sandbox)


class Repositories:
    """The repositories (`freemad.workspace.repository_port.Repositories`): GitPython behind
    `freemad.workspace.repositories`, imported at the first use, since a debate never opens a
    repository and importing git is a sixth of its start-up."""

    def task_worktree(
        self, workspace_root: Path, task_id: str, worktrees_dir: Path
    ) -> TaskWorktree | None:
        return _git().task_worktree(workspace_root, task_id, worktrees_dir)

    def resolve_seed(self, repo_path: Path, seed_ref: str) -> str:
        return _git().resolve_seed(repo_path, seed_ref)

    def dirty_paths(self, repo_path: Path) -> list[str]:
        return _git().dirty_paths(repo_path)

    def missing_paths(self, repo_path: Path, commit: str, paths: Sequence[str]) -> list[str]:
        return _git().missing_paths(repo_path, commit, paths)

    def export(self, repo_path: Path, commit: str, folder: Path) -> None:
        _git().export(repo_path, commit, folder)

    def lineage(
        self, repo_path: Path, run_id: str, seed: str, worktrees_dir: Path, branch: str = ""
    ) -> RunLineage:
        return _git().lineage(repo_path, run_id, seed, worktrees_dir, branch)

    def clean_orphans(
        self,
        repo_path: Path,
        worktrees_dir: Path,
        keep: Collection[str],
        prefixes: Collection[str] = (DEFAULT_BRANCH_PREFIX,),
    ) -> list[Path]:
        return _git().clean_orphans(repo_path, worktrees_dir, keep, prefixes)

    def check_refs(self, repo_root: Path, refs: RunRefs, *, repair: bool) -> list[Tampering]:
        return _git().check_refs(repo_root, refs, repair=repair)

    def snapshot(self, *folders: Path) -> GitFolderCheck:
        return _git().snapshot(*folders)


def _git() -> GitRepositories:
    from freemad.workspace.repositories import GitRepositories

    return GitRepositories()


# What every surface hands the runtimes.
ADAPTERS = Adapters(agents=make_agent, sandboxes=Sandboxes(), repos=Repositories())


def open_store(path: str | Path, artifacts_dir: str | Path | None = None) -> SqliteStore:
    """The event log in the SQLite file at `path`; artifacts in `artifacts_dir`, else in an
    `artifacts` folder beside it."""
    from freemad.store.sqlite import SqliteStore

    return SqliteStore(path, artifacts_dir)


def open_task_store(config: FreemadConfig) -> SqliteStore:
    """The store of the config's tasks (`task.store_path`, `task.artifacts_dir`)."""
    return open_store(config.task.store_path, config.task.artifacts_dir)


def open_evolve_store(evolve: EvolveConfig) -> SqliteStore:
    """The store of `evolve` (its paths already resolved), its artifacts in a folder beside it."""
    return open_store(evolve.store_path)
