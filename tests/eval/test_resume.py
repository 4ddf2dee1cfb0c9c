"""Repeats, seeds, statistics, cost and progress of a real `freemad eval run`, killed with SIGKILL
part way and resumed with --resume: nothing finished is run again, and the report pools every
repeat."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.cli.helpers import FREEMAD, freemad, user_env
from tests.conftest import wait_for
from tests.eval.agents import calls, write_items, write_setup
from tests.eval.test_run import ITEMS, TABLE


def test_a_killed_run_resumes_without_repeating_finished_items(tmp_path: Path) -> None:
    slow = [*TABLE[:2], {**TABLE[2], "delay": 60}]
    config = write_setup(tmp_path / "agents", slow, debate={"rounds": 2})
    dataset = write_items(tmp_path / "items.jsonl", ITEMS[:3])
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "out"
    args = ["eval", "run", "--dataset", str(dataset), "--config", str(config), "--out", str(out)]
    args += ["--concurrency", "1", "--repeats", "2", "--seed", "7"]
    running = subprocess.Popen(
        [str(FREEMAD), *args],
        cwd=tmp_path,
        env=user_env(home),
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the agents die with it
    )
    try:
        wait_for(lambda: len(list((out / "items").glob("*.json"))) == 4, "four rows kept")
        wait_for(lambda: any(m == "Q-tie" for _, _, m in calls(tmp_path / "agents")), "Q-tie")
        os.killpg(running.pid, signal.SIGKILL)
        running.wait(timeout=60)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == -signal.SIGKILL
    assert not (out / "report.json").exists()
    before = len(calls(tmp_path / "agents"))
    write_setup(tmp_path / "agents", TABLE, debate={"rounds": 2})
    refused = freemad(*args, cwd=tmp_path, home=home, code=2)
    assert "holds 4 finished item(s)" in refused.stderr
    again = freemad(*args, "--resume", cwd=tmp_path, home=home)
    assert "3 item(s) x 2 repeats: 4 already done, 2 to run" in again.stderr
    new = calls(tmp_path / "agents")[before:]
    assert {m for _, _, m in new} == {"Q-tie"} and len(new) == 2 * 9  # two debates of 3 x 3
    # Progress: one line per item off a terminal, with accuracy so far and the time left.
    assert "[6/6] freemad" in again.stderr and "so far" in again.stderr
    assert "ETA" in again.stderr

    report = json.loads((out / "report.json").read_text())
    assert (report["items"], report["graded"], report["seed"], report["repeats"]) == (3, 6, 7, 2)
    rows = report["rows"]
    assert [(row["id"], row["repeat"]) for row in rows] == [
        ("win", 0),
        ("win", 1),
        ("lose", 0),
        ("lose", 1),
        ("tie", 0),
        ("tie", 1),
    ]
    methods = report["methods"]
    # win: Free-MAD right, final majority wrong; lose: the reverse; tie: both right; twice each.
    assert (methods["freemad"]["correct"], methods["freemad"]["total"]) == (4, 6)
    assert methods["freemad"]["per_repeat"] == [pytest.approx(2 / 3)] * 2
    final = report["comparisons"]["majority_final"]
    assert (final["b"], final["c"], final["pairs"], final["p"]) == (2, 2, 6, 1.0)
    assert final["sentence"] == (
        "Free-MAD ties final majority, p = 1.00 (McNemar exact, 2 vs 2 discordant of 6 pairs)"
    )
    assert report["test"].startswith("McNemar's exact test")
    assert "Free-MAD ties final majority" in again.stdout

    # Cost: a single agent is charged its round-0 call; the initial majority every round-0 call;
    # Free-MAD the whole debate.
    cost = {name: entry["cost"] for name, entry in methods.items()}
    assert methods["single"]["agents"]["a1"]["cost"]["calls"] == 6
    assert cost["majority_initial"]["calls"] == 6 * 3
    assert cost["freemad"]["calls"] == sum(row["calls"] for row in rows) == 6 * 9
    assert cost["freemad"]["tokens"] == sum(row["tokens"] for row in rows) > 0
    per = cost["freemad"]["per_correct"]
    assert per["calls"] == pytest.approx(54 / 4)
    assert per["tokens"] == pytest.approx(cost["freemad"]["tokens"] / 4)
    assert per["seconds"] == pytest.approx(cost["freemad"]["seconds"] / 4, abs=1e-3)
    assert cost["single"]["calls"] == 6  # one agent's, on average

    # Rescoring the folder finds every repeat's transcript through the index.
    rescored = tmp_path / "rescored"
    freemad(
        "eval", "rescore", "--dataset", str(dataset), "--transcripts", str(out), "--out",
        str(rescored), "--config", str(config), cwd=tmp_path, home=home,
    )  # fmt: skip
    again_report = json.loads((rescored / "report.json").read_text())
    assert [(row["id"], row["repeat"]) for row in again_report["rows"]] == [
        (row["id"], row["repeat"]) for row in rows
    ]
    assert [row["run_id"] for row in again_report["rows"]] == [row["run_id"] for row in rows]
    assert again_report["comparisons"]["majority_final"]["pairs"] == 6
