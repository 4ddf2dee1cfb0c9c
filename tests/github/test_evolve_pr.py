"""Evolve runs on a pull request, on real git: a bare repository as origin, clones as job workspaces,
in-process workers that edit their worktree, a judge of real subprocesses, a recording forge."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from freemad.errors import ConfigError, FreemadError
from freemad.github.evolve_pr import (
    EvolveOnPr,
    ForkRefused,
    PullRequestInfo,
    resume_evolve,
    start_evolve,
)
from freemad.github.forge import RecordingForge
from freemad.store import SqliteStore
from freemad.wiring import ADAPTERS
from tests.conftest import make_config
from tests.evolve.runs import Edit, Worker, calc, evolve_config, git, make_repo

REPO = "octo/widgets"


@dataclass
class Origin:
    root: Path
    bare: Path
    head: str  # the pull request's head commit, on branch `feature`
    store: SqliteStore
    forge: RecordingForge

    def clone(self, name: str) -> Path:
        """A job's workspace: a fresh clone of the default branch alone, as actions/checkout makes
        for an issue_comment event (no other branch, no tags)."""
        where = self.root / name
        command = ["git", "clone", "-q", "--single-branch", "--no-tags", str(self.bare), str(where)]
        subprocess.run(command, check=True)
        return where

    def pr(self, head_repo: str = REPO) -> PullRequestInfo:
        return PullRequestInfo(REPO, 7, "feature", self.head, "main", head_repo)

    def ref(self, name: str) -> str:
        return git(self.bare, "rev-parse", "--verify", "--quiet", name)

    def refs(self, prefix: str) -> list[str]:
        return git(self.bare, "for-each-ref", "--format=%(refname)", prefix).split()


@pytest.fixture
def origin(tmp_path: Path) -> Iterator[Origin]:
    seed = make_repo(tmp_path / "seed")
    git(seed, "checkout", "-q", "-b", "feature")
    (seed / "calc.py").write_text(calc(60)["calc.py"])  # the PR makes add slower: 60 against 50
    git(seed, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "slower add")
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(seed, "push", "-q", str(bare), "main", "feature")
    store = SqliteStore(tmp_path / "state" / "runs.db", tmp_path / "state" / "artifacts")
    yield Origin(tmp_path, bare, git(seed, "rev-parse", "feature"), store, RecordingForge())
    store.close()


def start(
    origin: Origin, workspace: Path, worker: Worker, *, pr: PullRequestInfo | None = None, **kw: Any
) -> EvolveOnPr:
    config = evolve_config(**kw)
    return start_evolve(
        config,
        origin.store,
        origin.forge,
        pr or origin.pr(),
        "make add cheaper",
        workspace,
        ports={"worker": worker},
        adapters=ADAPTERS,
        worktrees_dir=origin.root / "worktrees",
    )


def rows_of(body: str) -> list[int]:
    """The iterations the body's trajectory table lists."""
    return [int(m) for m in re.findall(r"^\| (\d+) \|", body, re.MULTILINE)]


def test_admitted_versions_are_pushed_and_a_draft_pr_carries_the_trajectory(
    origin: Origin,
) -> None:
    workspace = origin.clone("job1")
    worker = Worker("worker", [calc(30), calc(10, bug=" + 1"), calc(20)])

    result = start(origin, workspace, worker, stop={"max_iterations": 3})

    assert (result.status, result.stop_reason, result.versions) == (
        "stopped",
        "max_iterations",
        (0, 1, 2),
    )
    branch = f"freemad/evolve/{result.run_id}"
    assert result.branch == branch
    # The lineage is on origin: seeded at the PR's head, a branch and a tag per version.
    tip = origin.ref(f"refs/heads/{branch}")
    assert origin.refs(f"refs/tags/evolve/{result.run_id}/") == [
        f"refs/tags/evolve/{result.run_id}/v{n}" for n in (0, 1, 2)
    ]
    assert origin.ref(f"refs/tags/evolve/{result.run_id}/v0") == origin.head
    assert origin.ref(f"refs/tags/evolve/{result.run_id}/v2") == tip
    trailer = git(origin.bare, "log", "-1", "--format=%(trailers:key=Evolve-Score,valueonly)", tip)
    assert trailer.strip() == "tests_pass=1.0, runtime_ms=20.0"
    assert git(origin.bare, "rev-list", "--count", f"{origin.head}..{tip}") == "2"
    # One draft PR into the PR's head branch, opened at v1 and edited as versions landed.
    [opened] = origin.forge.calls_to("open_pull_request")
    assert opened.args["head"] == branch and opened.args["base"] == "feature"
    assert opened.args["draft"] is True
    assert opened.args["title"] == "FREE-MAD evolve: make add cheaper"
    assert "admitted v1" in opened.args["body"] and "admitted v2" not in opened.args["body"]
    assert rows_of(opened.args["body"]) == [0, 1]
    edits = origin.forge.calls_to("edit_pull_request")
    assert result.pull_request is not None
    assert edits and all(e.args["number"] == result.pull_request.number for e in edits)
    [pull] = origin.forge.pulls.values()
    assert pull.ref == result.pull_request and pull.body == result.body
    assert rows_of(pull.body) == [0, 1, 2, 3]  # every judged iteration
    assert "failed: stage tests" in pull.body and "admitted v2" in pull.body
    assert "**Status:** stopped (max_iterations)" in pull.body
    assert "**Incumbent:** v2" in pull.body and "runtime_ms = 20" in pull.body
    assert result.run_id in pull.body and "#7" in pull.body
    # The job's own checkout is untouched.
    assert git(workspace, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert git(workspace, "status", "--porcelain") == ""


def test_no_version_beyond_the_seed_opens_no_pr_and_pushes_nothing(origin: Origin) -> None:
    worker = Worker("worker", [calc(70), calc(60)])

    result = start(origin, origin.clone("job1"), worker, stop={"max_iterations": 2})

    assert result.versions == (0,) and result.pull_request is None and result.body == ""
    assert result.status == "stopped"
    assert origin.forge.calls_to("open_pull_request") == []
    assert origin.refs("refs/heads/freemad/") == [] and origin.refs("refs/tags/") == []


def test_a_pr_from_a_fork_is_refused_and_nothing_runs(origin: Origin) -> None:
    worker = Worker("worker", [calc(30)])
    workspace = origin.clone("job1")

    with pytest.raises(ForkRefused, match="fork") as caught:
        start(origin, workspace, worker, pr=origin.pr(head_repo="mallory/widgets"))

    assert "secrets" in caught.value.one_line() and "push the branch to octo/widgets" in (
        caught.value.one_line()
    )
    assert worker.requests == [] and origin.store.runs() == []
    assert origin.forge.calls == [] and origin.refs("refs/heads/freemad/") == []


def test_a_config_without_an_evolve_section_is_refused(origin: Origin) -> None:
    config = make_config([{"id": "worker", "cli_command": "scripted"}])
    with pytest.raises(ConfigError, match="no evolve: section"):
        start_evolve(
            config,
            origin.store,
            origin.forge,
            origin.pr(),
            "goal",
            origin.clone("job1"),
            adapters=ADAPTERS,
        )


def test_a_later_job_resumes_a_waiting_run_and_pushes_fast_forward(origin: Origin) -> None:
    # v1 at iteration 1, then the same rejected candidate twice: a loop, and a question.
    first = Worker("worker", [calc(30), calc(40), calc(40), calc(40)])
    stuck = start(
        origin,
        origin.clone("job1"),
        first,
        supervisor={"max_interventions_before_human": 0},
        stop={"max_iterations": 6},
    )
    assert stuck.status == "waiting_for_human" and stuck.versions == (0, 1)
    assert stuck.pull_request is not None
    assert "waiting for a person" in stuck.body and "/freemad answer" in stuck.body
    v1 = origin.ref(f"refs/tags/evolve/{stuck.run_id}/v1")
    judged = len(rows_of(stuck.body))

    # A fresh clone: no lineage branch or tags of its own until they are fetched.
    workspace = origin.clone("job2")
    assert git(workspace, "tag", "--list") == ""
    edits: list[Edit] = [None] * (judged - 1)
    later = Worker("worker", [*edits, calc(20), calc(20)])
    config = evolve_config(
        supervisor={"max_interventions_before_human": 0}, stop={"max_iterations": judged + 1}
    )
    result = resume_evolve(
        config,
        origin.store,
        origin.forge,
        origin.pr(),
        stuck.run_id,
        workspace,
        answer="lower COST below 25",
        ports={"worker": later},
        adapters=ADAPTERS,
        worktrees_dir=origin.root / "worktrees2",
    )

    assert later.requests[0]["directions"][-1] == "lower COST below 25"
    assert result.versions == (0, 1, 2) and result.status == "stopped"
    tip = origin.ref(f"refs/heads/{result.branch}")
    assert tip == origin.ref(f"refs/tags/evolve/{stuck.run_id}/v2")
    git(origin.bare, "merge-base", "--is-ancestor", v1, tip)  # fast-forward from v1
    assert len(origin.forge.calls_to("open_pull_request")) == 1  # the same draft PR, edited
    assert result.pull_request == stuck.pull_request
    [pull] = origin.forge.pulls.values()
    assert "admitted v2" in pull.body and "waiting for a person" not in pull.body


def test_a_push_someone_else_raced_is_refused_in_one_line(origin: Origin) -> None:
    workspace = origin.clone("job1")
    intruder = origin.clone("intruder")
    identity = ("-c", "user.name=i", "-c", "user.email=i@i")
    git(intruder, *identity, "commit", "-q", "--allow-empty", "-m", "not yours")

    def race(kind: str, data: dict[str, Any]) -> None:
        if kind == "run_created":  # someone pushes to the run's branch name first
            branch = f"freemad/evolve/{data['run_id']}"
            git(intruder, "push", "-q", "origin", f"HEAD:refs/heads/{branch}")

    config = evolve_config(stop={"max_iterations": 1})
    with pytest.raises(FreemadError) as caught:
        start_evolve(
            config,
            origin.store,
            origin.forge,
            origin.pr(),
            "make add cheaper",
            workspace,
            ports={"worker": Worker("worker", [calc(30)])},
            adapters=ADAPTERS,
            worktrees_dir=origin.root / "worktrees",
            on_step=race,
        )

    message = caught.value.one_line()
    assert "refused refs/heads/freemad/evolve/" in message and "never force-pushes" in message
    assert "\n" not in message
    assert origin.forge.calls_to("open_pull_request") == []


def test_a_moved_branch_and_a_forged_tag_are_never_pushed(origin: Origin) -> None:
    """A worker (here on the host, in-process) that moves the run's branch to a commit of its own
    and forges a version tag: the run stops as tampered, and origin only ever gets admitted ones."""
    workspace = origin.clone("job1")
    forged: list[str] = []

    def tamper(worktree: Path) -> None:
        (worktree / "calc.py").write_text(calc(20)["calc.py"])
        run_id = worktree.name
        git(worktree, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qam", "unjudged")
        unjudged = git(worktree, "rev-parse", "HEAD")
        git(worktree, "update-ref", f"refs/heads/freemad/evolve/{run_id}", unjudged)
        git(worktree, "tag", f"evolve/{run_id}/v9", unjudged)
        forged.append(unjudged)

    worker = Worker("worker", [calc(30), tamper])
    result = start(origin, workspace, worker, stop={"max_iterations": 3})

    assert (result.status, result.stop_reason) == ("stopped", "tampered")
    assert result.versions == (0, 1)
    [unjudged] = forged
    branch = f"refs/heads/freemad/evolve/{result.run_id}"
    pushed = origin.ref(branch)
    assert pushed == git(workspace, "rev-parse", f"evolve/{result.run_id}/v1")
    assert origin.refs(f"refs/tags/evolve/{result.run_id}/") == [
        f"refs/tags/evolve/{result.run_id}/v{n}" for n in (0, 1)
    ]
    missing = subprocess.run(["git", "cat-file", "-e", unjudged], cwd=origin.bare, check=False)
    assert missing.returncode != 0, "the unjudged commit reached origin"
    # The local refs are back where the store says, the forged tag gone.
    assert git(workspace, "rev-parse", branch) == pushed
    assert git(workspace, "tag", "--list", f"evolve/{result.run_id}/v9") == ""


def test_the_actions_own_checkout_in_the_workspace_does_not_stop_an_evolve_run(
    origin: Origin,
) -> None:
    """freemad.yml runs FREE-MAD as a local action checked out into the workspace; without the
    exclusion the run refused the repository as changed."""
    from freemad.github.action import exclude_action_checkout

    workspace = origin.clone("job")
    action = workspace / ".freemad-action"
    action.mkdir()
    (action / "action.yml").write_text("name: FREE-MAD\n")
    with pytest.raises(FreemadError, match=r"uncommitted changes \(\.freemad-action/"):
        start(origin, workspace, Worker("worker", [calc(45)]))

    exclude_action_checkout(workspace, str(action))
    exclude_action_checkout(workspace, str(action))  # a second job step adds nothing
    excluded = (workspace / ".git" / "info" / "exclude").read_text().splitlines()
    assert excluded.count("/.freemad-action/") == 1
    run = start(origin, workspace, Worker("worker", [calc(45)]))
    assert run.status in ("completed", "running", "waiting_for_human")
    assert git(workspace, "status", "--porcelain") == ""


def test_an_action_outside_the_workspace_or_the_workspace_itself_is_not_excluded(
    tmp_path: Path,
) -> None:
    from freemad.github.action import exclude_action_checkout

    workspace = make_repo(tmp_path / "work")
    exclude = workspace / ".git" / "info" / "exclude"
    before = exclude.read_text() if exclude.exists() else ""
    for elsewhere in (str(tmp_path / "actions" / "freemad"), str(workspace), ""):
        exclude_action_checkout(workspace, elsewhere)
    assert (exclude.read_text() if exclude.exists() else "") == before
    # A name with git's pattern characters matches only itself.
    odd = workspace / "a[1]*"
    odd.mkdir()
    (odd / "f").write_text("x")
    (workspace / "a1x").mkdir()
    (workspace / "a1x" / "f").write_text("x")
    exclude_action_checkout(workspace, str(odd))
    assert git(workspace, "status", "--porcelain", "--untracked-files=all") == "?? a1x/f"
