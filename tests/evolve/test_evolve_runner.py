"""The evolve runtime end to end on real git repositories, with in-process workers that edit their
worktree and a judge of real subprocesses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from freemad.core.evolve.fold import Status
from freemad.errors import UsageError
from tests.evolve.runs import (
    PY,
    Worker,
    calc,
    evolve_config,
    git,
    harness,
    make_repo,
)


def checkout_snapshot(repo: Path) -> tuple[str, str, str]:
    return (
        git(repo, "rev-parse", "HEAD"),
        git(repo, "symbolic-ref", "HEAD"),
        git(repo, "status", "--porcelain", "--untracked-files=all"),
    )


def test_a_real_speedup_is_admitted_with_its_true_score_and_nothing_else(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    worker = Worker(
        "worker",
        [
            calc(30),  # faster: v1
            calc(10, bug=" + 1"),  # faster but wrong: the gate rejects it
            calc(30),  # what v1 already is: changes nothing
            calc(29.8),  # within epsilon 0.5: not an improvement
            calc(20),  # faster: v2
        ],
    )
    h = harness(tmp_path, [worker], evolve_config())
    before = checkout_snapshot(h.repo)

    state = h.runner.start("make add cheaper")

    assert state.status is Status.STOPPED and state.stop_reason == "max_iterations"
    assert [(v.version, v.components["runtime_ms"]) for v in state.versions] == [
        (0, 50.0),
        (1, 30.0),
        (2, 20.0),
    ]
    verdicts = {d["iteration"]: d["verdict"] for d in h.events(state.run_id, "candidate_judged")}
    assert [verdicts[n]["admitted"] for n in range(6)] == [True, True, False, False, False, True]
    assert verdicts[2]["reason"] == (
        "stage tests failed: exited with status 1: AssertionError: add(2, 3) is wrong"
    )
    assert "changes nothing" in verdicts[3]["reason"]
    assert "not better" in verdicts[4]["reason"]

    # The lineage: a branch advanced fast-forward, tags per version, the score in a trailer.
    branch = f"freemad/evolve/{state.run_id}"
    tip = git(h.repo, "rev-parse", branch)
    assert tip == state.versions[-1].commit
    trailers = git(h.repo, "log", "-1", "--format=%(trailers:key=Evolve-Score,valueonly)", tip)
    assert trailers.strip() == "tests_pass=1.0, runtime_ms=20.0"
    for v in state.versions:
        assert (
            git(h.repo, "rev-parse", f"evolve/{state.run_id}/v{v.version}^{{commit}}") == v.commit
        )
    assert git(h.repo, "rev-list", "--count", f"{state.seed_commit}..{tip}") == "2"
    assert git(h.repo, "show", f"{tip}:calc.py") == calc(20)["calc.py"].rstrip("\n")

    # The user's checkout is untouched, and no worktree is left behind.
    assert checkout_snapshot(h.repo) == before
    assert git(h.repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert not (tmp_path / "worktrees" / state.run_id).exists()


def test_tampering_with_the_judge_is_defeated(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "check.py").write_text("pass\n")

    def rewrite_the_test(root: Path) -> None:
        (root / "tests" / "check.py").write_text("pass\n")
        (root / "calc.py").write_text(calc(5, bug=" + 1")["calc.py"])

    def drop_a_conftest(root: Path) -> None:
        (root / "tests" / "conftest.py").write_text("raise SystemExit(0)\n")
        (root / "bench.py").write_text('print(\'{"components": {"runtime_ms": 1.0}}\')\n')
        (root / "calc.py").write_text(calc(50.2)["calc.py"])  # no better, honestly measured

    def swap_tests_for_a_symlink(root: Path) -> None:
        (root / "tests" / "check.py").unlink()
        (root / "tests").rmdir()
        (root / "tests").symlink_to(outside)
        (root / "calc.py").write_text(calc(5, bug=" + 1")["calc.py"])

    def link_out_of_the_worktree(root: Path) -> None:
        (root / "calc.py").write_text(calc(1)["calc.py"])
        (root / "data.txt").symlink_to("/etc/hostname")

    worker = Worker(
        "worker",
        [rewrite_the_test, drop_a_conftest, swap_tests_for_a_symlink, link_out_of_the_worktree],
    )
    h = harness(tmp_path, [worker], evolve_config(stop={"max_iterations": 4}))
    state = h.runner.start("cheat")

    judged = {d["iteration"]: d for d in h.events(state.run_id, "candidate_judged")}
    seed_ids = judged[0]["protected"]
    assert set(seed_ids) == {"tests", "bench.py"}
    for n in (1, 2, 3, 4):
        assert judged[n]["protected"] == seed_ids, n
        assert not judged[n]["verdict"]["admitted"], n
    assert judged[1]["measurement"]["failed_stage"] == "tests"  # the real test ran, and failed
    assert judged[2]["measurement"]["components"]["runtime_ms"] == 50.2  # the real bench
    assert "symlinks lead out of the worktree: data.txt" in judged[4]["verdict"]["reason"]
    assert [v.version for v in state.versions] == [0]
    assert (outside / "check.py").read_text() == "pass\n"  # the restore never followed the link


def test_a_stall_brings_an_intervention_then_a_question_and_an_answer_carries_on(
    tmp_path: Path,
) -> None:
    make_repo(tmp_path / "repo")
    edits = [calc(60), calc(61), calc(62), calc(63), calc(64), calc(65), calc(40)]
    worker = Worker("worker", edits)
    config = evolve_config(stop={"max_iterations": 7})
    h = harness(tmp_path, [worker], config)

    state = h.runner.start("faster")

    assert state.status is Status.WAITING
    [intervention] = h.events(state.run_id, "intervention")
    assert intervention["detection"] == "stall"
    assert intervention["directions"] == ["try a cache", "drop the loop"]
    assert worker.requests[3]["directions"] == ["try a cache", "drop the loop"]
    assert state.question is not None and "answer" in state.question and "v0" in state.question
    with pytest.raises(UsageError, match="waits for your answer"):
        h.runner.resume(state.run_id)

    h.runner.answer(state.run_id, "lower COST below 45")
    state = h.runner.advance(state.run_id)
    assert worker.requests[-1]["directions"][-1] == "lower COST below 45"
    assert state.status is Status.STOPPED and state.stop_reason == "max_iterations"
    assert state.versions[-1].components == {"runtime_ms": 40.0, "tests_pass": 1.0}


def test_a_declined_question_ends_the_run_cleanly(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    worker = Worker("worker", [calc(60)] * 6)
    config = evolve_config(supervisor={"max_interventions_before_human": 0})
    h = harness(tmp_path, [worker], config)
    state = h.runner.start("faster")
    assert state.status is Status.WAITING and h.events(state.run_id, "intervention") == []

    state = h.runner.decline(state.run_id)

    assert (state.status, state.stop_reason) == (Status.STOPPED, "declined")
    assert state.question is None
    with pytest.raises(UsageError, match="not waiting"):
        h.runner.answer(state.run_id, "too late")


def test_a_changed_judge_is_refused_and_a_raised_limit_is_fine(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    worker = Worker("worker", [calc(40), calc(30), calc(20)])
    h = harness(tmp_path, [worker], evolve_config(stop={"max_iterations": 1}))
    state = h.runner.start("faster")
    assert (state.stop_reason, len(state.versions)) == ("max_iterations", 2)

    changed = evolve_config(
        stop={"max_iterations": 3},
        judge={"comparator": [{"component": "runtime_ms", "direction": "minimize"}]},
    )
    other = harness(tmp_path, [worker], changed)
    with pytest.raises(UsageError, match="judge has changed since run"):
        other.runner.resume(state.run_id)

    raised = harness(tmp_path, [worker], evolve_config(stop={"max_iterations": 3}))
    state = raised.runner.resume(state.run_id)
    assert (state.stop_reason, len(state.versions)) == ("max_iterations", 4)


def test_a_seed_the_judge_rejects_fails_the_run_with_the_reason(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "calc.py").write_text(calc(50, bug=" - 1")["calc.py"])
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "broken")
    h = harness(tmp_path, [Worker("worker")], evolve_config())
    state = h.runner.start("faster")
    assert state.status is Status.FAILED and state.stop_reason == "baseline_failed"
    [stopped] = h.events(state.run_id, "stopped")
    assert stopped["detail"] == (
        "stage tests failed: exited with status 1: AssertionError: add(2, 3) is wrong"
    )


def test_a_network_off_stage_cannot_reach_a_server(tmp_path: Path) -> None:
    import socket

    from freemad.sandbox.host import network_isolation

    if not network_isolation():
        pytest.skip("this system cannot give a process a network namespace of its own (unshare -n)")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    make_repo(tmp_path / "repo")
    probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"
    stages = [{"name": "net", "command": f'{PY} -c "{probe}"', "provides": ["tests_pass"]}]
    judge = {
        "stages": stages,
        "comparator": [{"component": "tests_pass", "direction": "maximize"}],
        "protected_paths": [],
    }
    with server:
        off = harness(tmp_path, [Worker("worker")], evolve_config(judge=judge))
        state = off.runner.start("reach out")
        assert state.stop_reason == "baseline_failed"
        on = harness(
            tmp_path,
            [Worker("worker", [calc(40)])],
            evolve_config(judge={**judge, "network": True}, stop={"max_iterations": 1}),
        )
        assert on.runner.start("reach out").versions[0].components == {"tests_pass": 1.0}


def test_a_debate_picks_the_plan_and_its_author_implements_it(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    alice = Worker("alice", [calc(25)])
    bob = Worker("bob", [calc(45)])
    config = evolve_config(
        ["alice", "bob"],
        variation={"mode": "debate", "agent_id": None, "debate_rounds": 1},
        stop={"max_iterations": 1},
    )
    h = harness(tmp_path, [alice, bob], config)
    state = h.runner.start("faster")
    [proposed] = h.events(state.run_id, "candidate_proposed")
    assert proposed["plan"] == "Lower COST in calc.py."
    assert proposed["agent"] == "alice"  # both proposed the same plan: the first by id
    assert alice.requests[0]["plan"] == "Lower COST in calc.py." and bob.requests == []
    assert state.versions[-1].components["runtime_ms"] == 25.0


def test_a_worker_that_fails_costs_one_rejected_iteration(tmp_path: Path) -> None:
    from freemad.agents.agent_port import CallResult, CallStatus

    make_repo(tmp_path / "repo")
    worker = Worker(
        "worker", reply=lambda _: CallResult(CallStatus.TIMEOUT, detail="no answer in 900 s")
    )
    h = harness(tmp_path, [worker], evolve_config(stop={"max_iterations": 1}))
    state = h.runner.start("faster")
    [proposed] = h.events(state.run_id, "candidate_proposed")
    assert (proposed["ok"], proposed["cause"]) == (False, "timeout")
    [_, judged] = h.events(state.run_id, "candidate_judged")
    # The worker's failure, not the judge's: it said nothing of the candidate.
    assert judged["verdict"]["reason"] == "the worker failed: no answer in 900 s (timeout)"
    assert judged["stages"] == [] and judged["measurement"]["failed_stage"] == "<worker>"


def test_bad_starts_are_refused_with_one_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    h = harness(tmp_path, [Worker("worker")], evolve_config())
    with pytest.raises(UsageError, match="the goal is empty"):
        h.runner.start("  \x00 ")
    (repo / "calc.py").write_text("dirty\n")
    with pytest.raises(UsageError, match=r"uncommitted changes \(calc\.py\)"):
        h.runner.start("faster")
    git(repo, "checkout", "calc.py")
    missing = harness(tmp_path, [Worker("worker")], evolve_config(seed_ref="no-such-ref"))
    with pytest.raises(UsageError, match="no-such-ref"):
        missing.runner.start("faster")
    assert h.store.runs(kind="evolve") == []
    assert os.listdir(tmp_path / "repo" / ".git" / "refs" / "heads") == ["main"]


def test_a_worker_that_cannot_run_stops_the_run_with_its_cause(tmp_path: Path) -> None:
    """The same crash twice in a row is the tooling's, not the idea's: no intervention, no
    question for a person; the run stops saying why and how to check, and resumes once mended."""
    from freemad.agents.agent_port import CallResult, CallStatus

    make_repo(tmp_path / "repo")
    crash = "exit status 1: ModuleNotFoundError: No module named 'freemad.agents'"
    worker = Worker(
        "worker",
        edits=[calc(40), calc(30), calc(20)],
        reply=lambda _: CallResult(CallStatus.EXIT_ERROR, detail=crash),
    )
    config = evolve_config(supervisor={"stall_window": 2, "loop_threshold": 3})
    h = harness(tmp_path, [worker], config)
    state = h.runner.start("faster")
    assert (state.status.value, state.stop_reason) == ("stopped", "worker_failed")
    assert state.iterations == 2 and len(state.versions) == 1
    judged = h.events(state.run_id, "candidate_judged")[1:]
    assert [j["verdict"]["reason"] for j in judged] == [
        f"the worker failed: {crash} (exit_error)"
    ] * 2
    assert "intervention" not in h.kinds(state.run_id)
    assert "waiting_for_human" not in h.kinds(state.run_id)
    assert state.error is not None and crash in state.error
    assert "in each of the last 2 iterations" in state.error
    assert "freemad evolve validate" in state.error and f"resume {state.run_id}" in state.error
    # Mended: the same evidence does not stop it again; it works on and admits.
    worker.reply = None
    worker.edits = [calc(40), calc(40), calc(30)]
    resumed = h.runner.resume(state.run_id)
    assert resumed.stop_reason != "worker_failed" and len(resumed.versions) == 2


def test_an_unusable_reply_is_the_workers_failure_and_gets_an_intervention(
    tmp_path: Path,
) -> None:
    from freemad.agents.agent_port import CallResult, CallStatus

    make_repo(tmp_path / "repo")
    worker = Worker("worker", reply=lambda _: CallResult(CallStatus.OK, "no JSON here"))
    config = evolve_config(
        supervisor={"stall_window": 2, "loop_threshold": 3}, stop={"max_iterations": 2}
    )
    h = harness(tmp_path, [worker], config)
    state = h.runner.start("faster")
    judged = h.events(state.run_id, "candidate_judged")[1:]
    assert all(j["verdict"]["reason"].startswith("the worker failed: ") for j in judged)
    assert all(j["measurement"]["failed_stage"] == "<worker reply>" for j in judged)
    assert state.stop_reason != "worker_failed"  # a reply may mend with new directions
    assert "intervention" in h.kinds(state.run_id)
