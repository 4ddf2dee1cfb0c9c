"""`freemad evolve ...` as a user runs it: the toy from validate to report, and every bad start
refused with one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import needs_bwrap
from tests.evolve.runs import git

# The examples as users run them: under bubblewrap, which their configs ask for (auto).
pytestmark = needs_bwrap

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BIN = Path(sys.executable).parent
FREEMAD = str(BIN / "freemad")
GOAL = "make slow_sum as fast as possible"


def freemad(*args: str, cwd: Path, check: int | None = 0) -> subprocess.CompletedProcess[str]:
    # The toy's judge runs `python` from PATH, as it would in a user's activated venv.
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [FREEMAD, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    if check is not None:
        assert done.returncode == check, done.stdout + done.stderr
    return done


def repository_of(example: str, destination: Path) -> Path:
    """The example copied and committed as a repository of its own, as its README says."""
    shutil.copytree(EXAMPLES / example, destination, ignore=shutil.ignore_patterns(".freemad"))
    git(destination, "init", "-q", "-b", "main")
    git(destination, "add", "-A")
    git(destination, "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "init")
    return destination


def test_the_toy_from_validate_to_report(tmp_path: Path) -> None:
    toy = repository_of("evolve_toy", tmp_path / "toy")

    validated = freemad("evolve", "validate", "--config", "evolve.yaml", cwd=toy)
    assert "seed " in validated.stdout and "measures: tests_pass=1" in validated.stdout
    assert validated.stdout.rstrip().endswith("ok: a run can start")

    started = freemad("evolve", "start", "--config", "evolve.yaml", "--json", GOAL, cwd=toy)
    run: dict[str, Any] = json.loads(started.stdout)
    run_id = run["run_id"]
    assert (run["status"], run["stop_reason"]) == ("stopped", "target")

    inspected = json.loads(
        freemad("evolve", "inspect", run_id, "-c", "evolve.yaml", cwd=toy).stdout
    )
    judged = {
        e["data"]["iteration"]: e["data"]
        for e in inspected["events"]
        if e["kind"] == "candidate_judged"
    }
    admitted = {n for n, d in judged.items() if d["verdict"]["admitted"]}
    assert {0, 1, 4, 6} <= admitted  # iteration 5 (a comment) is noise either way
    assert judged[2]["measurement"]["failed_stage"] == "tests"  # wrong: off by one
    assert judged[3]["measurement"]["failed_stage"] == "tests"  # tampered: restored, then wrong
    assert judged[3]["protected"] == judged[0]["protected"]
    assert judged[6]["measurement"]["components"]["runtime_ms"] < 0.05

    status = json.loads(
        freemad("evolve", "status", run_id, "-c", "evolve.yaml", "--json", cwd=toy).stdout
    )
    assert status == run
    tip = git(toy, "rev-parse", f"freemad/evolve/{run_id}")
    assert tip == run["incumbent"]["commit"]
    assert "Evolve-Score: tests_pass=1.0, runtime_ms=" in git(toy, "log", "-1", "--format=%B", tip)

    first = freemad("evolve", "report", run_id, "-c", "evolve.yaml", cwd=toy).stdout
    again = freemad("evolve", "report", run_id, "-c", "evolve.yaml", cwd=toy).stdout
    assert first == again and f"# Evolve run {run_id}" in first
    freemad("evolve", "report", run_id, "-c", "evolve.yaml", "--out", "out", cwd=toy)
    assert (toy / "out" / "report.md").read_text() == first
    assert (toy / "out" / "score.svg").read_text().startswith("<svg")

    refused = freemad("evolve", "pause", run_id, "-c", "evolve.yaml", cwd=toy, check=2)
    assert refused.stderr == f"freemad: error: run {run_id} is stopped, not running\n"
    assert git(toy, "status", "--porcelain") == "?? out/"  # the checkout is as it was
    assert git(toy, "rev-parse", "--abbrev-ref", "HEAD") == "main"


def test_the_dependency_update_reaches_its_target(tmp_path: Path) -> None:
    repo = repository_of("evolve_dependency_update", tmp_path / "dep")
    started = freemad(
        "evolve", "start", "-c", "evolve.yaml", "--json", "vendor tabulate_lite 2.x", cwd=repo
    )
    run = json.loads(started.stdout)
    assert run["stop_reason"] == "target"
    assert run["incumbent"]["components"]["vendored_major"] == 2.0


def toy_with(tmp_path: Path, change: dict[str, Any] | None = None) -> Path:
    toy = repository_of("evolve_toy", tmp_path / "toy")
    if change:
        config = yaml.safe_load((toy / "evolve.yaml").read_text())
        for key, value in change.items():
            config["evolve"]["judge"][key] = value
        (toy / "evolve.yaml").write_text(yaml.safe_dump(config))
        git(toy, "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qam", "config")
    return toy


EXTRA = (
    'python -c "import json; print(json.dumps(dict(components=dict(runtime_ms=1.0, extra=2.0))))"'
)
BENCH = {"name": "bench", "parse": "json_stdout", "provides": ["runtime_ms"]}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"stages": [{**BENCH, "command": "python -c pass"}]},
            "the judge fails on the seed, so no run could begin: stage bench failed: printed "
            "nothing on stdout",
        ),
        (
            {"stages": [{**BENCH, "command": EXTRA}]},
            "stage bench failed: undeclared component(s) extra",
        ),
        (
            {
                "stages": [
                    {"name": "tests", "command": "python -c 'exit(1)'", "provides": ["tests_pass"]},
                    {**BENCH, "command": "python bench.py"},
                ],
                "gate": ["tests_pass == 1"],
            },
            "stage tests failed: exited with status 1",
        ),
    ],
)
def test_a_judge_that_fails_on_the_seed_is_reported_and_no_run_starts(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    comparator = [{"component": "runtime_ms", "direction": "minimize"}]
    change = {"gate": [], "comparator": comparator, **change}
    toy = toy_with(tmp_path, {**change, "protected_paths": []})
    validated = freemad("evolve", "validate", "-c", "evolve.yaml", cwd=toy, check=1)
    assert expected in validated.stdout
    assert "warning: evolve.judge.protected_paths is empty" in validated.stdout
    assert validated.stderr == "freemad: error: 1 problem(s); no run can start until fixed\n"
    started = freemad("evolve", "start", "-c", "evolve.yaml", "--json", GOAL, cwd=toy, check=1)
    run = json.loads(started.stdout)
    assert (run["status"], run["stop_reason"]) == ("failed", "baseline_failed")


def test_a_dirty_repository_and_a_missing_seed_are_refused(tmp_path: Path) -> None:
    toy = toy_with(tmp_path)
    (toy / "slow_sum.py").write_text("def slow_sum(n):\n    return 0\n")
    validated = freemad("evolve", "validate", "-c", "evolve.yaml", cwd=toy, check=1)
    assert "error: " in validated.stdout and "uncommitted changes (slow_sum.py)" in validated.stdout
    refused = freemad("evolve", "start", "-c", "evolve.yaml", GOAL, cwd=toy, check=2)
    assert "uncommitted changes (slow_sum.py); commit or stash them first" in refused.stderr
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    git(toy, "checkout", "slow_sum.py")

    config = yaml.safe_load((toy / "evolve.yaml").read_text())
    config["evolve"]["seed_ref"] = "v9-never-tagged"
    (tmp_path / "elsewhere.yaml").write_text(
        yaml.safe_dump(
            {
                **config,
                "evolve": {
                    **config["evolve"],
                    "repo_path": str(toy),
                    "store_path": str(tmp_path / "s.db"),
                },
            }
        )
    )
    missing = freemad(
        "evolve", "start", "-c", str(tmp_path / "elsewhere.yaml"), GOAL, cwd=tmp_path, check=2
    )
    assert "v9-never-tagged" in missing.stderr and missing.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("judge", "expected"),
    [
        ({"protected_paths": ["../outside"]}, "evolve.judge.protected_paths[0]"),
        ({"gate": ["speed < 3"]}, "unknown component 'speed'"),
    ],
)
def test_a_bad_evolve_section_is_one_line(
    tmp_path: Path, judge: dict[str, Any], expected: str
) -> None:
    toy = toy_with(tmp_path, judge)
    for command in (["validate"], ["start", GOAL]):
        done = freemad("evolve", *command, "-c", "evolve.yaml", cwd=toy, check=2)
        assert expected in done.stderr and done.stderr.count("\n") == 1


def test_answer_needs_a_direction_or_decline(tmp_path: Path) -> None:
    toy = toy_with(tmp_path)
    for args in ([], ["text", "--decline"]):
        done = freemad("evolve", "answer", "r1", *args, "-c", "evolve.yaml", cwd=toy, check=2)
        assert "give either a direction (TEXT) or --decline" in done.stderr
    unknown = freemad("evolve", "status", "nope", "-c", "evolve.yaml", cwd=toy, check=2)
    assert "no runs yet in" in unknown.stderr  # and the store was not created for the question
    no_section = tmp_path / "plain.yaml"
    no_section.write_text("agents:\n  - id: a\n    cli_command: freemad-mock-agent\n")
    done = freemad("evolve", "status", "r1", "-c", str(no_section), cwd=tmp_path, check=2)
    assert "has no evolve: section" in done.stderr


def test_compare_operators_runs_the_toy_under_both_operators(tmp_path: Path) -> None:
    script = EXAMPLES / "evolve_toy" / "compare_operators.py"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    operators = json.loads(done.stdout)["operators"]
    assert set(operators) == {"single_agent", "debate"}
    for figures in operators.values():
        assert figures["stop_reason"] == "target"
        assert figures["best_runtime_ms"] < 0.05 < figures["seed_runtime_ms"]
