"""Run the evolve toy under both variation operators with the scripted agents; print a comparison.

Each operator gets a fresh copy of this folder as a git repository of its own (one commit, the
seed), runs `evolve.yaml` (single_agent) or `evolve.debate.yaml` (debate) to its end, and
reports the versions it admitted, its best runtime_ms, the iterations it judged, the
interventions it needed and its wall-clock seconds, as JSON on stdout.

    python examples/evolve_toy/compare_operators.py [--keep DIR]

Run it with the Python that has freemad installed; its folder goes first on PATH, so the judge's
`python tests/check.py` and the agents' `freemad-evolve-mock` come from the same environment.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GOAL = "make slow_sum as fast as possible"
CONFIGS = {"single_agent": "evolve.yaml", "debate": "evolve.debate.yaml"}
_NOT_COPIED = shutil.ignore_patterns(".git", ".freemad", "__pycache__", ".pytest_cache")


def make_repository(destination: Path) -> Path:
    """A copy of the toy, committed as the seed of a fresh git repository."""
    shutil.copytree(HERE, destination, ignore=_NOT_COPIED)
    git = shutil.which("git") or "git"
    identity = ["-c", "user.name=evolve toy", "-c", "user.email=toy@example.invalid"]
    for words in (["init", "-q", "."], ["add", "-A"], [*identity, "commit", "-qm", "seed"]):
        subprocess.run([git, *words], cwd=destination, check=True)
    return destination


def run_operator(operator: str, repository: Path) -> dict[str, Any]:
    from freemad.config.load import load_config
    from freemad.evolve.evolve_runner import EvolveRunner
    from freemad.wiring import ADAPTERS, open_evolve_store

    config = load_config(repository / CONFIGS[operator])
    assert config.evolve is not None
    store = open_evolve_store(config.evolve.resolved(repository))
    try:
        runner = EvolveRunner(config, store, config_dir=repository, adapters=ADAPTERS)
        started = time.monotonic()
        state = runner.start(GOAL)
        seconds = time.monotonic() - started
    finally:
        store.close()
    view = state.view()
    best = (view.get("incumbent") or {}).get("components", {}).get("runtime_ms")
    seed = state.versions[0].components.get("runtime_ms") if state.versions else None
    return {
        "operator": operator,
        "run_id": view["run_id"],
        "status": view["status"],
        "stop_reason": view["stop_reason"],
        "versions_admitted": [f"v{v.version} (iteration {v.iteration})" for v in state.versions],
        "seed_runtime_ms": seed,
        "best_runtime_ms": best,
        "iterations": view["iterations_judged"],
        "interventions": view["interventions"],
        "wall_seconds": round(seconds, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="make the repositories here and keep them")
    args = parser.parse_args(argv)
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="evolve-toy-"))
    try:
        results = [
            run_operator(operator, make_repository(workdir / operator)) for operator in CONFIGS
        ]
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    by_operator = {result.pop("operator"): result for result in results}
    print(json.dumps({"goal": GOAL, "operators": by_operator}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
