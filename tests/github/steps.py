"""Running a workflow step's `run:` script as the runner does: bash -e, in the workspace, with the
step's environment; its exit and the outputs it wrote to GITHUB_OUTPUT."""

from __future__ import annotations

import subprocess
from pathlib import Path

from freemad.github.workflow_io import read_outputs


def run_script(
    script: str, workspace: Path, env: dict[str, str], output: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done, read_outputs(output) if output.exists() else {}
