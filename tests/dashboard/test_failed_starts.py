"""A run started from the browser that fails says why on its own page, not only in the server's
log: real gunicorn on loopback, the real starter process, and headless Chromium on a live page.
The kept failures are attacked too: names that are not run ids, garbage in their files, and a
secret in the reason."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from freemad.core.run_events import Event
from freemad.dashboard.reading import failed_starts
from freemad.dashboard.reading.failed_starts import FailedStarts
from freemad.dashboard.reading.sources import TranscriptDir
from freemad.debate.live_journal import LiveJournal
from freemad.redact import Redactor
from tests.conftest import wait_for
from tests.dashboard.browser import LivePage, chromium
from tests.dashboard.served import allowed_to_start, serve, write_mock_config

TOKEN = "a-start-token-for-these-tests-0123456789"
SECRET = "hunter2-not-for-pages"


def debate_begins(journal: LiveJournal, run_id: str) -> None:
    """What a one-agent debate's process writes first: it starts, and its agent starts work."""
    for seq, (kind, data) in enumerate(
        [
            ("run_started", {"requirement": "Add two numbers.", "agents": ["a"]}),
            ("round_started", {"round": 0, "type": "generation", "agents": ["a"]}),
            ("agent_started", {"round": 0, "agent": "a"}),
        ]
    ):
        journal(Event(run_id, seq, time.time(), kind, data))


def test_a_debate_that_fails_to_start_says_why_on_its_page(tmp_path: Path) -> None:
    transcripts, config, args = allowed_to_start(tmp_path, 0, [SECRET])
    env = {"FREEMAD_DASHBOARD_TOKEN": TOKEN}
    with serve(tmp_path, *args, env=env) as served:
        # Edited while the server runs: the debate's own process reads it again and refuses it,
        # quoting the value, which is one of the config's secrets.
        write_mock_config(config, SECRET, [SECRET])
        status, body = served.post("/api/debates", TOKEN, {"requirement": "Add two numbers."})
        assert status == 202, body
        run_id = body["run_id"]

        def failed() -> bool:
            return b"kept nothing" in served.get(f"/api/runs/{run_id}")[1]

        wait_for(failed, "the failure on the run's API", 60)
        status, answer = served.get(f"/api/runs/{run_id}")
        error = json.loads(answer)["error"]
        assert status == 404
        assert error.startswith(f"run {run_id} failed and kept nothing: ")
        assert "debate.rounds" in error and "[REDACTED]" in error and SECRET not in error
        status, page = served.get(f"/runs/{run_id}.html")
        assert status == 404 and b"debate.rounds" in page and SECRET.encode() not in page
        # Another id is still just not there; the index lists no run for the failure.
        assert json.loads(served.get("/api/runs/" + "f" * 32)[1])["error"] == f"no run {'f' * 32}"
        assert json.loads(served.get("/api/runs")[1])["runs"] == []
    log = served.log.read_text()
    assert f"debate {run_id} failed: " in log and "debate.rounds" in log
    assert SECRET not in log
    assert list((transcripts / failed_starts.FOLDER).glob("*.json")) == [
        transcripts / failed_starts.FOLDER / f"{run_id}.json"
    ]


def test_an_open_page_of_a_debate_that_fails_says_it_stopped_and_why(tmp_path: Path) -> None:
    chromium()  # skips, saying why, where there is none
    transcripts, _, args = allowed_to_start(tmp_path, 1)
    env = {"FREEMAD_DASHBOARD_TOKEN": TOKEN}
    run_id = "0123456789abcdef0123456789abcdef"
    with serve(tmp_path, *args, env=env) as served:
        page = None
        # What a started debate's process writes while it runs, then what is left when it fails:
        # its journal gone with it, and the reason its watcher keeps.
        with LiveJournal(transcripts, Redactor([])) as journal:
            debate_begins(journal, run_id)
            try:
                page = LivePage(f"{served.url}/runs/{run_id}.html")
                page.wait_for(
                    "document.getElementById('live').textContent.startsWith('Live: connected')",
                    "the live page of the running debate",
                )
            except BaseException:
                if page is not None:
                    page.close()
                raise
        try:
            FailedStarts(transcripts).record(run_id, "debate", "the agents' sandbox went away")
            said = page.wait_for(
                "document.getElementById('live').textContent.startsWith('Stopped') &&"
                " document.getElementById('live').textContent",
                "the page to say the debate stopped",
                seconds=60,
            )
        finally:
            page.close()
    reason = "the agents' sandbox went away"
    assert said == f"Stopped: run {run_id} failed and kept nothing: {reason}"


def test_kept_failures_hold_only_run_ids_and_survive_garbage(tmp_path: Path) -> None:
    kept = FailedStarts(tmp_path)
    for hostile in ("../escape", "a/b", ".hidden", "", "x" * 200):
        kept.record(hostile, "debate", "nope")
        assert kept.reason(hostile) is None
    assert not (tmp_path / failed_starts.FOLDER).exists()
    assert not (tmp_path / "escape.json").exists()

    kept.record("good1", "debate", "line one\nline two\t  " + "z" * 1000)
    reason = kept.reason("good1")
    assert reason is not None and "\n" not in reason
    assert reason.startswith("line one line two z") and len(reason) == failed_starts.MAX_REASON
    folder = tmp_path / failed_starts.FOLDER
    assert folder.stat().st_mode & 0o777 == 0o700
    for name, text in (("bad1", "{not json"), ("bad2", "[1, 2]"), ("bad3", '{"reason": 7}')):
        (folder / f"{name}.json").write_text(text)
        assert kept.reason(name) is None
    (folder / "not-a-run.txt").write_text("x")
    # The transcripts folder's reader skips the hidden folder; its changes name each failure.
    assert TranscriptDir(tmp_path, lambda message: None).runs() == []
    changes = TranscriptDir(tmp_path, lambda message: None).changes(0)
    assert {c.run_id for c in changes} == {"good1", "bad1", "bad2", "bad3"}
    assert {c.event for c in changes} == {"debate_failed"}
    assert TranscriptDir(tmp_path, lambda message: None).changes(time.time() + 60) == []


def test_only_the_newest_failures_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failed_starts, "KEEP", 3)
    kept = FailedStarts(tmp_path)
    for number in range(5):
        kept.record(f"run{number}", "debate", f"failure {number}")
        path = tmp_path / failed_starts.FOLDER / f"run{number}.json"
        os.utime(path, ns=(number * 10**9, number * 10**9))  # in order, whatever the clock says
    kept.record("run5", "debate", "failure 5")
    names = sorted(p.name for p in (tmp_path / failed_starts.FOLDER).iterdir())
    assert names == ["run3.json", "run4.json", "run5.json"]
    assert kept.reason("run0") is None and kept.reason("run5") == "failure 5"


def test_a_failure_is_kept_without_what_looks_like_a_credential(tmp_path: Path) -> None:
    from freemad.dashboard.live.dashboard_settings import DashboardSettings
    from freemad.dashboard.live.server import create_app

    warnings: list[str] = []
    app = create_app(
        DashboardSettings(
            [TranscriptDir(tmp_path, warnings.append)],
            allow_start=True,
            start_token=TOKEN,
            warn=warnings.append,
        )
    )
    starter = app.extensions["freemad.dashboard"].starter
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    starter._failed("run1", "debate", f"the agent said: bad credentials {token}")
    reason = starter.failures.reason("run1")
    assert reason is not None and reason.startswith("the agent said: bad credentials [REDACTED")
    assert token not in reason and all(token not in w for w in warnings)
    assert any("debate run1 failed: the agent said" in w for w in warnings)


def test_a_linked_folder_is_not_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    (transcripts / failed_starts.FOLDER).symlink_to(elsewhere)
    with pytest.raises(OSError, match="symbolic link"):
        FailedStarts(transcripts).record("run1", "debate", "boom")
    assert list(elsewhere.iterdir()) == []
    big = tmp_path / "big" / failed_starts.FOLDER
    big.mkdir(parents=True)
    (big / "run2.json").write_text(json.dumps({"reason": "x" * 100_000}))
    assert FailedStarts(big.parent).reason("run2") is None  # past what is read: not ours


def test_an_abandoned_debate_shows_what_stopped_it(tmp_path: Path) -> None:
    """A started debate that ran out of time is killed: its journal stays, its page says it
    stopped without finishing, and, once the watcher kept why, why (escaped)."""
    from freemad.dashboard.live.dashboard_settings import DashboardSettings
    from freemad.dashboard.live.server import create_app
    from freemad.debate.live_journal import running_dir

    run_id = "feedfacefeedfacefeedfacefeedface"
    with LiveJournal(tmp_path, Redactor([])) as journal:
        debate_begins(journal, run_id)
        written = (running_dir(tmp_path) / f"{run_id}.jsonl").read_bytes()
    running_dir(tmp_path).mkdir(exist_ok=True)
    (running_dir(tmp_path) / f"{run_id}.jsonl").write_bytes(written)  # no heartbeat: gone
    client = create_app(
        DashboardSettings([TranscriptDir(tmp_path, lambda message: None)])
    ).test_client()

    before = client.get(f"/runs/{run_id}.html")
    assert before.status_code == 200
    assert (
        b"stopped without finishing" in before.data and b"data-stopped-because" not in before.data
    )

    why = "stopped after 3600 s <script>alert(1)</script>"
    FailedStarts(tmp_path).record(run_id, "debate", why)
    after = client.get(f"/runs/{run_id}.html")
    assert b"Why, as the dashboard that started it says: stopped after 3600 s" in after.data
    assert b"<script>alert(1)" not in after.data and b"&lt;script&gt;" in after.data
    view = client.get(f"/api/runs/{run_id}").get_json()
    assert view["status"] == "abandoned"
    assert view["view"]["stopped_because"] == why
