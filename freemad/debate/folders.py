"""The agents' folders for one run: an empty one each, made at the start, removed at the end."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

# Removing a folder can wait on the file system (~3 ms each on an ext4 mounted with `discard`,
# docs/benchmarks-history.md): one after another that is 0.4 s at 128 agents, side by side 30 ms.
_REMOVERS = 16


@contextlib.contextmanager
def agent_folders(agent_ids: Iterable[str]) -> Iterator[dict[str, str]]:
    """An empty folder per agent, by id, in a temporary folder of the run's: no project files
    leak into an agent's context, and no agent can leave files for another."""
    with tempfile.TemporaryDirectory(prefix="freemad-debate-") as root:
        folders: dict[str, str] = {}
        try:
            for agent_id in agent_ids:
                folders[agent_id] = os.path.join(root, agent_id)
                os.mkdir(folders[agent_id])
            yield folders
        finally:
            remove_all(list(folders.values()))


def remove_all(folders: list[str]) -> None:
    """Remove these folders and what they hold, side by side; what cannot be removed is left to
    the temporary folder's own clean-up."""
    if len(folders) < 4:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        return
    with ThreadPoolExecutor(max_workers=min(_REMOVERS, len(folders))) as pool:
        for _ in pool.map(_remove, folders):
            pass


def _remove(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)
