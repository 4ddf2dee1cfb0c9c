"""Runs survive death: kill -9 during judging, or a crash between moving the branch and recording
the version, then resume; every version is admitted exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from freemad.core.evolve.fold import Status
from freemad.sandbox import reaper
from freemad.sandbox.host import die_with_parent
from freemad.workspace.lineage import Lineage
from tests.evolve.runs import PY, Worker, calc, evolve_config, git, harness, make_repo
from tests.processes import gone

PROJECT = Path(__file__).resolve().parents[2]
EDITS = [calc(45), calc(30), calc(20)]
# The stage below reports to the test through a file outside its worktree, which no sandbox
# lets it write: these recovery tests run on the host on purpose. tests/sandbox/test_attacks.py
# kills a sandboxed run the same way.
HOST = {"sandbox": "host"}


def slow_bench(sentinel: Path) -> dict[str, object]:
    """A bench stage that, judging COST 30 for the first time, writes its pid and sleeps."""
    code = (
        "import json, os, sys, time; sys.path.insert(0, '.'); import calc; "
        f"s = {str(sentinel)!r}; "
        "first = calc.COST == 30 and not os.path.exists(s); "
        "first and open(s, 'w').write(str(os.getpid())); first and time.sleep(120); "
        "print(json.dumps(dict(components=dict(runtime_ms=float(calc.COST)))))"
    )
    return {
        "name": "bench",
        "command": f'{PY} -c "{code}"',
        "parse": "json_stdout",
        "provides": ["runtime_ms"],
    }


def judge(sentinel: Path) -> dict[str, object]:
    tests = {"name": "tests", "command": f"{PY} tests/check.py", "provides": ["tests_pass"]}
    return {"stages": [tests, slow_bench(sentinel)], "protected_paths": ["tests"]}


def wait_for(path: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists() or not path.read_text():
        if process.poll() is not None:
            _, err = process.communicate()
            pytest.fail(f"the run ended before judging began: {err.decode()[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail("the judge never started")
        time.sleep(0.05)


def killed_while_judging(
    root: Path, run: str, sentinel: Path, until: Callable[[], None] | None = None
) -> None:
    """Start a run in a process of its own (`run`: Python after `root = Path(...)`, imports of
    its own included), kill -9 it once its judge stage wrote its pid to `sentinel` (and `until`
    returned), and check the stage died with it (where agents and stages die with FREE-MAD)."""
    script = root / "run.py"
    header = (
        f"import sys\nsys.path.insert(0, {str(PROJECT)!r})\nfrom pathlib import Path\n"
        f"root = Path({str(root)!r})\n"
    )
    script.write_text(header + textwrap.dedent(run))
    process = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE)
    try:
        wait_for(sentinel, process)
        if until is not None:
            until()
    finally:
        process.kill()  # SIGKILL: no cleanup of any kind runs
        process.communicate()
    stage = int(sentinel.read_text())
    if reaper.enabled() or die_with_parent():  # the run's reaper, else setpriv, kills it
        assert gone(stage), "the judge stage outlived the killed run"
    else:
        os.kill(stage, signal.SIGKILL)


def test_kill_9_while_judging_then_resume_admits_each_version_once(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    sentinel = tmp_path / "judging.pid"
    run = """
        from tests.evolve.runs import Worker, calc, evolve_config, harness
        from tests.evolve.test_crash import EDITS, HOST, judge
        config = evolve_config(
            judge=judge(root / "judging.pid"), stop={"max_iterations": 3}, security=HOST
        )
        harness(root, [Worker("worker", EDITS)], config).runner.start("faster")
        """
    killed_while_judging(tmp_path, run, sentinel)

    config = evolve_config(judge=judge(sentinel), stop={"max_iterations": 3}, security=HOST)
    h = harness(tmp_path, [Worker("worker", EDITS)], config)
    [row] = h.store.runs(kind="evolve")
    assert h.runner.state(row.run_id).started == 2  # killed in the middle of iteration 2

    state = h.runner.resume(row.run_id)

    assert state.status is Status.STOPPED and state.stop_reason == "max_iterations"
    assert [(v.version, v.components["runtime_ms"]) for v in state.versions] == [
        (0, 50.0),
        (1, 45.0),
        (2, 30.0),
        (3, 20.0),
    ]
    [abandoned] = h.events(row.run_id, "iteration_abandoned")
    assert abandoned["iteration"] == 2
    judged = [d["iteration"] for d in h.events(row.run_id, "candidate_judged")]
    assert judged == [0, 1, 2, 3]
    tags = git(h.repo, "tag", "--list", f"evolve/{row.run_id}/*").split()
    assert sorted(tags) == [f"evolve/{row.run_id}/v{n}" for n in range(4)]
    log = git(h.repo, "log", "--format=%H", f"freemad/evolve/{row.run_id}").split()
    assert log[:4] == [v.commit for v in reversed(state.versions)]  # v0 is the seed itself
    assert state.versions[0].commit == state.seed_commit
    assert git(h.repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_crash_after_the_branch_moved_rolls_the_admission_forward(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_repo(tmp_path / "repo")
    real = Lineage.advance
    calls: list[int] = []

    def advance_then_die(self: Lineage, expected_tip: str, commit: str, version: int) -> None:
        real(self, expected_tip, commit, version)
        calls.append(version)
        if version == 1 and calls.count(1) == 1:
            raise KeyboardInterrupt  # after the branch and tag moved, before the event

    monkeypatch.setattr(Lineage, "advance", advance_then_die)
    h = harness(tmp_path, [Worker("worker", [calc(40), calc(30)])], evolve_config())
    with pytest.raises(KeyboardInterrupt):
        h.runner.start("faster")
    [row] = h.store.runs(kind="evolve")
    assert fold_pending(h, row.run_id) == 1

    h2 = harness(
        tmp_path,
        [Worker("worker", [calc(40), calc(30)])],
        evolve_config(stop={"max_iterations": 2}),
    )
    state = h2.runner.resume(row.run_id)

    assert [v.version for v in state.versions] == [0, 1, 2]
    assert [d["version"] for d in h2.events(row.run_id, "version_admitted")] == [0, 1, 2]
    assert calls.count(1) == 2  # rolled forward: the same commit, not judged again
    assert [d["iteration"] for d in h2.events(row.run_id, "candidate_judged")] == [0, 1, 2]


def fold_pending(h: object, run_id: str) -> int | None:
    state = h.runner.state(run_id)  # type: ignore[attr-defined]
    return None if state.pending is None else int(state.pending.version)
