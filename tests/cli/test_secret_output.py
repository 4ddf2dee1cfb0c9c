"""`freemad` when the winning answer holds a credential-looking string: a warning line, and the
string itself nowhere (output, `--json`, transcript, the dashboard's page of it). Real agents: a
small script speaking the agent contract, run as a process."""

from __future__ import annotations

import html
import json
from pathlib import Path

from freemad.dashboard.reading.sources import TranscriptDir
from freemad.dashboard.static_site import build_site
from tests.cli.helpers import script_agents
from tests.cli.test_cli import only_transcript, run

KEY = "AKIA" + "IOSFODNN7EXAMPLE"

AGENT = """\
import sys
prompt = sys.stdin.read()
key = "AKIA" + "IOSFODNN7EXAMPLE"
answer = sys.argv[1].replace("KEY", key)
if "DECISION:" in prompt:
    print("DECISION: KEEP\\n\\nREASONING:\\nmine stands, " + key[:10] + "\\n" + key[10:])
else:
    print("SOLUTION:\\n" + answer + "\\n\\nREASONING:\\nI used " + key)
"""


def setup(folder: Path, *, scan: bool = True) -> None:
    # alpha and beta answer alike but are two agents (beta's extra word): not one voice twice.
    arguments = {"alpha": "aws_key=KEY", "beta": "aws_key=KEY beta", "gamma": "use-a-role"}
    settings = (
        f"validation: {{secret_scan: {'true' if scan else 'false'}}}\ndebate: {{rounds: 1}}\n"
    )
    script_agents(folder, AGENT, arguments, settings)


def test_the_warning_is_printed_and_the_key_is_nowhere(tmp_path: Path) -> None:
    setup(tmp_path)
    done = run("configure the client", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("Warning: the winning answer holds what looks like a credential")
    assert "(aws_access_key_id)" in first
    assert "aws_key=[REDACTED aws_access_key_id]" in done.stdout
    assert KEY not in done.stdout + done.stderr and KEY[10:] not in done.stdout
    saved = only_transcript(tmp_path).read_text()
    data = json.loads(saved)
    assert data["flags"][0]["kind"] == "secret" and data["flags"][0]["kinds"] == [
        "aws_access_key_id"
    ]
    assert KEY not in saved and KEY[10:] not in saved
    build_site([TranscriptDir(tmp_path / "transcripts", lambda _: None)], tmp_path / "site")
    page = html.unescape((tmp_path / "site" / "runs" / f"{data['run_id']}.html").read_text())
    assert (
        '<p class="question secret-flag" role="alert"><strong>Warning:</strong> the winning answer holds'
        in page
    )
    assert KEY not in page


def test_json_output_carries_the_flag_and_warns_on_stderr(tmp_path: Path) -> None:
    setup(tmp_path)
    done = run("configure the client", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # stdout is one JSON document still
    assert [flag["kind"] for flag in data["flags"]] == ["secret"]
    assert done.stderr.startswith("Warning: the winning answer holds what looks like a credential")
    assert KEY not in done.stdout + done.stderr


def test_with_the_scan_off_nothing_is_flagged(tmp_path: Path) -> None:
    setup(tmp_path, scan=False)
    done = run("configure the client", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Warning:" not in done.stdout
    assert f"aws_key={KEY}" in done.stdout
    assert json.loads(only_transcript(tmp_path).read_text())["flags"] == []
