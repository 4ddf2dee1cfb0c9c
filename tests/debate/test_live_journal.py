"""A debate in flight on disk (`freemad/debate/live_journal.py`): the journal a real debate writes while
it runs, gone once it ends; read back as rounds and agents; a dead writer told from a live one;
hostile or garbled lines skipped; secrets redacted as in a transcript."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from freemad.core.run_events import Event
from freemad.debate import run_debate
from freemad.debate.live_journal import STALE_AFTER, LiveJournal, read_journal, running_dir
from freemad.redact import Redactor
from freemad.wiring import ADAPTERS
from tests.conftest import make_config, mock_agent

RUN = "0123456789abcdef"


def journal_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_debate_s_journal_shows_each_agent_finishing_while_it_runs_and_goes_at_the_end(
    tmp_path: Path,
) -> None:
    config = make_config(
        [
            mock_agent("quick", "--persona", "iterative"),
            mock_agent("slow", "--persona", "recursive", "--delay", "1.5"),
        ]
    )
    seen: list[list[dict[str, object]]] = []
    journal = LiveJournal(tmp_path, Redactor([]), heartbeat=0.1)
    folder = running_dir(tmp_path)

    def watch(done: threading.Event) -> None:
        while not done.is_set():
            for path in folder.glob("*.jsonl") if folder.is_dir() else []:
                debate = read_journal(path)
                if debate is not None:
                    seen.append(debate.view(time.time())["rounds"])
            time.sleep(0.05)

    done = threading.Event()
    watcher = threading.Thread(target=watch, args=(done,))
    watcher.start()
    try:
        with journal:
            result = run_debate(
                "Add two numbers.", config, rounds=1, on_event=journal, adapters=ADAPTERS
            )
            assert journal.path is not None and journal.path.exists()
    finally:
        done.set()
        watcher.join()

    assert result.status == "completed"
    assert not folder.exists()  # journal, heartbeat and their folder removed
    states = [{a["agent"]: a["state"] for a in rounds[0]["agents"]} for rounds in seen if rounds]
    # Seen from outside while the debate ran: the quick agent done, the slow one still working.
    assert {"quick": "ok", "slow": "working"} in states
    finished = [rounds for rounds in seen if len(rounds) == 2 and rounds[0]["scores"]]
    assert finished, "round 0 was seen scored while the debate went on"
    first = {a["agent"]: a for a in finished[-1][0]["agents"]}
    assert first["quick"]["action"] == "initial"
    assert first["quick"]["answer_id"] == result.transcript[0].agents["quick"].answer_id


def test_the_journal_is_redacted_like_a_transcript(tmp_path: Path) -> None:
    journal = LiveJournal(tmp_path, Redactor([r"sk-[a-z0-9]+"]))
    with journal:
        journal(Event(RUN, 0, 1.0, "run_started", {"requirement": "use sk-abc123", "agents": []}))
        assert journal.path is not None
        text = journal.path.read_text()
    assert "sk-abc123" not in text and "run_started" in text


def test_a_journal_whose_process_is_gone_is_abandoned_not_running(tmp_path: Path) -> None:
    journal = LiveJournal(tmp_path, Redactor([]), heartbeat=60)
    started = time.time() - 100  # its last event long ago: its heartbeat is what dates its end
    journal(Event(RUN, 0, started, "run_started", {"requirement": "r", "agents": ["a"]}))
    assert journal.path is not None and journal.alive is not None
    debate = read_journal(journal.path)
    assert debate is not None and debate.status == "running"

    # The same files as a process that has since died would leave them.
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    who = json.loads(journal.alive.read_text())
    journal.alive.write_text(json.dumps({**who, "pid": child.pid}))
    debate = read_journal(journal.path)
    assert debate is not None and debate.status == "abandoned"

    # On another host: its heartbeat going stale is what tells.
    journal.alive.write_text(json.dumps({**who, "host": "elsewhere"}))
    assert read_journal(journal.path).status == "running"  # type: ignore[union-attr]
    old = time.time() - STALE_AFTER - 5
    os.utime(journal.alive, (old, old))
    gone = read_journal(journal.path)
    assert gone is not None and gone.status == "abandoned"
    assert gone.updated is not None and abs(gone.updated - (old + STALE_AFTER)) < 1
    journal.close()
    assert not journal.path.exists() and not journal.alive.exists()


def test_garbled_and_hostile_lines_are_skipped(tmp_path: Path) -> None:
    folder = running_dir(tmp_path)
    folder.mkdir(parents=True)
    path = folder / f"{RUN}.jsonl"
    lines = [
        "not json",
        json.dumps([1, 2]),
        json.dumps(
            {"kind": "run_started", "time": 1.0, "data": {"requirement": "r", "agents": ["a", 7]}}
        ),
        json.dumps({"kind": "agent_started", "time": 2.0, "data": {"agent": "a"}}),  # no round yet
        json.dumps({"kind": "round_started", "time": 2.0, "data": {"round": "zero"}}),
        json.dumps(
            {
                "kind": "round_started",
                "time": 3.0,
                "data": {"round": 0, "type": "generation", "agents": ["a"]},
            }
        ),
        json.dumps(
            {
                "kind": "agent_finished",
                "time": 4.0,
                "data": {"agent": "a", "status": "ok", "duration_ms": "9"},
            }
        ),
        json.dumps(
            {
                "kind": "round_finished",
                "time": 5.0,
                "data": {"scores": {"x": "NaN", "y": 1}, "turns": [1]},
            }
        ),
        "\x00\xff",
    ]
    path.write_text("\n".join(lines))
    debate = read_journal(path)
    assert debate is not None
    assert debate.agents == ["a"]
    [only] = debate.rounds
    assert only.agents["a"].state == "ok" and only.agents["a"].duration_ms is None
    assert only.scores == {"y": 1.0}
    assert debate.status == "abandoned"  # no heartbeat file at all


def test_a_file_that_is_no_journal_is_none(tmp_path: Path) -> None:
    path = tmp_path / f"{RUN}.jsonl"
    path.write_text(json.dumps({"kind": "agent_started", "data": {}}))
    assert read_journal(path) is None
    assert read_journal(tmp_path / "missing.jsonl") is None


def test_a_journal_that_cannot_be_written_never_stops_the_debate(tmp_path: Path) -> None:
    (tmp_path / ".running").write_text("a file where the folder should be")
    journal = LiveJournal(tmp_path, Redactor([]))
    journal(Event(RUN, 0, 1.0, "run_started", {"requirement": "r"}))
    journal(Event(RUN, 1, 2.0, "round_started", {"round": 0}))
    assert journal.broken is not None
    journal.close()


def test_a_debate_s_clock_runs_while_it_runs_and_stops_when_it_is_abandoned() -> None:
    from freemad.debate.live_journal import fold

    lines = [
        {"kind": "run_started", "time": 1000.0, "data": {"requirement": "r", "agents": ["a"]}},
        {"kind": "round_started", "time": 1001.0, "data": {"round": 0, "agents": ["a"]}},
    ]
    debate = fold(RUN, lines)
    assert debate.view(1010.0)["elapsed_sec"] == 10.0
    assert debate.view(1012.5)["elapsed_sec"] == 12.5
    debate.status = "abandoned"  # its last sign of life was its last event, at 1001
    assert debate.view(5000.0)["elapsed_sec"] == 1.0
    assert fold(RUN, []).view(1010.0)["elapsed_sec"] is None  # no run_started, no clock


def test_the_finalizer_is_shown_working_then_done_while_the_debate_runs() -> None:
    """The events a real debate with a finalizer emits, folded as the journal's reader folds
    them: up to `finalizer_started` the page says who writes the final answer, after
    `finalizer_finished` how it ended."""
    from freemad.dashboard.run_records import RunData
    from freemad.dashboard.views.debate_views import live_debate_view
    from freemad.dashboard.views.html_pages import render_run
    from freemad.debate.live_journal import fold, journal_line
    from tests.conftest import ScriptedAgent, generation, keep, scripted_config

    ports = {
        "a1": ScriptedAgent("a1").script(generation("A"), keep()),
        "a2": ScriptedAgent("a2").script(generation("B"), keep(), generation("A, finalized")),
    }
    events: list[Event] = []
    config = scripted_config(ports, debate={"finalizer": "a2"})
    result = run_debate("q", config, rounds=1, agents=ports, on_event=events.append)
    assert result.finalized is not None and result.finalized.status == "ok"
    lines = [journal_line(e, Redactor([])) for e in events]
    kinds = [str(line["kind"]) for line in lines]
    started = kinds.index("finalizer_started")

    def page(upto: int) -> tuple[dict[str, object] | None, str]:
        debate = fold(result.run_id, lines[:upto])
        view = debate.view(now=float(lines[upto - 1]["time"]) + 2.0)
        html = render_run(RunData("debate", result.run_id, live=view), live=True)
        return live_debate_view(view)["finalizer"], html

    before, html = page(started)
    assert before is None and "data-finalizer" not in html
    working, html = page(started + 1)
    assert working is not None and (working["agent"], working["state"]) == ("a2", "working")
    assert 'data-finalizer="working"' in html and "is writing the final answer" in html
    done, html = page(kinds.index("finalizer_finished") + 1)
    assert done is not None and done["state"] == "ok"
    assert 'data-finalizer="ok"' in html and "is writing" not in html
