"""The layering check (`lint-imports`, [tool.importlinter] in pyproject.toml) covers every module
of freemad, and fails on a wrong import: each case below adds one to a copy of the package."""

from __future__ import annotations

import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import freemad

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: the dependency freemad itself uses there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = str(Path(sys.executable).parent / "lint-imports")
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "contracts"
]


def contract(contract_id: str) -> dict[str, object]:
    return next(c for c in CONTRACTS if c["id"] == contract_id)


def lint_copy(tmp_path: Path, contract_id: str, wrong: dict[str, str] | None = None) -> str:
    """`lint-imports` on a copy of the package with `wrong` lines appended to some of its
    modules; its output, which must say whether the contract was kept."""
    shutil.copytree(
        ROOT / "freemad", tmp_path / "freemad", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for module, line in (wrong or {}).items():
        with (tmp_path / module).open("a") as source:
            source.write(f"\n{line}\n")
    done = subprocess.run(
        [LINT_IMPORTS, "--no-cache", "--no-logo", "--contract", contract_id],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},  # the copy, not the installed package
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    out = done.stdout + done.stderr
    assert done.returncode == (1 if wrong else 0), out
    assert ("Contracts: 0 kept, 1 broken." if wrong else "Contracts: 1 kept, 0 broken.") in out
    return out


def test_every_top_level_module_of_freemad_is_in_a_layer() -> None:
    """A module in no layer would escape the check: a new one must be placed (pyproject.toml)."""
    named = {
        name
        for layer in contract("layers")["layers"]  # type: ignore[attr-defined]
        for name in re.split(r"[|:]", layer)
    }
    modules = {f"freemad.{m.name}" for m in pkgutil.iter_modules(freemad.__path__)}
    assert modules - {n.strip() for n in named} == set()


def test_the_copy_passes_as_the_package_does(tmp_path: Path) -> None:
    """The control for the cases below: only the added import breaks the copy."""
    lint_copy(tmp_path, "layers")


@pytest.mark.parametrize(
    ("contract_id", "wrong", "reported"),
    [
        (
            "layers",
            {"freemad/core/scoring.py": "import freemad.cli"},
            "freemad.core.scoring -> freemad.cli",
        ),
        (
            "layers",
            {"freemad/github/events.py": "from freemad.bot import web"},
            "freemad.github.events -> freemad.bot.web",
        ),
        (
            "core-pure",
            {"freemad/core/task_machine.py": "import subprocess"},
            "freemad.core.task_machine -> subprocess",
        ),
        (
            "core-pure",
            {"freemad/core/answer_identity.py": "from pydantic import BaseModel"},
            "freemad.core.answer_identity -> pydantic",
        ),
        (
            "runtimes-handed-adapters",
            {
                "freemad/debate/debate_runner.py": "from freemad.agents.subprocess_agent import CliAgent"
            },
            "freemad.debate.debate_runner -> freemad.agents.subprocess_agent",
        ),
        (
            # The package's __init__ imports the SQLite store: the port is freemad.store.store_port.
            "runtimes-handed-adapters",
            {"freemad/evolve/evolve_runner.py": "from freemad.store import SqliteStore"},
            "freemad.store -> freemad.store.sqlite",
        ),
        (
            # The repository port is freemad.workspace.repository_port; its GitPython adapter is handed.
            "runtimes-handed-adapters",
            {"freemad/evolve/evolve_runner.py": "from freemad.workspace.lineage import Lineage"},
            "freemad.evolve.evolve_runner -> freemad.workspace.lineage",
        ),
        (
            "runtimes-handed-sandboxes",
            {"freemad/debate/validation.py": "from freemad.sandbox.host import HostSandbox"},
            "freemad.debate.validation -> freemad.sandbox.host",
        ),
        (
            # The package's __init__ re-exports the choosers: the port is freemad.sandbox.sandbox_port.
            "runtimes-handed-sandboxes",
            {"freemad/tasks/steps.py": "from freemad.sandbox import code_sandbox"},
            "freemad.sandbox -> freemad.sandbox.choose",
        ),
        (
            "github-handed-adapters",
            {"freemad/github/behaviours/debate.py": "from freemad.wiring import make_agent"},
            "freemad.github.behaviours.debate -> freemad.wiring",
        ),
        (
            "runtimes-no-adapter-libraries",
            {"freemad/tasks/task_runner.py": "import git"},
            "freemad.tasks.task_runner -> git",
        ),
    ],
)
def test_a_wrong_import_fails_the_check_and_is_named(
    tmp_path: Path, contract_id: str, wrong: dict[str, str], reported: str
) -> None:
    assert reported in lint_copy(tmp_path, contract_id, wrong)
