"""Stopping a run from outside (Ctrl-C, SIGTERM) kills every agent process it started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import MOCK_AGENT
from tests.debate.test_faults import _still_alive

FREEMAD = str(Path(sys.executable).parent / "freemad")


# Ctrl-C reaches a foreground job; a job a non-interactive shell starts in the background
# (`cmd &`, as some CI runners start the tests) inherits SIGINT ignored, and Python keeps it so.
# This launcher restores it, then becomes freemad (same process, so the signal reaches it).
AS_A_FOREGROUND_JOB = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_run_and_every_agent_with_it(tmp_path: Path, signum: int) -> None:
    pidfile = tmp_path / "pids"
    config = {
        "agents": [
            {
                "id": f"stuck-{i}",
                "cli_command": f"{MOCK_AGENT} --fault spawn-child",
                "cli_mode_arg": True,
            }
            for i in range(3)
        ],
        "security": {"cli_allowed_commands": [MOCK_AGENT]},
        "output": {"transcript_dir": str(tmp_path / "transcripts")},
    }
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "FREEMAD_MOCK_PIDFILE": str(pidfile)}
    run = subprocess.Popen(
        [*AS_A_FOREGROUND_JOB, FREEMAD, "anything at all", "--config", "cfg.yaml"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    for _ in range(300):  # until all three agents and their children have written their pids
        if pidfile.exists() and len(pidfile.read_text().split()) == 6:
            break
        time.sleep(0.05)
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 6
    run.send_signal(signum)
    try:
        _, stderr = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        run.kill()  # not left running to fail a later test with a ResourceWarning
        _, stderr = run.communicate()
        pytest.fail(f"freemad outlived signal {signum} by 60 s: {stderr[-2000:]!r}")
    assert run.returncode == 130, stderr
    assert b"interrupted" in stderr and b"Traceback" not in stderr
    assert _still_alive(pids) == [], "processes outlived the interrupted run"
