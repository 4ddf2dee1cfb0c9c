"""The GitPython adapter behind the repository port (`freemad.workspace.repository_port.Repositories`): a
code task's worktree (`gitspace`), an evolve run's lineage (`lineage`) and the guard on it
(`guard`). The surfaces hand it to the runtimes through `freemad.wiring`."""

from __future__ import annotations

from freemad.workspace import guard
from freemad.workspace import lineage as lineages
from freemad.workspace.gitspace import TaskWorkspace


class GitRepositories:
    """`Repositories` with GitPython and the git program, on the user's repositories."""

    task_worktree = staticmethod(TaskWorkspace.open)
    resolve_seed = staticmethod(lineages.resolve_seed)
    dirty_paths = staticmethod(lineages.dirty_paths)
    missing_paths = staticmethod(lineages.missing_paths)
    export = staticmethod(lineages.export)
    lineage = staticmethod(lineages.Lineage.open)
    clean_orphans = staticmethod(lineages.clean_orphans)
    check_refs = staticmethod(guard.check_refs)
    snapshot = staticmethod(guard.GitFolderSnapshot.take)
