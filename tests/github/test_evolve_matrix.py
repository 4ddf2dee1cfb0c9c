"""An evolve generation judged by a matrix of jobs, on real git: a bare repository as origin, a
fresh clone and a fresh store for every job (as separate runners have), the loopback stand-in as
GitHub, a scripted worker whose candidates' speeds are known, a judge of real subprocesses.

Planner -> one job per candidate -> admitting job must admit what a local run admits; a result
brought twice adds nothing twice; a candidate without a result waits for the next planner; a
malformed or hostile result is refused and stored as a failed candidate, never admitted
(tests/github/test_matrix_results.py). The world they run in: tests/github/matrix_world.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from freemad.core.evolve.fold import Status
from freemad.errors import UsageError
from freemad.github.evolve_matrix import (
    candidate_ref,
    plan_job,
)
from freemad.github.evolve_pr import PullRequestInfo
from tests.evolve.population import ScriptedPopulation, outcomes
from tests.evolve.runs import git, harness, make_repo
from tests.github.matrix_world import (
    GOAL,
    REPO,
    Matrix,
    config_with,
    first_generation,
    forge_commit,
    generation,
    judged,
    keys,
    measured,
    read,
    swap_commit,
    write,
)

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
