"""A fake `docker` or `podman` for the container judge's tests: first on PATH, it logs the argv
each call is started with and runs the stage itself in the folder the container would (the
worktree, or the `workdir` below it)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from freemad.sandbox import View, code_sandbox
from freemad.sandbox.process import CommandResult

FAKE_RUNTIME = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(args) + "\\n")
if args[0] != "run":
    sys.exit(0)  # info, kill
VALUED = {{"--name", "--network", "--user", "--cap-drop", "--security-opt", "--tmpfs",
          "--pids-limit", "--memory", "--memory-swap", "--cpus", "--mount", "--workdir", "-e",
          "--userns"}}
at, options = 1, []
while args[at].startswith("-"):
    width = 2 if args[at] in VALUED else 1
    options.append(args[at : at + width])
    at += width
command = args[at + 1 :]  # after the image
mounts = [dict(part.split("=", 1) for part in o[1].split(",") if "=" in part)
          for o in options if o[0] == "--mount"]
work = next(m["source"] for m in mounts if m["target"] == "/work")
workdir = next(o[1] for o in options if o[0] == "--workdir")
folder = os.path.join(work, os.path.relpath(workdir, "/work"))
sys.exit(subprocess.run(command, cwd=folder).returncode)
"""


def fake_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    """A `docker` or `podman` first on PATH that logs each call's argv and runs the stage."""
    bin_dir, log = tmp_path / "fakebin", tmp_path / f"{name}.log"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / name
    script.write_text(FAKE_RUNTIME.format(python=sys.executable, log=str(log)))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return log


def logged_calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def flag_values(argv: list[str], flag: str) -> list[str]:
    """Every value given to `flag` before the image (an option that takes one)."""
    return [argv[at + 1] for at, word in enumerate(argv) if word == flag]


def leading_options(argv: list[str], image: str) -> list[str]:
    return argv[: argv.index(image)]


def make_worktree(tmp_path: Path, name: str = "worktree") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    return folder


CWD = [sys.executable, "-c", "import os; print(os.getcwd())"]


def run_stage(
    config: Any, worktree: Path, argv: list[str] = CWD, network: bool = False
) -> CommandResult:
    return code_sandbox("host", network, [], config).run(argv, worktree, 60, View())
