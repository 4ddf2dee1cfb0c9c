"""The evolve examples without the runtime: their configs load, their judges measure the seed, and
each scripted step, applied by the real freemad-evolve-mock, does what the example's story says."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from freemad.config.evolve_section import EvolveConfig, StageConfig
from freemad.config.load import load_config
from freemad.config.models import FreemadConfig
from freemad.core.evolve import StageOutcome, parse_predicate, parse_stage
from freemad.evolve.worker_protocol import EvolveRequest, Incumbent, render_worker_prompt

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOY = EXAMPLES / "evolve_toy"
DEPENDENCY = EXAMPLES / "evolve_dependency_update"
MOCK = str(Path(sys.executable).parent / "freemad-evolve-mock")
_NOT_COPIED = shutil.ignore_patterns(".freemad", "__pycache__", ".pytest_cache")


def copy_of(example: Path, destination: Path) -> Path:
    shutil.copytree(example, destination, ignore=_NOT_COPIED)
    return destination


def evolve_of(config: FreemadConfig) -> EvolveConfig:
    assert config.evolve is not None
    return config.evolve


def stage(example: Path, name: str) -> StageConfig:
    judge = evolve_of(load_config(example / "evolve.yaml")).judge
    return next(s for s in judge.stages if s.name == name)


def run_stage(
    spec: StageConfig, cwd: Path
) -> tuple[StageOutcome, subprocess.CompletedProcess[str]]:
    """The stage's own command, with `python` taken to be this interpreter."""
    words = spec.command_words
    argv = [sys.executable, *words[1:]] if words[0] == "python" else words
    ran = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=spec.timeout_sec, check=False
    )
    return parse_stage(spec, ran.returncode, ran.stdout, False), ran


def apply_step(worktree: Path, iteration: int, example: Path) -> str:
    """Run the example's scripted worker for `iteration` in `worktree`, as its config calls it."""
    agent = load_config(example / "evolve.yaml").agents[0]
    request = EvolveRequest(
        run_id="example",
        goal="the example's goal",
        agent_id=agent.id,
        iteration=iteration,
        workspace_root=str(worktree),
        allowed_actions=["read_workspace", "write_workspace"],
        objective="see evolve.yaml",
        incumbent=Incumbent(version=0, commit="0" * 40, components={}),
    )
    program, *options = agent.command_words
    assert program == "freemad-evolve-mock"
    ran = subprocess.run(
        [MOCK, *options, "task"],
        input=render_worker_prompt(request),
        cwd=worktree,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return str(json.loads(ran.stdout)["content"])


def restore_protected(worktree: Path, seed: Path, example: Path) -> None:
    """What the runtime does before judging: protected paths come back from the seed."""
    for rel in evolve_of(load_config(example / "evolve.yaml")).judge.protected_paths:
        target, original = worktree / rel, seed / rel
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        if original.is_dir():
            shutil.copytree(original, target, ignore=_NOT_COPIED)
        elif original.exists():
            shutil.copy2(original, target)


# --- configs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [TOY / "evolve.yaml", TOY / "evolve.debate.yaml", DEPENDENCY / "evolve.yaml"],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_example_configs_load_and_name_files_that_exist(path):
    config = load_config(path)
    evolve = evolve_of(config)
    example = path.parent
    assert evolve.repo_path == "."
    assert evolve.stop.target
    for rel in [*evolve.judge.protected_paths, *evolve.knowledge_paths]:
        assert (example / rel).exists(), rel
    for agent in config.agents:
        words = agent.command_words
        assert words[0] == "freemad-evolve-mock"
        assert agent.cli_mode_arg
        assert (example / words[words.index("--steps") + 1]).is_file()


def test_the_toy_configs_differ_only_in_the_variation_operator():
    single = load_config(TOY / "evolve.yaml").model_dump()
    debate = load_config(TOY / "evolve.debate.yaml").model_dump()
    assert single["evolve"]["variation"]["mode"] == "single_agent"
    assert debate["evolve"]["variation"]["mode"] == "debate"
    del single["evolve"]["variation"], debate["evolve"]["variation"]
    assert single == debate


@pytest.mark.parametrize(
    "path", [TOY / "evolve.yaml", DEPENDENCY / "evolve.yaml"], ids=lambda p: p.parent.name
)
def test_every_judge_stage_is_a_python_script_needing_only_the_standard_library(path):
    # A user who did only `pip install -e .` (no dev extras, so no pytest) can run the examples.
    for spec in evolve_of(load_config(path)).judge.stages:
        program, script, *_ = spec.command_words
        assert program == "python", spec.command
        tree = ast.parse((path.parent / script).read_text())
        imported = {
            name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for name in (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
        }
        own = {"slow_sum"}  # the code under test, which bench.py times in its own process
        assert imported - own <= set(sys.stdlib_module_names), (script, imported)


# --- the toy ------------------------------------------------------------------------------------


def test_the_toy_seed_passes_its_tests_and_bench_prints_one_json_object(tmp_path):
    toy = copy_of(TOY, tmp_path / "toy")
    tests, _ = run_stage(stage(TOY, "tests"), toy)
    assert tests.ok, tests.reason
    bench, ran = run_stage(stage(TOY, "bench"), toy)
    assert bench.ok, bench.reason
    assert list(json.loads(ran.stdout)) == ["components"]
    assert ran.stdout.count("\n") == 1
    assert bench.components["runtime_ms"] > 1.0  # the seed is slow on purpose
    assert not parse_predicate("runtime_ms < 0.05").holds(bench.components)


TOY_STORY = {1: True, 2: False, 3: False, 4: True, 5: True, 6: True}  # step: passes the tests


def test_each_toy_step_passes_or_fails_the_tests_as_the_story_says(tmp_path):
    seed = copy_of(TOY, tmp_path / "seed")
    steps = json.loads((TOY / "scripted" / "worker_steps.json").read_text())["steps"]
    assert len(steps) == len(TOY_STORY)
    for number, passes in TOY_STORY.items():
        worktree = copy_of(seed, tmp_path / f"step{number}")
        apply_step(worktree, number, TOY)
        assert (worktree / "slow_sum.py").read_text() != (seed / "slow_sum.py").read_text()
        restore_protected(worktree, seed, TOY)
        outcome, ran = run_stage(stage(TOY, "tests"), worktree)
        assert outcome.ok is passes, (number, ran.stderr)


def test_the_tamper_step_would_pass_unprotected_and_fails_once_restored(tmp_path):
    seed = copy_of(TOY, tmp_path / "seed")
    worktree = copy_of(seed, tmp_path / "tampered")
    apply_step(worktree, 3, TOY)
    assert (worktree / "tests" / "check.py").read_text() == "raise SystemExit(0)\n"
    assert (worktree / "tests" / "conftest.py").exists()  # a new file in a protected folder
    tests, _ = run_stage(stage(TOY, "tests"), worktree)
    bench, _ = run_stage(stage(TOY, "bench"), worktree)
    assert tests.ok  # the gutted check would let the wrong version through
    assert bench.components == {"runtime_ms": 0.001}  # and the faked benchmark would win
    restore_protected(worktree, seed, TOY)
    assert not (worktree / "tests" / "conftest.py").exists()
    assert (worktree / "tests" / "check.py").read_text() == (seed / "tests/check.py").read_text()
    tests, ran = run_stage(stage(TOY, "tests"), worktree)
    assert not tests.ok
    assert "slow_sum(1) = 1 (int), expected 0" in ran.stderr  # n*(n+1)//2 is one n too far


CLOSED_FORM = (
    "def slow_sum(n):\n    if n < 0:\n        raise ValueError(n)\n    return n * (n - 1) // 2\n"
)


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"slow_sum.py": "import os\n\nos._exit(0)\n"}, "stopped with status 0 before its results"),
        (
            {"slow_sum.py": "print('67 passed')\nraise SystemExit(0)\n"},
            "printed no results line, but '67 passed'",
        ),
        (
            {"slow_sum.py": CLOSED_FORM.replace("// 2", "/ 2")},
            "slow_sum(0) = 0.0 (float), expected 0",
        ),
        (
            {"slow_sum.py": CLOSED_FORM.replace("raise ValueError(n)", "return 0")},
            "slow_sum(-1) did not raise ValueError",
        ),
        (  # the probe runs with -I: a json.py beside slow_sum.py does not replace the real one
            {"slow_sum.py": CLOSED_FORM.replace("- 1", "+ 1"), "json.py": "dumps = repr\n"},
            "slow_sum(1) = 1 (int), expected 0",
        ),
    ],
    ids=["exits-at-import", "prints-and-exits", "floats", "accepts-negative", "shadows-json"],
)
def test_check_py_is_not_fooled_by_what_slow_sum_does_in_its_own_process(tmp_path, files, reason):
    toy = copy_of(TOY, tmp_path / "toy")
    for rel, text in files.items():
        (toy / rel).write_text(text)
    outcome, ran = run_stage(stage(TOY, "tests"), toy)
    assert not outcome.ok
    assert ran.returncode == 1
    assert ran.stderr.startswith("check.py: ") and ran.stderr.count("\n") == 1
    assert reason in ran.stderr, ran.stderr


def test_check_py_passes_the_closed_form(tmp_path):
    toy = copy_of(TOY, tmp_path / "toy")
    (toy / "slow_sum.py").write_text(CLOSED_FORM)
    outcome, ran = run_stage(stage(TOY, "tests"), toy)
    assert outcome.ok, ran.stderr


def test_the_closed_form_meets_the_target_and_beats_the_seed(tmp_path):
    seed = copy_of(TOY, tmp_path / "seed")
    worktree = copy_of(seed, tmp_path / "closed_form")
    apply_step(worktree, 6, TOY)
    assert "n * (n - 1) // 2" in (worktree / "slow_sum.py").read_text()
    fast, _ = run_stage(stage(TOY, "bench"), worktree)
    slow, _ = run_stage(stage(TOY, "bench"), seed)
    assert fast.components["runtime_ms"] * 100 < slow.components["runtime_ms"]
    assert parse_predicate("runtime_ms < 0.05").holds(fast.components)


# --- the dependency update ----------------------------------------------------------------------


def test_the_dependency_seed_behaves_and_vendors_major_1(tmp_path):
    repo = copy_of(DEPENDENCY, tmp_path / "seed")
    behaviour, ran = run_stage(stage(DEPENDENCY, "characterization"), repo)
    assert behaviour.ok, ran.stderr
    version, _ = run_stage(stage(DEPENDENCY, "version"), repo)
    assert version.components == {"vendored_major": 1.0}


def test_vendoring_without_adapting_changes_the_behaviour(tmp_path):
    repo = copy_of(DEPENDENCY, tmp_path / "step1")
    apply_step(repo, 1, DEPENDENCY)
    assert 'version__ = "2.0.0"' in (repo / "vendor/tabulate_lite/__init__.py").read_text()
    behaviour, ran = run_stage(stage(DEPENDENCY, "characterization"), repo)
    assert not behaviour.ok
    assert "python -m app.report differs from the seed's at line 5" in ran.stderr
    assert "render_report() warned: DeprecationWarning: tabulate() is deprecated" in ran.stderr


def test_an_app_that_exits_at_import_fails_the_characterization(tmp_path):
    repo = copy_of(DEPENDENCY, tmp_path / "exits")
    golden = (repo / "tests/characterization/report.golden.txt").read_text()
    (repo / "app/report.py").write_text(f"import os\n\nprint({golden!r}, end='')\nos._exit(0)\n")
    behaviour, ran = run_stage(stage(DEPENDENCY, "characterization"), repo)
    assert not behaviour.ok  # the command line prints the golden report, the probe gets nothing
    assert "differs" not in ran.stderr and "the probe printed no results line" in ran.stderr


def test_vendoring_and_adapting_keeps_the_behaviour_and_reaches_the_target(tmp_path):
    repo = copy_of(DEPENDENCY, tmp_path / "step2")
    apply_step(repo, 2, DEPENDENCY)
    behaviour, ran = run_stage(stage(DEPENDENCY, "characterization"), repo)
    assert behaviour.ok, ran.stderr
    version, _ = run_stage(stage(DEPENDENCY, "version"), repo)
    assert version.components == {"vendored_major": 2.0}
    assert parse_predicate("vendored_major >= 2").holds(version.components)


def test_a_version_string_edit_is_not_an_upgrade(tmp_path):
    repo = copy_of(DEPENDENCY, tmp_path / "forged")
    init = repo / "vendor/tabulate_lite/__init__.py"
    init.write_text(init.read_text().replace('"1.4.0"', '"2.0.0"'))
    version, ran = run_stage(stage(DEPENDENCY, "version"), repo)
    assert not version.ok
    assert "not a verbatim copy of release 2.0.0: __init__.py differ" in ran.stderr
