"""A config edited while the live dashboard runs: real gunicorn on loopback with two workers.

gunicorn's master reads the configs runs start with before its workers fork, so a worker that
boots later (here: both killed with SIGKILL and started again by the master) starts with the
configs the server started with, even after a config was edited into an invalid one. Before,
such a worker failed to boot and gunicorn's master stopped the whole server. A HUP reads the
configs again, and keeps the old ones if one cannot be read.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from tests.conftest import wait_for
from tests.dashboard.served import Served, allowed_to_start, serve, write_mock_config

TOKEN = "a-start-token-for-these-tests-0123456789"


def rounds_shown(served: Served) -> int:
    status, body = served.get("/api/config")
    assert status == 200, body
    return int(json.loads(body)["config"]["debate"]["rounds"])


ENV = {"FREEMAD_DASHBOARD_TOKEN": TOKEN, "FREEMAD_WORKERS": "2"}


def test_workers_that_boot_after_an_edit_start_with_the_configs_read_at_start(
    tmp_path: Path,
) -> None:
    _, config, args = allowed_to_start(tmp_path, 1)
    with serve(tmp_path, *args, env=ENV) as served:
        wait_for(lambda: len(served.workers()) == 2, "two workers")
        write_mock_config(config, "not a number")
        before = set(served.workers())
        for pid in before:
            os.kill(pid, signal.SIGKILL)

        def booted_again() -> bool:
            assert served.process.poll() is None, served.log.read_text()
            now = set(served.workers())
            return len(now) == 2 and not now & before and served.get("/health")[0] == 200

        wait_for(booted_again, "two new workers answering", 60)
        assert {rounds_shown(served) for _ in range(6)} == {1}
        # A debate's own process reads the file afresh: the edit stops it, and its page says why.
        status, body = served.post("/api/debates", TOKEN, {"requirement": "Add two numbers."})
        assert status == 202, body
        run_id = body["run_id"]
        wait_for(
            lambda: b"debate.rounds" in served.get(f"/api/runs/{run_id}")[1],
            "the failure on the run's API",
            60,
        )
        assert served.process.poll() is None
    log = served.log.read_text()
    assert "Worker failed to boot" not in log and "Traceback" not in log


def test_a_hup_reads_the_configs_again_and_keeps_them_when_one_is_broken(tmp_path: Path) -> None:
    _, config, args = allowed_to_start(tmp_path, 1)
    with serve(tmp_path, *args, env=ENV) as served:
        assert rounds_shown(served) == 1
        write_mock_config(config, "not a number")
        served.process.send_signal(signal.SIGHUP)
        wait_for(
            lambda: "kept the configs read before" in served.log.read_text(), "the warning", 60
        )
        wait_for(lambda: len(served.workers()) == 2, "two workers after the HUP", 60)
        assert served.process.poll() is None
        assert {rounds_shown(served) for _ in range(6)} == {1}

        write_mock_config(config, 2)
        served.process.send_signal(signal.SIGHUP)

        def shows_two() -> bool:
            return {rounds_shown(served) for _ in range(6)} == {2}

        wait_for(shows_two, "the edited config on every worker", 60)
    log = served.log.read_text()
    assert "Worker failed to boot" not in log and "Traceback" not in log
    [line] = [x for x in log.splitlines() if "kept the configs read before" in x]
    assert "debate.rounds" in line
