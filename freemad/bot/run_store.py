"""Where a bot job keeps its runs: a SQLite file on this host, or the repository's state branch.

`local` (the default) is `state_dir/runs.db`: one host, nothing else to set up. `branch` keeps
runs exactly as the GitHub Action does, on the repository's `freemad-state` branch
(`freemad.github.state_branch`), so any host can take the next command on an issue (several workers on
a Redis queue), the Action and the bot can take turns on one repository, and the Pages workflow
builds dashboards of the bot's runs too. A job then loads the branch into a temporary store,
runs, and pushes the runs it changed, as the Action's job does.

Each repository gets a clone of its own under `state_dir/clones/` that holds only the state
branch. The installation token reaches git as an HTTP header in the environment of each git
command: never in the clone's config, a remote URL or a command line.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import git

from freemad.errors import FreemadError
from freemad.wiring import open_store

if TYPE_CHECKING:
    from freemad.bot.settings import BotSettings
    from freemad.config.models import FreemadConfig
    from freemad.store.store_port import Store

Save = Callable[[], None]


class RunStoreError(FreemadError):
    """The state branch's clone could not be made or used."""


def git_auth_env(token: str) -> dict[str, str]:
    """git's environment for HTTPS as `token` (an installation or personal token), and no prompt."""
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }


@contextmanager
def job_store(
    settings: BotSettings, config: FreemadConfig, repo: str | None, token: Callable[[], str]
) -> Iterator[tuple[Store, Save]]:
    """The store one job routes with, and what to call when it succeeded (saves its runs)."""
    if settings.run_store == "local" or not repo:
        with open_store(settings.state_dir / "runs.db") as store:
            yield store, lambda: None
        return
    from freemad.github.state_branch import StateBranch

    remote = settings.git_remote(repo)
    clone = _clone(settings.state_dir / "clones", remote)
    branch = StateBranch(clone, branch=config.github.state_branch, env=git_auth_env(token()))
    with (
        tempfile.TemporaryDirectory(prefix="freemad-job-") as folder,
        open_store(Path(folder) / "runs.db") as store,
    ):
        with _locked(clone):
            branch.pull()
            branch.load(store)
        began = time.time()

        def save() -> None:
            changed = [row.run_id for row in store.runs() if row.updated_at >= began]
            if changed:
                with _locked(clone):
                    branch.save(store, changed)

        yield store, save


def _clone(folder: Path, remote: str) -> Path:
    """This remote's clone (made on first use): a repository with only `origin` pointing at it."""
    name = hashlib.sha256(remote.encode()).hexdigest()[:16]
    path = folder / name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with _locked(path):
            if not (path / ".git").is_dir():
                repo = git.Repo.init(path)
                repo.create_remote("origin", remote)
                repo.close()
    except (OSError, git.GitCommandError) as exc:
        raise RunStoreError(f"cannot make the state branch's clone in {path}: {exc}") from None
    return path


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One job at a time in a clone on this host (git's own locks fail, they do not wait)."""
    with open(f"{path}.lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
