"""The world the matrix tests run in: a bare repository as origin, the loopback stand-in as
GitHub, and a job counter giving every job a clone and a store of its own (as separate runners
have); and the helpers that read what the jobs left."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freemad.config import FreemadConfig
from freemad.github.evolve_matrix import Holder, Planned, admit_job, candidate_job, plan_job
from freemad.github.evolve_pr import PullRequestInfo
from freemad.github.matrix_results import BUNDLE, RESULT
from freemad.github.pygithub_forge import PyGithubForge
from freemad.github.standin import StandIn
from freemad.store import SqliteStore
from freemad.wiring import ADAPTERS
from tests.evolve.population import ScriptedPopulation
from tests.evolve.runs import evolve_config, git, make_repo

REPO = "octo/widgets"
GOAL = "make add cheaper"
POPULATION = {"size": 4, "parallel": 2}
SUPERVISOR = {"stall_window": 5, "loop_threshold": 3}


@dataclass
class Matrix:
    """Origin, GitHub's stand-in, and a job counter: every job gets a clone and a store of its own."""

    root: Path
    bare: Path
    head: str
    api: StandIn
    forge: PyGithubForge
    config: FreemadConfig
    jobs: int = 0
    stores: list[SqliteStore] = field(default_factory=list)

    def clone(self) -> Path:
        """A job's workspace as actions/checkout with fetch-depth 0 leaves it: every branch as a
        remote-tracking ref (the state branch and the run's branch included), every tag."""
        self.jobs += 1
        where = self.root / f"job{self.jobs}"
        subprocess.run(["git", "clone", "-q", str(self.bare), str(where)], check=True)
        return where

    def store(self) -> SqliteStore:
        store = SqliteStore(self.root / f"store{self.jobs}" / "runs.db")
        self.stores.append(store)
        return store

    def pr(self) -> PullRequestInfo:
        return PullRequestInfo(REPO, 7, "feature", self.head, "main", REPO)

    def holder(self) -> Holder:
        workspace = self.clone()
        return Holder(
            self.config,
            self.store(),
            self.forge,
            self.pr(),
            workspace,
            ADAPTERS,
            ports={"worker": ScriptedPopulation("worker")},
            worktrees_dir=self.root / f"worktrees{self.jobs}",
        )

    def plan(self, run_id: str | None = None) -> Planned:
        if run_id is None:
            return plan_job(self.holder(), goal=GOAL)
        return plan_job(self.holder(), run_id=run_id)

    def candidate(self, run_id: str, k: int, out: Path) -> Path | None:
        """Candidate k's job: its own clone, store and worker (a runner of its own)."""
        workspace = self.clone()
        return candidate_job(
            self.config,
            self.store(),
            workspace,
            run_id,
            k,
            out,
            adapters=ADAPTERS,
            ports={"worker": ScriptedPopulation("worker")},
            worktrees_dir=self.root / f"worktrees{self.jobs}",
        )

    def admit(self, run_id: str, results: Path) -> Any:
        return admit_job(self.holder(), run_id, results)

    def events(self, run_id: str) -> list[tuple[str, dict[str, Any]]]:
        """The run's events as the state branch holds them (a fresh job's view)."""
        holder = self.holder()
        branch = holder.branch()
        branch.pull()
        branch.load(holder.store, [run_id])
        return [(e.kind, e.data) for e in holder.store.events(run_id)]

    def ref(self, name: str) -> str:
        return git(self.bare, "rev-parse", "--verify", "--quiet", name)


def config_with(**more: Any) -> FreemadConfig:
    return evolve_config(population=POPULATION, supervisor=SUPERVISOR, **more)


@contextlib.contextmanager
def open_world(tmp_path: Path) -> Iterator[Matrix]:
    """Origin with a pull request's branch, GitHub's stand-in and its forge, for one test."""
    seed = make_repo(tmp_path / "seed")
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(seed, "checkout", "-q", "-b", "feature")
    (seed / "NOTES.md").write_text("the pull request's own change\n")
    git(seed, "add", "NOTES.md")
    git(seed, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "notes")
    git(seed, "push", "-q", str(bare), "main", "feature")
    head = git(seed, "rev-parse", "feature")
    with (
        StandIn(permissions={"alice": "admin"}) as api,
        PyGithubForge("ghs_token", base_url=api.base_url, throttle=False) as forge,
    ):
        api.add_pull(REPO, 7, head_ref="feature", head_sha=head, base_ref="main", head_repo=REPO)
        matrix = Matrix(tmp_path, bare, head, api, forge, config_with(stop={"max_iterations": 3}))
        yield matrix
        for store in matrix.stores:
            store.close()


def measured(events: list[tuple[str, dict[str, Any]]]) -> Counter[tuple[int, int]]:
    return Counter((d["iteration"], d["candidate"]) for k, d in events if k == "candidate_measured")


def keys(events: list[tuple[str, dict[str, Any]]], kind: str) -> set[str]:
    return {key for k, data in events if k == kind for key in data}


def judged(events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [d for k, d in events if k == "candidate_judged"]


def generation(m: Matrix, run_id: str, planned: Planned, out: Path) -> None:
    """The matrix's candidate jobs, each on a runner of its own."""
    for k in planned.plan.todo:
        assert m.candidate(run_id, k, out) is not None


def first_generation(m: Matrix, out: Path) -> str:
    """A new run, planned, and every candidate of its first generation judged into `out`."""
    planned = m.plan()
    generation(m, planned.plan.run_id, planned, out)
    return planned.plan.run_id


def read(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / RESULT).read_text())
    return data


def write(folder: Path, data: dict[str, Any]) -> None:
    (folder / RESULT).write_text(json.dumps(data))


def forge_commit(workspace: Path, parent: str, files: dict[str, str]) -> tuple[str, str]:
    """A commit on `parent` with `files` changed, made as a hostile job would: (commit, tree)."""
    work = workspace / "forged"
    git(workspace, "worktree", "add", "-q", "--detach", str(work), parent)
    for path, text in files.items():
        (work / path).write_text(text)
    git(work, "add", "-A")
    env = ["-c", "user.name=x", "-c", "user.email=x@x"]
    git(work, *env, "commit", "-q", "-m", "forged")
    return git(work, "rev-parse", "HEAD"), git(work, "rev-parse", "HEAD^{tree}")


def on(repo: Path, commit: str) -> bool:
    """Whether `repo` has the object `commit`."""
    found = subprocess.run(["git", "cat-file", "-e", commit], cwd=repo, check=False)
    return found.returncode == 0


def swap_commit(folder: Path, attacker: Path, commit: str, tree: str, parent: str) -> None:
    """Make a result name `commit` (and its tree), its bundle that commit on `parent`."""
    data = read(folder)
    data["measured"].update(commit=commit, tree=tree)
    write(folder, data)
    (folder / BUNDLE).unlink()
    git(attacker, "update-ref", "refs/x/forged", commit)
    git(attacker, "bundle", "create", "-q", str(folder / BUNDLE), "refs/x/forged", f"^{parent}")
