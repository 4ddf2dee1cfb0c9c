"""An editable install whose source lives under /tmp, where the sandbox puts a private /tmp:
the agents' interpreter still finds FREE-MAD (its .pth target is bound back, read-only), and
`freemad evolve validate` says so by starting each agent where its calls run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import needs_bwrap
from tests.packaging.test_first_hour import sh, user_env

ROOT = Path(__file__).resolve().parents[2]
# What an editable build of the project reads: its metadata and the folders it force-includes.
_SOURCE = ("pyproject.toml", "README.md", "LICENSE", "freemad", "configs", "examples", "action")


@pytest.fixture(scope="module")
def editable_venv() -> Iterator[Path]:
    """A copy of the project under /tmp, installed editable into a venv inside it (as the
    README's clone does); the dependencies come from this environment through a .pth line."""
    base = Path(tempfile.mkdtemp(prefix="freemad-editable-", dir="/tmp"))
    try:
        source = base / "clone"
        for name in _SOURCE:
            if (ROOT / name).is_dir():
                shutil.copytree(
                    ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
                )
            else:
                source.mkdir(exist_ok=True)
                shutil.copy2(ROOT / name, source / name)
        venv = source / ".venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = venv / "bin" / "python"
        purelib = sh(
            str(python),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            cwd=base,
            env={"PATH": "/usr/bin:/bin"},
        ).strip()
        (Path(purelib) / "outer_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        # As the README installs: pip builds it (hatchling and editables from the registry,
        # or pip's cache), here without the dependencies, which the line above brings.
        install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
        subprocess.run([*install, "--no-deps", "-e", str(source)], check=True, capture_output=True)
        yield venv
    finally:
        shutil.rmtree(base, ignore_errors=True)


@needs_bwrap
def test_the_toy_evolves_under_bubblewrap_from_an_editable_install_under_tmp(
    editable_venv: Path, tmp_path: Path
) -> None:
    python = str(editable_venv / "bin" / "python")
    found = sh(python, "-c", "import freemad; print(freemad.__file__)", cwd=tmp_path, env={})
    source = editable_venv.parent
    # The premise: FREE-MAD is imported from the clone under /tmp, not from inside the venv.
    assert found.strip() == str(source / "freemad" / "__init__.py")
    assert str(source).startswith("/tmp/")
    home = tmp_path / "home"
    home.mkdir()
    env = user_env(editable_venv, home)
    freemad = str(editable_venv / "bin" / "freemad")
    work = Path(tempfile.mkdtemp(prefix="freemad-toy-", dir="/tmp"))
    try:
        sh(freemad, "example", "evolve-toy", "toy", cwd=work, env=env)
        toy = work / "toy"
        said = sh(freemad, "evolve", "validate", cwd=toy, env=env)
        for agent in ("worker", "planner-a", "planner-b"):
            assert f"agent {agent}: starts (freemad-evolve-mock " in said, said
        assert said.rstrip().endswith("ok: a run can start")
        run = json.loads(
            sh(
                freemad,
                "evolve",
                "start",
                "make slow_sum as fast as possible",
                "--json",
                cwd=toy,
                env=env,
            )
        )
        assert (run["status"], run["stop_reason"]) == ("stopped", "target"), run
        assert run["versions"] >= 2  # the seed and at least one admitted change
    finally:
        shutil.rmtree(work, ignore_errors=True)
