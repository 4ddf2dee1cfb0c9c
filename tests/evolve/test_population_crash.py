"""A generation survives kill -9: a real run is killed while one candidate is still being judged and
the others are judged; the resumed run judges only the missing one, and loses none."""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from pathlib import Path

from freemad.config import FreemadConfig
from freemad.core.evolve.fold import Status
from tests.evolve.population import ScriptedPopulation, judge_with
from tests.evolve.runs import evolve_config, git, harness, make_repo
from tests.evolve.test_crash import HOST, killed_while_judging

SPEEDS = {1: [45, 30, 40, 47], 2: [25, 35, 20, 60]}


def slow_judge(sentinel: Path) -> dict[str, object]:
    """Judging cost 30 for the first time, the bench writes its pid and sleeps."""
    code = (
        f"s = {str(sentinel)!r}; first = calc.COST == 30 and not os.path.exists(s); "
        "first and open(s, 'w').write(str(os.getpid())); first and time.sleep(120); "
        "cost = calc.COST"
    )
    return judge_with(code)


def config(sentinel: Path) -> FreemadConfig:
    return evolve_config(
        judge=slow_judge(sentinel),
        population={"size": 4, "parallel": 4},
        stop={"max_iterations": 2},
        security=HOST,
    )


def measured_in(store: Path, iteration: int) -> int:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10) as db:
        rows = db.execute("SELECT data FROM events WHERE kind = 'candidate_measured'").fetchall()
    return sum(1 for (data,) in rows if json.loads(data)["iteration"] == iteration)


def test_kill_9_mid_generation_resumes_without_judging_a_candidate_twice(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    sentinel = tmp_path / "judging.pid"
    run = """
        from tests.evolve.population import ScriptedPopulation
        from tests.evolve.test_population_crash import SPEEDS, config
        from tests.evolve.runs import harness
        worker = ScriptedPopulation("worker", speeds=SPEEDS)
        harness(root, [worker], config(root / "judging.pid")).runner.start("faster")
        """

    def three_judged() -> None:
        deadline = time.monotonic() + 120
        # The other three candidates of generation 1 are judged while candidate 1 sleeps.
        while measured_in(tmp_path / "store" / "evolve.db", 1) < 3:
            assert time.monotonic() < deadline, "the other candidates were never judged"
            time.sleep(0.05)

    killed_while_judging(tmp_path, run, sentinel, three_judged)

    worker = ScriptedPopulation("worker", speeds=SPEEDS)
    h = harness(tmp_path, [worker], config(sentinel))
    [row] = h.store.runs(kind="evolve")
    before = h.runner.state(row.run_id)
    assert (before.started, before.generation, sorted(before.members)) == (1, 4, [0, 2, 3])

    state = h.runner.resume(row.run_id)

    assert state.status is Status.STOPPED and state.stop_reason == "max_iterations"
    [resumed] = h.events(row.run_id, "generation_resumed")
    assert resumed == {"iteration": 1, "judged": [0, 2, 3], "redo": [1]}
    measured = h.events(row.run_id, "candidate_measured")
    assert Counter((d["iteration"], d["candidate"]) for d in measured) == {
        (g, k): 1 for g in (1, 2) for k in range(4)
    }
    # Only the candidate that was not judged went back to its worker.
    assert [(r["generation"], r["candidate"]) for r in worker.requests][:1] == [(1, 1)]
    assert sorted((r["generation"], r["candidate"]) for r in worker.requests) == [
        (1, 1),
        *((2, k) for k in range(4)),
    ]
    assert [(v.version, v.components["runtime_ms"]) for v in state.versions] == [
        (0, 50.0),
        (1, 30.0),
        (2, 20.0),
    ]
    assert [d["iteration"] for d in h.events(row.run_id, "candidate_judged")] == [0, 1, 2]
    assert [d["version"] for d in h.events(row.run_id, "version_admitted")] == [0, 1, 2]
    tags = git(h.repo, "tag", "--list", f"evolve/{row.run_id}/*").split()
    assert sorted(tags) == [f"evolve/{row.run_id}/v{n}" for n in range(3)]
    assert git(h.repo, "worktree", "list", "--porcelain").count("worktree ") == 1
