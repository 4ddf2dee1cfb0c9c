"""A debate the GitHub router runs (the Action's, the bot's) seen while it runs: the run is in the
store from its start, and a dashboard reading the store (`StoreSource`, the Flask app) shows the
rounds so far; a run whose process was killed shows as abandoned, one whose debate raised as
failed; nothing an agent says reaches the store unredacted. Real SQLite, real agent processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.reading.stored_runs import StoreSource
from freemad.debate.live_store import FINISHED, PROGRESS
from freemad.debate.outcome import Tally
from freemad.debate.transcript_format import expand
from freemad.store import SqliteStore, StoreReader
from tests.conftest import make_config, mock_agent, wait_for
from tests.github.payloads import labeled_issue
from tests.github.routers import bodies, router

ROOT = Path(__file__).resolve().parents[3]


def quiet(message: str) -> None:
    raise AssertionError(f"unexpected warning: {message}")


def slow_config(delay: str, **sections: Any) -> Any:
    agents = [
        mock_agent("quick", "--persona", "iterative"),
        mock_agent("slow", "--persona", "recursive", "--delay", delay),
    ]
    return make_config(agents, debate={"rounds": 1}, **sections)


def states(view: dict[str, Any]) -> dict[str, str]:
    """Each agent's state in the first round of a live view ({} for a finished debate's)."""
    rounds = view.get("rounds") or []
    agents = rounds[0].get("agents") if rounds else None
    return {a["agent"]: a["state"] for a in agents} if isinstance(agents, list) else {}


def test_a_router_debate_is_seen_running_with_a_finished_agent_before_it_ends(
    store: SqliteStore, tmp_path: Path
) -> None:
    routed, forge = router(slow_config("2"), store, tmp_path)
    client = create_app(
        DashboardSettings([StoreSource(store.path, quiet)], warn=quiet)
    ).test_client()
    seen: list[tuple[list[Any], dict[str, Any]]] = []  # (what /api/runs listed, /api/runs/<id>)
    ended = threading.Event()

    def watch() -> None:
        # The dashboard, polled while the debate runs (in the main thread, as a job runs it).
        while not ended.is_set():
            listed = client.get("/api/runs").get_json()["runs"]
            for entry in listed:
                body = client.get(f"/api/runs/{entry['run_id']}").get_json()
                if states(body["view"]) == {"quick": "ok", "slow": "working"} and not seen:
                    seen.append((listed, body))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        outcome = [routed.handle("issues", labeled_issue("freemad:debate"))]
    finally:
        ended.set()
        watcher.join()

    assert seen, "the dashboard never showed the quick agent done while the slow one worked"
    [(listed, body)] = seen
    [entry] = listed
    run_id = entry["run_id"]
    assert entry["status"] == "running"
    assert body["status"] == "running" and body["view"]["status"] == "running"
    assert body["view"]["live"] is True
    assert body["view"]["requirement"].startswith("Pick a cache eviction policy")
    [done] = outcome
    assert done.status == "completed" and done.run_id == run_id
    finished = client.get(f"/api/runs/{run_id}").get_json()
    assert finished["status"] == "completed" and "live" not in finished["view"]
    assert finished["view"]["winner"]
    kinds = [e.kind for e in store.events(run_id)]
    assert kinds[-1] == FINISHED and kinds.count(FINISHED) == 1
    assert {PROGRESS} == set(kinds[:-1])
    [run] = store.runs(kind="debate")
    assert "runner" not in run.summary  # who ran it is for live readers only
    assert len(bodies := list(forge.comments.values())) == 1 and "**Winner:**" in bodies[0][2]


CHILD = """
import sys
from pathlib import Path
from freemad.store import SqliteStore
from tests.github.behaviours.test_debate_live import slow_config
from tests.github.payloads import labeled_issue
from tests.github.routers import router

with SqliteStore(Path(sys.argv[1])) as store:
    routed, _ = router(slow_config(sys.argv[2]), store, Path(sys.argv[3]))
    routed.handle("issues", labeled_issue("freemad:debate"))
"""


def start_child(tmp_path: Path, store: Path, delay: str) -> subprocess.Popen[bytes]:
    """A process routing a debate into `store`, as the Action's job or a bot's worker does."""
    work = tmp_path / "child"
    work.mkdir()
    with (work / "stderr").open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-c", CHILD, str(store), delay, str(work)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


def running_debate(source: StoreSource) -> str:
    """The id of the debate in `source` once its quick agent has answered."""

    def answered() -> str | None:
        for run in source.runs():
            live = run.load().live
            if live and states(live) == {"quick": "ok", "slow": "working"}:
                return run.run_id
        return None

    found: str = wait_for(answered, "the debate to be under way", 60)
    return found


def test_a_debate_whose_process_is_killed_shows_as_abandoned(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    SqliteStore(path).close()
    source = StoreSource(path, quiet)
    child = start_child(tmp_path, path, "8")
    try:
        run_id = running_debate(source)
        [run] = source.runs()
        assert run.status == "running"
        since = run.updated
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

    [run] = source.runs()
    assert run.status == "abandoned"
    data = run.load()
    assert data.status == "abandoned" and data.live is not None
    assert states(data.live) == {"quick": "ok", "slow": "working"}  # as far as it got
    assert ("debate", run_id, "abandoned") in [
        (c.kind, c.run_id, c.event) for c in source.changes(since)
    ]
    client = create_app(DashboardSettings([source], warn=quiet)).test_client()
    body = client.get(f"/api/runs/{run_id}").get_json()
    assert body["status"] == "abandoned" and body["view"]["abandoned"] is True
    page = client.get(f"/runs/{run_id}.html")
    assert page.status_code == 200 and "abandoned" in page.get_data(as_text=True)


def test_a_debate_stopped_by_sigterm_ends_failed_not_running(tmp_path: Path) -> None:
    """SIGTERM (a cancelled Actions job, a stopped worker) unwinds the debate: the run says so."""
    path = tmp_path / "runs.db"
    SqliteStore(path).close()
    source = StoreSource(path, quiet)
    child = start_child(tmp_path, path, "8")
    try:
        run_id = running_debate(source)
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

    assert child.returncode != 0
    reader = StoreReader(path)
    row = reader.run(run_id)
    assert row is not None and row.status == "failed" and "runner" not in row.summary
    [run] = source.runs()
    assert run.status == "failed"
    transcript = run.load().transcript
    assert transcript is not None
    assert transcript["status"] == "failed" and "interrupted" in transcript["error"]


def test_a_debate_that_raises_ends_failed_with_its_error_redacted(
    store: SqliteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault past the agents' turns (which catch their own): the debate raises, the run is
    left failed with the error, redacted, never running."""

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the tally broke on sk-live-Tally0Secret")

    monkeypatch.setattr(Tally, "build", broken)
    config = make_config(
        [mock_agent("alpha")], security={"redact_patterns": [r"sk-live-[A-Za-z0-9]+"]}
    )
    routed, forge = router(config, store, tmp_path)
    with pytest.raises(RuntimeError, match="tally broke"):
        routed.handle("issues", labeled_issue("freemad:debate"))

    [said] = bodies(forge)  # the status comment says it, without the exception's text
    assert said == "FREE-MAD could not finish the debate: RuntimeError"
    [run] = store.runs(kind="debate")
    assert run.status == "failed" and "runner" not in run.summary
    [finished] = store.events(run.run_id, kinds=[FINISHED])
    transcript = finished.data["transcript"]
    assert transcript["status"] == "failed"
    assert transcript["error"] == "RuntimeError: the tally broke on [REDACTED]"
    assert store.events(run.run_id, kinds=[PROGRESS]), "what happened before it broke is kept"
    [shown] = StoreSource(store.path, quiet).runs()
    # Kept compact (format 2); the dashboard reads it back in the full shape.
    assert shown.status == "failed" and shown.load().transcript == expand(transcript)


def leaky_agent(folder: Path, secret: str) -> Path:
    """An agent that fails with the secret on stderr (an error's detail carries it) the first
    time, and answers with it after."""
    agent = folder / "leaky-agent"
    marker = folder / "leaked-once"
    agent.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        "sys.stdin.read()\n"
        f"if not os.path.exists({str(marker)!r}):\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        f"    print('cannot go on: {secret}', file=sys.stderr)\n"
        "    sys.exit(3)\n"
        f"print('SOLUTION:\\nuse {secret}\\n\\nREASONING:\\nit is the key')\n"
    )
    agent.chmod(0o755)
    return agent


def test_a_secret_an_agent_says_never_reaches_the_store(store: SqliteStore, tmp_path: Path) -> None:
    secret = "sk-live-Q7wq2Zp0Secret"
    agents = [
        {"id": "leaky", "cli_command": str(leaky_agent(tmp_path, secret)), "cli_mode_arg": True},
        mock_agent("alpha", "--persona", "iterative", "--solution", secret),
    ]
    config = make_config(
        agents,
        security={"redact_patterns": [r"sk-live-[A-Za-z0-9]+"]},
        debate={"rounds": 1},
        deadlines={"min_agents": 1},
    )
    routed, _ = router(config, store, tmp_path)
    payload = labeled_issue("freemad:debate")
    payload["issue"]["body"] = f"The key is {secret}; keep it safe."

    routed.handle("issues", payload)

    [run] = store.runs(kind="debate")
    progress = [e.data for e in store.events(run.run_id, kinds=[PROGRESS])]
    said = json.dumps(progress)
    assert "[REDACTED]" in said  # the requirement, and the failed call's detail
    assert any(
        line["kind"] == "agent_finished" and line["data"]["status"] != "ok" for line in progress
    ), "the leaky agent's failure was kept"
    raw = b"".join(
        Path(f"{store.path}{suffix}").read_bytes()
        for suffix in ("", "-wal")
        if os.path.exists(f"{store.path}{suffix}")
    )
    assert secret.encode() not in raw
