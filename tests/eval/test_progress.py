"""The live progress line: rewritten in place on a terminal (a real pseudo-terminal here), with
items done, accuracy so far and the time left; and its arithmetic."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from freemad.eval.progress import Tracker, clock
from tests.cli.helpers import FREEMAD, user_env
from tests.eval.agents import write_items, write_setup
from tests.eval.test_run import ITEMS, TABLE


def test_the_eta_is_this_runs_pace_times_what_is_left() -> None:
    tracker = Tracker(total=10, done=4, correct=2)  # four kept from an earlier run
    tracker.start(100.0)
    assert tracker.eta(100.0) is None
    tracker.finished(right=True, now=102.0)
    tracker.finished(right=False, now=104.0)
    assert tracker.eta(104.0) == 2.0 * 4  # 2 s an item, 4 left
    line = tracker.line("q6", "completed", 104.0)
    assert line == "[6/10] freemad 50.0% so far (3 right), ETA 8s; last: q6 completed"
    assert (clock(59.4), clock(185), clock(3720)) == ("59s", "3m 05s", "1h 02m")


def test_on_a_terminal_the_line_is_rewritten_in_place(tmp_path: Path) -> None:
    config = write_setup(tmp_path / "agents", TABLE, debate={"rounds": 1})
    dataset = write_items(tmp_path / "items.jsonl", ITEMS[:3])
    home = tmp_path / "home"
    home.mkdir()
    controller, terminal = pty.openpty()
    args = ["eval", "run", "--dataset", str(dataset), "--config", str(config)]
    running = subprocess.Popen(
        [str(FREEMAD), *args, "--out", str(tmp_path / "out"), "--concurrency", "1"],
        cwd=tmp_path,
        env=user_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
    )
    os.close(terminal)
    seen = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed: the process is gone
            break
        if not chunk:
            break
        seen += chunk
    running.communicate(timeout=120)
    os.close(controller)
    assert running.returncode == 0
    text = seen.decode()
    for done in (1, 2, 3):
        assert f"\r\x1b[Kfreemad eval: [{done}/3] freemad" in text
    # Rewritten, not scrolled: no line break between one update and the next.
    between = text.split("[1/3]", 1)[1].split("[3/3]", 1)[0]
    assert "\n" not in between
    assert "so far" in text and "ETA" in text
