"""`freemad` with `debate.finalizer`: the finalized answer printed apart from the winner, in the
human output and in `--json`; a failing finalizer leaves the debate succeeded. Real agents: a
small script speaking the agent contract, run as a process."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.helpers import script_agents
from tests.cli.test_cli import only_transcript, run

AGENT = """\
import sys
prompt = sys.stdin.read()
answer = sys.argv[1]
if "<winning_answer_" in prompt:
    if "--fail" in sys.argv:
        sys.stderr.write("finalizer crashed\\n")
        sys.exit(3)
    print("SOLUTION:\\nFINALIZED " + answer + "\\n\\nREASONING:\\nread the critiques")
elif "DECISION:" in prompt:
    print("DECISION: KEEP\\n\\nREASONING:\\n" + answer + " is wrong about zero")
else:
    print("SOLUTION:\\n" + answer + "\\n\\nREASONING:\\nmine")
"""


def setup(folder: Path, *, fail: bool = False) -> None:
    arguments = {"alpha": "ALPHA", "beta": "ALPHA", "gamma": "GAMMA --fail" if fail else "GAMMA"}
    script_agents(folder, AGENT, arguments, "debate: {rounds: 1, finalizer: gamma}\n")


def test_the_human_output_shows_the_finalized_answer_apart(tmp_path: Path) -> None:
    setup(tmp_path)
    done = run("write ALPHA", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    winner_at = out.index("Winner ")
    final_at = out.index("Finalized by gamma from the winner and 1 critique(s)")
    assert winner_at < out.index("\nALPHA\n") < final_at
    assert "FINALIZED GAMMA" in out[final_at:]
    data = json.loads(only_transcript(tmp_path).read_text())
    assert data["final_solution"] == "ALPHA"
    assert data["finalized"]["text"] == "FINALIZED GAMMA"
    assert data["finalized"]["exit_status"] == 0


def test_json_output_carries_both(tmp_path: Path) -> None:
    setup(tmp_path)
    done = run("write ALPHA", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["final_solution"] == "ALPHA"
    assert data["finalized"]["status"] == "ok"
    assert data["finalized"]["text"] == "FINALIZED GAMMA"


def test_a_failing_finalizer_is_shown_and_the_debate_succeeds(tmp_path: Path) -> None:
    setup(tmp_path, fail=True)
    done = run("write ALPHA", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "Finalizer gamma failed (exit_error: " in done.stdout
    assert "the winner above stands" in done.stdout
    data = json.loads(only_transcript(tmp_path).read_text())
    assert data["status"] == "completed"
    assert data["finalized"]["status"] == "failed"
    assert data["finalized"]["exit_status"] == 3
