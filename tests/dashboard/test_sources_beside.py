"""`freemad-dashboard` and `freemad site build` serve the same runs: a source named on the
command line is served beside the config's own, as the README's quick start runs them
(`--evolve-store toy/...` from a folder whose config keeps the debates and tasks)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.helpers import FREEMAD, user_env
from tests.dashboard.served import serve


def test_a_named_source_is_served_beside_the_configs_own(tmp_path: Path) -> None:
    env = user_env(tmp_path)
    for args in (["init", "--mock"], ["Write fib(n).", "-r", "0", "--json"]):
        subprocess.run(
            [str(FREEMAD), *args], cwd=tmp_path, env=env, check=True, capture_output=True
        )
    debate = json.loads(next((tmp_path / "transcripts").glob("*.json")).read_text())["run_id"]
    elsewhere = tmp_path / "toy" / "evolve.db"  # named, not there yet: read once it is
    with serve(tmp_path, "--evolve-store", str(elsewhere), "--workers", "1") as served:
        status, body = served.get("/api/runs")
    assert status == 200
    assert debate in [run["run_id"] for run in json.loads(body)["runs"]]
    built = subprocess.run(
        [str(FREEMAD), "site", "build", "--evolve-store", str(elsewhere)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    # The site refuses a named source that is not there; the dashboard waits for it.
    assert built.returncode != 0 and "no such file or folder" in built.stderr
