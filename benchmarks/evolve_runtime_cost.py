"""What the evolve runtime itself costs per iteration, on a repository of 1,000 files.

The real EvolveRunner with its SQLite store, on the repository evolve_iteration.py builds. The
worker is in-process and edits three files (and score.json) at once; the judge is one stage,
`cat score.json`, so every candidate is admitted and the whole path runs: events, worktree
reset, protected restore, staging, diff artifact, commit, branch and tag, supervisor and stop
checks. The runtime's own cost of an iteration is the time from one version_admitted to the
next, less the judge stage's own time and the worker's. Target: under 300 ms.

Run: .venv/bin/python benchmarks/evolve_runtime_cost.py [--iterations 30] [--folders 50]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _common import emit, machine, progress, summary
from evolve_iteration import TARGET_MS, build_repository, git

from freemad.agents.agent_port import CallRequest, CallResult, CallStatus
from freemad.config import parse_config
from freemad.evolve.evolve_runner import EvolveRunner
from freemad.tasks.task_protocol import MARKER
from freemad.wiring import ADAPTERS, open_evolve_store


class Worker:
    """Edits three modules and reports a score one better than the last: always admitted."""

    agent_id = "worker"

    def __init__(self, folders: int) -> None:
        self.folders = folders
        self.seconds: dict[int, float] = {}

    async def call(self, request: CallRequest) -> CallResult:
        began = time.perf_counter()
        data = json.loads(request.prompt.split(MARKER, 1)[1])
        root, k = Path(data["workspace_root"]), data["iteration"]
        for n in range(3):
            path = root / f"pkg{(k * 3 + n) % self.folders:02d}" / f"mod{n:02d}.py"
            path.write_text(path.read_text() + f"VERSION_{k} = {k}\n")
        score = {"components": {"runtime_ms": 10_000.0 - k}}
        (root / "score.json").write_text(json.dumps(score))
        self.seconds[k] = time.perf_counter() - began
        return CallResult(CallStatus.OK, json.dumps({"content": f"edit {k}"}))


def config_for(iterations: int) -> Any:
    data = {
        "agents": [{"id": "worker", "cli_command": "scripted"}],
        "security": {"cli_allowed_commands": ["scripted"]},
        "evolve": {
            "repo_path": "repo",
            "store_path": "store/evolve.db",
            "variation": {"mode": "single_agent", "agent_id": "worker"},
            "judge": {
                "stages": [
                    {
                        "name": "score",
                        "command": "cat score.json",
                        "parse": "json_stdout",
                        "provides": ["runtime_ms"],
                    }
                ],
                "comparator": [{"component": "runtime_ms", "direction": "minimize"}],
                "protected_paths": ["tests"],
                "network": True,  # the namespace's cost belongs to the judge, not the runtime
            },
            "stop": {"max_iterations": iterations},
        },
    }
    return parse_config(yaml.safe_dump(data))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--folders", type=int, default=50)
    parser.add_argument("--files", type=int, default=20, help="files per folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evolve-runtime-") as folder:
        root = Path(folder)
        progress(f"building a repository of {args.folders * args.files} files")
        repo = build_repository(root / "repo", args.folders, args.files)
        (repo / "score.json").write_text(json.dumps({"components": {"runtime_ms": 10_000.0}}))
        git(repo, "add", "score.json")
        git(repo, "commit", "-q", "-m", "score")
        worker = Worker(args.folders)
        total = args.warmup + args.iterations
        config = config_for(total)
        admitted: dict[int, float] = {}
        stages: dict[int, float] = {}

        def on_step(kind: str, data: dict[str, Any]) -> None:
            if kind == "candidate_judged":
                stages[data["iteration"]] = sum(s["seconds"] for s in data["stages"])
            elif kind == "version_admitted":
                admitted[data["iteration"]] = time.perf_counter()

        with open_evolve_store(config.evolve.resolved(root)) as store:
            runner = EvolveRunner(
                config,
                store,
                config_dir=root,
                ports={"worker": worker},
                on_step=on_step,
                worktrees_dir=root / "worktrees",
                adapters=ADAPTERS,
            )
            state = runner.start("make runtime_ms smaller")
    assert len(state.versions) == total + 1, state.view()
    own = [
        (admitted[k] - admitted[k - 1] - stages[k] - worker.seconds[k]) * 1000
        for k in range(args.warmup + 1, total + 1)
    ]
    figures = summary(own, 1)
    emit(
        {
            "benchmark": "evolve_runtime_cost",
            "machine": machine(),
            "repository_files": args.folders * args.files + 21,
            "own_cost_ms_per_iteration": figures,
            "judge_stage_ms": summary([stages[k] * 1000 for k in range(1, total + 1)], 1),
            "target_ms": TARGET_MS,
            "meets_target": figures["median"] < TARGET_MS,
        }
    )


if __name__ == "__main__":
    main()
