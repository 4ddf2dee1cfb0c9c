"""A sign of life on a terminal: while an agent works, a live line shows it with its elapsed
time, redrawn in place; nothing of the kind when stderr is not a terminal, or with --quiet."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests import terminal

FREEMAD = str(Path(sys.executable).parent / "freemad")
MOCK_AGENT = str(Path(sys.executable).parent / "freemad-mock-agent")
CONFIG = f"""\
agents:
  - id: quick
    cli_command: "{MOCK_AGENT} --persona iterative"
  - id: slow
    cli_command: "{MOCK_AGENT} --persona memoized --delay 1.5"
security:
  cli_allowed_commands: [{MOCK_AGENT}]
output:
  save_transcript: false
"""
# The slow agent at work: its name and a running time, not yet marked done.
WORKING = re.compile(r"(?<!✓ )slow \d+\.\ds")


def on_terminal(*args: str, cwd: Path) -> tuple[int, str, str]:
    """stderr on a pseudo-terminal, as a person sees it (stdout a pipe)."""
    return terminal.on_terminal([FREEMAD, *args], cwd=cwd, timeout=60)


def test_a_live_line_shows_the_agent_at_work_before_it_finishes(tmp_path: Path) -> None:
    (tmp_path / "slow.yaml").write_text(CONFIG)
    status, out, err = on_terminal("Write fib(n).", "-c", "slow.yaml", "-r", "0", cwd=tmp_path)
    assert status == 0, err
    working, done = WORKING.search(err), err.find("✓ slow ")
    assert working is not None, err
    assert 0 <= working.start() < done, "the line with elapsed time came after the agent was done"
    # Redrawn in place (a carriage return, no new line per redraw), then kept once.
    assert "\r" in err[max(working.start() - 80, 0) : working.start()]
    final = [line for line in err.split("\n") if "✓ slow" in line]
    assert len(final) == 1 and "round 0 (generation): 2 agent(s)" in final[0]
    assert out.startswith("Winner ")


def test_no_live_line_off_a_terminal_or_with_quiet(tmp_path: Path) -> None:
    (tmp_path / "slow.yaml").write_text(CONFIG)
    piped = subprocess.run(
        [FREEMAD, "Write fib(n).", "-c", "slow.yaml", "-r", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert piped.returncode == 0 and piped.stderr == ""
    status, _, err = on_terminal("Write fib(n).", "-c", "slow.yaml", "-r", "0", "-q", cwd=tmp_path)
    assert status == 0 and WORKING.search(err) is None and "\r" not in err.replace("\r\n", "")


def test_the_finalizer_shows_on_a_terminal_after_the_rounds(tmp_path: Path) -> None:
    config = CONFIG.replace("output:", "debate:\n  finalizer: quick\noutput:")
    (tmp_path / "final.yaml").write_text(config)
    status, out, err = on_terminal("Write fib(n).", "-c", "final.yaml", "-r", "0", cwd=tmp_path)
    assert status == 0, err
    started = err.find("finalizer quick: writing the final answer from the winner and 0 critique")
    assert err.find("✓ slow ") < started < err.find("✓ finalizer quick ")
    assert "Finalized by quick" in out
