"""What an agent said, kept: every turn's replies as given (parsed or not, bounded) and a failed
CLI's stderr tail, in the transcript, in `freemad transcript show`, and with `-v` on a terminal.
Real agents: one script speaking the contract, run as a process per agent."""

from __future__ import annotations

import json
from pathlib import Path

from freemad.debate.debate_record import PARSED_REPLY_END, REPLY_END, kept_reply
from freemad.debate.transcript import fenced
from tests import terminal
from tests.cli.helpers import FREEMAD, script_agents
from tests.cli.test_cli import only_transcript, run

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

AGENT = """\
import sys
prompt = sys.stdin.read()
how = sys.argv[1]
if how == "crash":
    print("loading the model", file=sys.stderr)
    raise RuntimeError("weights unreadable, token " + "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
if how == "chatter":
    print("Sure! Here is my answer ```` in prose, no markers")
elif how == "huge":
    print("SOLUTION:\\nx = 1\\n\\nREASONING:\\n" + "why " * 10000 + "END")
elif "DECISION:" in prompt:
    print("DECISION: KEEP\\n\\nREASONING:\\nmine stands")
else:
    print("SOLUTION:\\nx = 1\\n\\nREASONING:\\nsimplest")
"""


def setup(folder: Path) -> None:
    arguments = {"good": "good", "crashy": "crash", "chatty": "chatter", "big": "huge"}
    settings = "debate: {rounds: 1}\n"
    script_agents(folder, AGENT, arguments, settings)


def test_every_reply_and_a_failed_stderr_are_kept_and_shown(tmp_path: Path) -> None:
    setup(tmp_path)
    done = run("Set x to one.", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    saved = only_transcript(tmp_path).read_text()
    assert TOKEN not in saved  # what a CLI printed is published: credentials redacted
    rounds = json.loads(saved)["transcript"]
    good, crashy, chatty, big = (
        rounds[0]["agents"][a] for a in ("good", "crashy", "chatty", "big")
    )
    assert good["replies"] == ["SOLUTION:\nx = 1\n\nREASONING:\nsimplest\n"]
    assert "stderr_tail" not in good  # only a failed call keeps it
    assert crashy["error"]["cause"] == "exit_error" and "replies" not in crashy
    assert crashy["stderr_tail"].startswith("loading the model\nTraceback")
    assert crashy["stderr_tail"].rstrip().endswith("token [REDACTED github_token]")
    # An unparseable turn keeps both replies, the first and the retry's, as they came.
    assert chatty["status"] == "failed" and chatty["error"]["cause"] == "unparseable"
    assert chatty["response"] is None and len(chatty["replies"]) == 2
    assert chatty["replies"][0].startswith("Sure! Here is my answer ````")
    # A long reply keeps its two ends and says how much went between: 2 KiB each for a reply
    # read as the answer (its answer is in `response`), 8 KiB for one that was not.
    [reply] = big["replies"]
    assert reply.startswith("SOLUTION:\nx = 1") and reply.rstrip().endswith("END")
    assert "characters of the reply cut by FREE-MAD" in reply
    assert len(reply) < 2 * PARSED_REPLY_END + 100

    shown = run("transcript", "show", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "#### crashy, round 0: the end of its stderr" in out
    assert "RuntimeError: weights unreadable, token [REDACTED github_token]" in out
    assert "#### chatty, round 0: reply 2 of 2, as it said it" in out
    assert "chatty unparseable: reply has no 'SOLUTION:' marker line" in out
    # The reply holds a fence of four backticks: the block around it is longer.
    assert "`````text\nSure! Here is my answer ````" in out
    assert TOKEN not in out


def test_transcripts_are_listed_and_found_by_id_path_or_newest(tmp_path: Path) -> None:
    setup(tmp_path)
    assert run("Set x to one.", cwd=tmp_path).returncode == 0
    path = only_transcript(tmp_path)
    run_id = json.loads(path.read_text())["run_id"]
    listed = run("transcript", "list", cwd=tmp_path)
    assert listed.returncode == 0 and run_id[:12] in listed.stdout
    assert "Set x to one." in listed.stdout
    rows = [
        json.loads(line)
        for line in run("transcript", "list", "--json", cwd=tmp_path).stdout.splitlines()
    ]
    assert [row["run_id"] for row in rows] == [run_id]
    inside = run("transcript", "show", run_id[3:9], cwd=tmp_path)  # not its first characters
    assert inside.returncode == 2 and "no transcript of run" in inside.stderr
    by_prefix = run("transcript", "show", run_id[:6], "--json", cwd=tmp_path)
    by_path = run("transcript", "show", str(path), "--json", cwd=tmp_path)
    assert json.loads(by_prefix.stdout) == json.loads(by_path.stdout)
    # --json gives the full shape: every turn's solution is there, not a reference.
    assert json.loads(by_path.stdout)["transcript"][0]["agents"]["good"]["response"]["solution"]
    assert run("transcript", "show", cwd=tmp_path).stdout.startswith(f"# FREE-MAD debate {run_id}")


def test_what_is_not_a_transcript_is_one_line(tmp_path: Path) -> None:
    setup(tmp_path)
    missing = run("transcript", "show", "feedfacecafe", cwd=tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.startswith("freemad: error: no transcripts in ")  # none yet
    (tmp_path / "transcripts").mkdir()
    none = run("transcript", "show", cwd=tmp_path)
    assert none.returncode == 2 and "run a debate first" in none.stderr
    broken = tmp_path / "transcripts" / "transcript-20260101T000000Z-0123456789ab.json"
    broken.write_text('{"run_id": "0123456789ab", "transcript": ')
    shown = run("transcript", "show", "0123", cwd=tmp_path)
    assert shown.returncode == 2 and len(shown.stderr.strip().splitlines()) == 1
    assert "is not a readable transcript" in shown.stderr
    unknown = run("transcript", "show", "feedfacecafe", cwd=tmp_path)
    assert "no transcript of run 'feedfacecafe'" in unknown.stderr
    assert "freemad transcript list shows them" in unknown.stderr
    listed = run("transcript", "list", cwd=tmp_path)
    assert listed.returncode == 0 and "unreadable" in listed.stdout


def test_verbose_shows_the_end_of_a_failed_agents_stderr(tmp_path: Path) -> None:
    setup(tmp_path)
    argv = [FREEMAD, "Set x to one.", "-r", "0", "-v"]
    status, _, err = terminal.on_terminal(argv, cwd=tmp_path, timeout=120)
    assert status == 0, err
    assert "stderr| loading the model" in err
    assert "stderr| RuntimeError: weights unreadable, token [REDACTED github_token]" in err
    assert TOKEN not in err  # nor in the log lines above it


def test_kept_replies_and_fences_hold_their_bounds() -> None:
    assert kept_reply("short") == "short"
    exact = "y" * (2 * REPLY_END)
    assert kept_reply(exact) == exact
    long = "a" * REPLY_END + "m" * 5000 + "z" * REPLY_END
    kept = kept_reply(long)
    assert kept.startswith("a" * REPLY_END + "\n[... 5000 characters")
    assert kept.endswith("\n" + "z" * REPLY_END) and "m" not in kept
    assert kept_reply("q" * 5000, 2048).count("q") == 4096
    for text in ("plain", "``` inside", "a ````` b", "`"):
        block = fenced(text)
        fence = block.split("text\n", 1)[0]
        assert set(fence) == {"`"} and len(fence) >= 3
        assert fence not in text and block.endswith("\n" + fence)
