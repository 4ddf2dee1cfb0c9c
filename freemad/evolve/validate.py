"""`freemad evolve validate`: everything that would stop a run, found before one starts.

The config itself is checked when it loads. Here: the repository (a git repository, clean, with
the seed), the sandbox (a container runtime that answers, when one is asked for), each agent's
program started once where its calls run (the agents' sandbox), and a dry run of the judge on an
export of the seed, which must pass its own gate. Warnings name weak spots
that do not stop a run: no sandbox on purpose, no editable_paths, nothing protected, a stage
nothing protects.
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from typing import Any

from freemad.agents.health import check_agents
from freemad.config.evolve_section import EvolveConfig
from freemad.config.models import FreemadConfig
from freemad.core.evolve import judge
from freemad.errors import FreemadError
from freemad.evolve.call_costs import cap_warning
from freemad.evolve.judging import measurement_data, run_stages, sandbox_problem
from freemad.sandbox.sandbox_port import Sandbox, View
from freemad.workspace.repository_port import Repositories


def validate(
    evolve: EvolveConfig,
    repos: Repositories,
    sandbox: Sandbox,
    agent_box: Sandbox | None = None,
    config: FreemadConfig | None = None,
) -> dict[str, Any]:
    """{"ok", "errors", "warnings", "isolation", "seed_commit", "baseline", "agents"};
    `evolve` resolved.

    `repos` reads the repository; `sandbox` runs the judge's stages; `agent_box` the worker's
    CLI; `config`, the whole config, has the agents' pricing a cost cap needs."""
    errors: list[str] = []
    warnings = _posture(evolve, sandbox, agent_box)
    unenforced = cap_warning(config) if config is not None else None
    if unenforced:
        warnings.append(unenforced)
    repo = Path(evolve.repo_path)
    report: dict[str, Any] = {"repo_path": str(repo), "seed_commit": None, "baseline": None}
    try:
        seed = repos.resolve_seed(repo, evolve.seed_ref)
    except FreemadError as exc:
        errors.append(exc.one_line())
        seed = None
    if seed is not None:
        report["seed_commit"] = seed
        dirty = repos.dirty_paths(repo)
        if dirty:
            shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
            errors.append(f"{repo} has uncommitted changes ({shown}); commit or stash them first")
        warnings += [
            f"protected path {path} is not in the seed; it is kept absent"
            for path in repos.missing_paths(repo, seed, evolve.judge.protected_paths)
        ]
    problem = sandbox_problem(sandbox, agent_box)
    report["agents"] = []
    if problem:
        errors.append(problem)
    elif config is not None:
        report["agents"] = check_agents(config.enabled_agents, agent_box)
        errors += [
            f"agent {health.agent_id} does not start where its calls run: {health.problem}"
            for health in report["agents"]
            if not health.ok
        ]
    if not problem and seed is not None:
        baseline, error = _dry_run(evolve, repos, sandbox, repo, seed)
        report["baseline"] = baseline
        if error:
            errors.append(error)
    isolation = sandbox.describe()
    if agent_box is not None and agent_box is not sandbox and agent_box.kind != sandbox.kind:
        isolation += [f"the worker's agent CLI: {line}" for line in agent_box.describe()[:1]]
    report.update(ok=not errors, errors=errors, warnings=warnings, isolation=isolation)
    return report


def _posture(evolve: EvolveConfig, sandbox: Sandbox, agent_box: Sandbox | None) -> list[str]:
    judge_cfg = evolve.judge
    warnings: list[str] = []
    if sandbox.kind == "host":
        warnings.append(
            "UNSAFE: security.sandbox is host, so judge stages run worker-written code on this "
            "host as you; a hostile worker can cheat the judge, read your credentials and leave "
            "processes behind. Install bubblewrap and remove security.sandbox: host"
        )
    if agent_box is not None and agent_box.kind == "host" and sandbox.kind != "host":
        warnings.append(
            "UNSAFE: the worker's agent CLI runs on this host as you (no bubblewrap here); it can "
            "reach your files, and processes it starts may outlive its call"
        )
    if evolve.editable_paths is None:
        warnings.append(
            "evolve.editable_paths is unset: a candidate may add or change any file but the "
            "protected ones (a root conftest.py, pytest.ini or a module that shadows a tool "
            "reaches the judge); list the globs a candidate may change"
        )
    protected = judge_cfg.protected_paths
    if not protected:
        warnings.append(
            "evolve.judge.protected_paths is empty: a worker may edit the tests and benchmarks "
            "that judge it"
        )
        return warnings
    for stage in judge_cfg.stages:
        words = shlex.split(stage.command)
        if not any(_names(word, path) for word in words for path in protected):
            warnings.append(
                f"stage {stage.name}: its command names no protected path, so a worker can "
                "change what it runs"
            )
    return warnings


def _names(word: str, path: str) -> bool:
    word = word.removeprefix("./").rstrip("/")
    return word == path or word.startswith(path + "/") or path.startswith(word + "/")


def _dry_run(
    evolve: EvolveConfig, repos: Repositories, sandbox: Sandbox, repo: Path, seed: str
) -> tuple[dict[str, Any] | None, str | None]:
    """The judge on an export of the seed: its measurement, and an error if it does not pass."""
    with tempfile.TemporaryDirectory(prefix="freemad-validate-") as folder:
        root = Path(folder)
        repos.export(repo, seed, root)
        view = View.of([root], [root / path for path in evolve.judge.protected_paths])
        measurement, stages = run_stages(evolve.judge.stages, sandbox, root, view)
    verdict = judge(measurement, None, {}, evolve.judge)
    baseline = {"measurement": measurement_data(measurement), "stages": stages}
    if verdict.admitted:
        return baseline, None
    return baseline, f"the judge fails on the seed, so no run could begin: {verdict.reason}"
