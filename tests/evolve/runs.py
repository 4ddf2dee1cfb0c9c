"""What the runtime tests share: a small evolvable repository, in-process workers that edit their
worktree like a coding agent would, and a runner wired to them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freemad.agents.agent_port import CallRequest, CallResult, CallStatus
from freemad.config import FreemadConfig
from freemad.evolve.evolve_runner import EvolveRunner
from freemad.store import SqliteStore
from freemad.tasks.task_protocol import MARKER
from freemad.wiring import ADAPTERS, open_evolve_store
from tests.conftest import make_config

PY = sys.executable

# calc.py declares its own cost: the benchmark reports it, so every score is deterministic.
CALC = "COST = {cost}\n\n\ndef add(a, b):\n    return a + b{bug}\n"
CHECK = (
    "import sys\nsys.path.insert(0, '.')\nimport calc\n\n"
    "assert calc.add(2, 3) == 5, 'add(2, 3) is wrong'\n"
)
BENCH = (
    "import json\nimport calc\n\n"
    'print(json.dumps({"components": {"runtime_ms": float(calc.COST)}}))\n'
)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def make_repo(root: Path, cost: int = 50) -> Path:
    """A committed repository: calc.py (the code to evolve), tests/check.py and bench.py (the
    judge's, protected)."""
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text(CALC.format(cost=cost, bug=""))
    (root / "tests" / "check.py").write_text(CHECK)
    (root / "bench.py").write_text(BENCH)
    (root / ".gitignore").write_text("__pycache__/\n.freemad/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(
        root,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "-m",
        "seed",
    )
    return root


def calc(cost: int, bug: str = "") -> dict[str, str]:
    return {"calc.py": CALC.format(cost=cost, bug=bug)}


Edit = Callable[[Path], None] | dict[str, str] | None


def request_of(prompt: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(prompt.split(MARKER, 1)[1])
    return data


@dataclass
class Worker:
    """An in-process worker that edits its worktree: edit i at iteration i (1-based). A dict is
    {path: content}, a callable gets the worktree, None (or running past the list) changes
    nothing. In debates it proposes a plan, or directions when asked for them, and keeps."""

    agent_id: str
    edits: list[Edit] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    reply: Callable[[dict[str, Any]], CallResult] | None = None

    async def call(self, request: CallRequest) -> CallResult:
        if MARKER not in request.prompt:  # a debate: directions, or a plan
            return CallResult(CallStatus.OK, self.debate(request.prompt))
        data = request_of(request.prompt)
        self.requests.append(data)
        if self.reply is not None:
            return self.reply(data)
        index = data["iteration"] - 1
        edit = self.edits[index] if index < len(self.edits) else None
        root = Path(data["workspace_root"])
        if callable(edit):
            edit(root)
        elif edit:
            for path, content in edit.items():
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(content)
        body = {"agent_id": self.agent_id, "content": f"edit {index + 1}"}
        return CallResult(CallStatus.OK, json.dumps(body))

    def debate(self, prompt: str) -> str:
        if "DECISION:" in prompt:
            return "DECISION: KEEP\n\nREASONING:\nmine stands\n"
        if '"directions"' in prompt:
            solution = json.dumps({"directions": ["try a cache", "drop the loop"]})
        else:
            solution = "Lower COST in calc.py."
        return f"SOLUTION:\n{solution}\n\nREASONING:\nit helps\n"


def evolve_section(**overrides: Any) -> dict[str, Any]:
    section: dict[str, Any] = {
        "repo_path": "repo",
        "store_path": "store/evolve.db",
        "variation": {"mode": "single_agent", "agent_id": "worker"},
        "judge": {
            "stages": [
                {"name": "tests", "command": f"{PY} tests/check.py", "provides": ["tests_pass"]},
                {
                    "name": "bench",
                    "command": f"{PY} bench.py",
                    "parse": "json_stdout",
                    "provides": ["runtime_ms"],
                },
            ],
            "gate": ["tests_pass == 1"],
            "comparator": [{"component": "runtime_ms", "direction": "minimize", "epsilon": 0.5}],
            "protected_paths": ["tests", "bench.py"],
        },
        "supervisor": {"stall_window": 3, "loop_threshold": 2, "max_interventions_before_human": 1},
        "stop": {"max_iterations": 5},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(section.get(key), dict):
            section[key] = {**section[key], **value}
        else:
            section[key] = value
    return section


def evolve_config(
    agent_ids: Iterable[str] = ("worker",),
    security: dict[str, Any] | None = None,
    **overrides: Any,
) -> FreemadConfig:
    agents = [{"id": a, "cli_command": "scripted"} for a in agent_ids]
    return make_config(agents, evolve=evolve_section(**overrides), security=security or {})


@dataclass
class Harness:
    root: Path
    config: FreemadConfig
    store: SqliteStore
    runner: EvolveRunner

    @property
    def repo(self) -> Path:
        return self.root / "repo"

    def kinds(self, run_id: str) -> list[str]:
        return [e.kind for e in self.store.events(run_id)]

    def events(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        return [e.data for e in self.store.events(run_id) if e.kind == kind]


def harness(root: Path, workers: Iterable[Worker], config: FreemadConfig) -> Harness:
    """A runner over `root/repo` with in-process workers; worktrees under `root/worktrees`."""
    assert config.evolve is not None
    store = open_evolve_store(config.evolve.resolved(root))
    ports = {w.agent_id: w for w in workers}
    runner = EvolveRunner(
        config,
        store,
        config_dir=root,
        ports=ports,
        worktrees_dir=root / "worktrees",
        adapters=ADAPTERS,
    )
    return Harness(root, config, store, runner)
