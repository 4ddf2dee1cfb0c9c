"""A debate in flight on the live dashboard: real gunicorn on loopback over a transcripts folder, a
real `freemad` debate with a slow agent writing into it, and headless Chromium on the run's page.
The page shows the quick agent finished while the slow one still works, before the debate ends,
the slow one's elapsed time ticking between events, and turns into the finished debate's page by
itself; `/api/runs/<id>` says "running" meanwhile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from freemad.core.run_events import Event
from freemad.dashboard.reading.sources import TranscriptDir
from freemad.dashboard.run_records import RunData
from freemad.dashboard.views.html_pages import render_run
from freemad.debate.live_journal import LiveJournal, running_dir
from freemad.redact import Redactor
from tests.conftest import MOCK_AGENT, SANDBOX, wait_for
from tests.dashboard.browser import LivePage, chromium
from tests.dashboard.served import serve


def write_config(folder: Path, transcripts: Path) -> Path:
    agents = [
        {"id": "quick", "cli_command": f"{MOCK_AGENT} --persona iterative", "cli_mode_arg": True},
        {
            "id": "slow",
            "cli_command": f"{MOCK_AGENT} --persona recursive --delay 6",
            "cli_mode_arg": True,
        },
    ]
    config = {
        "agents": agents,
        "security": {"cli_allowed_commands": [MOCK_AGENT], "sandbox": SANDBOX},
        "output": {"save_transcript": True, "transcript_dir": str(transcripts)},
        "debate": {"rounds": 1},
    }
    path = folder / "freemad.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def start_debate(tmp_path: Path, config: Path, **popen: Any) -> subprocess.Popen[bytes]:
    """`freemad "Add two numbers." --config CONFIG`, as a user starts it, in the background."""
    return subprocess.Popen(
        [sys.executable, "-m", "freemad", "Add two numbers.", "--config", str(config)],
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path)},
        **popen,
    )


def journal_of(transcripts: Path) -> str:
    """The run id of the one debate in flight in `transcripts`, once its journal is there."""
    folder = running_dir(transcripts)
    wait_for(lambda: folder.is_dir() and any(folder.glob("*.jsonl")), "the journal", 60)
    [journal] = folder.glob("*.jsonl")
    return journal.name.removesuffix(".jsonl")


# The slow agent's elapsed time on the open page, and whether the page's <main> is the one
# marked (a refresh on an event replaces it), while the agent still works.
SLOW_CLOCK = """(() => {
  const main = document.querySelector("main");
  const row = document.querySelectorAll("table.live-agents")[0]
    .querySelector('tr[data-agent="slow"][data-state="working"]');
  const cell = row && row.querySelector("[data-ticking]");
  return cell && main.dataset.clockTest === "marked" ? cell.textContent : null;
})()"""


def clock_readings(page: LivePage) -> tuple[float, float]:
    """Two readings of the slow agent's elapsed time 1.5 s apart with no event between them
    (the same <main>, never refreshed, and the agent working throughout); tried again if an
    event came between."""
    for _ in range(5):
        page.evaluate('document.querySelector("main").dataset.clockTest = "marked"')
        first = page.evaluate(SLOW_CLOCK)
        time.sleep(1.5)
        second = page.evaluate(SLOW_CLOCK)
        if first is not None and second is not None:
            return float(first), float(second)
    raise AssertionError("no two readings of the slow agent's clock without an event between")


def test_an_open_page_shows_each_agent_finishing_before_the_debate_ends(tmp_path: Path) -> None:
    chromium()  # skips, saying why, where there is none
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    config = write_config(tmp_path, transcripts)
    with serve(tmp_path, "--dir", str(transcripts)) as served:
        debate = start_debate(tmp_path, config, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        page = None
        try:
            run_id = journal_of(transcripts)

            status, body = served.get(f"/api/runs/{run_id}")
            assert status == 200
            assert json.loads(body)["status"] == "running"

            page = LivePage(f"{served.url}/runs/{run_id}.html")
            state = (
                "Array.from(document.querySelectorAll('table.live-agents')[0]"
                ".querySelectorAll('tr[data-agent]')).map(r => r.dataset.agent + ':' +"
                " r.dataset.state).join(',')"
            )
            seen = page.wait_for(
                f"({state}).includes('quick:ok') && ({state}).includes('slow:working') && {state}",
                "the quick agent finished while the slow one still works",
                seconds=60,
            )
            assert debate.poll() is None, "the debate was still running when the page showed it"
            assert "quick:ok" in seen and "slow:working" in seen
            # Between events the slow agent's elapsed time ticks on the open page by itself.
            first, second = clock_readings(page)
            assert second > first, (first, second)

            _, err = debate.communicate(timeout=120)
            assert debate.returncode == 0, err
            # The finished debate's page replaces the live one on the open page.
            page.wait_for(
                "document.querySelector('.badge') &&"
                " document.querySelector('.badge').textContent === 'completed'",
                "the page to show the finished debate",
                seconds=60,
            )
            assert not running_dir(transcripts).exists()
            status, body = served.get(f"/api/runs/{run_id}")
            assert json.loads(body)["status"] == "completed"
        finally:
            if page is not None:
                page.close()
            if debate.poll() is None:
                debate.kill()
                debate.wait()


def test_a_debate_killed_mid_way_is_shown_as_stopped_not_running(tmp_path: Path) -> None:
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    config = write_config(tmp_path, transcripts)
    with serve(tmp_path, "--dir", str(transcripts)) as served:
        debate = start_debate(
            tmp_path,
            config,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # kill -9 of its whole group, agents included
        )
        try:
            run_id = journal_of(transcripts)
        finally:
            os.killpg(debate.pid, 9)  # kill -9: no transcript, the journal stays behind
            debate.wait()
        deadline = time.monotonic() + 30
        status = ""
        while time.monotonic() < deadline and status != "abandoned":
            _, body = served.get(f"/api/runs/{run_id}")
            status = json.loads(body)["status"]
            time.sleep(0.2)
        assert status == "abandoned"
        _, page = served.get(f"/runs/{run_id}.html")
        assert b"stopped without finishing" in page
        _, index = served.get("/api/runs")
        [entry] = [r for r in json.loads(index)["runs"] if r["run_id"] == run_id]
        assert entry["status"] == "abandoned"


def test_a_debate_in_flight_is_listed_and_its_page_escapes_what_agents_and_users_wrote(
    tmp_path: Path,
) -> None:
    hostile = '<script>alert("x")</script>'
    run_id = "feedfacefeedface"
    with LiveJournal(tmp_path, Redactor([])) as journal:
        for seq, (kind, data) in enumerate(
            [
                ("run_started", {"requirement": hostile, "agents": ["a<b>", "c"], "rounds": 1}),
                ("round_started", {"round": 0, "type": "generation", "agents": ["a<b>", "c"]}),
                ("agent_started", {"round": 0, "agent": "a<b>"}),
                (
                    "agent_finished",
                    {
                        "round": 0,
                        "agent": "a<b>",
                        "status": "failed",
                        "duration_ms": 1200,
                        "cause": hostile,
                    },
                ),
            ]
        ):
            journal(Event(run_id, seq, time.time(), kind, data))
        [run] = TranscriptDir(tmp_path, lambda message: None).runs()
        assert (run.kind, run.run_id, run.status, run.title) == (
            "debate",
            run_id,
            "running",
            hostile,
        )
        page = render_run(run.load(), live=True)
    assert hostile not in page and "&lt;script&gt;" in page
    assert 'data-agent="a&lt;b&gt;" data-state="failed"' in page
    assert 'data-agent="c" data-state="waiting"' in page
    assert "Round 0 (generation): in progress" in page


def test_only_what_still_runs_carries_a_clock() -> None:
    """The cells live.js ticks (`data-ticking`, the elapsed seconds as rendered): a working
    agent's and the debate's while it runs; none once the debate is abandoned."""
    agents = [
        {"agent": "busy", "state": "working", "elapsed_sec": 2.5},
        {"agent": "done", "state": "ok", "elapsed_sec": 1.2, "action": "generate"},
        {"agent": "idle", "state": "waiting", "elapsed_sec": None},
    ]
    live = {
        "run_id": "feedfacefeedface",
        "status": "running",
        "requirement": "Add two numbers.",
        "agents": ["busy", "done", "idle"],
        "rounds_planned": 1,
        "elapsed_sec": 7.5,
        "rounds": [{"round": 0, "type": "generation", "agents": agents}],
    }
    page = render_run(RunData("debate", "feedfacefeedface", status="running", live=live), live=True)
    assert page.count('data-ticking="') == 2
    assert 'running for <span data-ticking="7.5">7.5</span> s' in page
    assert '<td class="num" data-ticking="2.5">2.5</td>' in page
    gone = {**live, "status": "abandoned"}
    page = render_run(
        RunData("debate", "feedfacefeedface", status="abandoned", live=gone), live=True
    )
    assert 'data-ticking="' not in page and "ran 7.5 s" in page
