"""`freemad-dashboard` as a user runs it: real gunicorn (two workers) on loopback over a task
store. Two browsers' event streams see the same changes while the task is driven on through the
real CLI, and a third, reconnecting with Last-Event-ID, is sent everything after that id."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from freemad.dashboard.reading.sources import StoreSource
from tests.conftest import free_port, wait_for
from tests.dashboard.browser import LivePage
from tests.dashboard.served import DASHBOARD, Browser, serve
from tests.dashboard.test_server import SMOKE, freemad, start_task


@pytest.fixture
def smoke(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    return repo, start_task(repo, "Watch this <task> live.")


@pytest.fixture
def server(tmp_path: Path, smoke: tuple[Path, str]) -> Iterator[int]:
    repo, _ = smoke
    store = repo / ".freemad" / "ui-smoke" / "tasks.db"
    with serve(tmp_path, "--task-store", str(store), "--workers", "2") as served:
        yield served.port
    first_line = served.log.read_text().splitlines()[0]
    assert first_line == f"FREE-MAD dashboard on http://127.0.0.1:{served.port}/ (read-only)"


def task_ids(store: Path, task_id: str, after_seq: int) -> list[str]:
    changes = StoreSource(store, lambda message: None).changes(0)
    return sorted(c.id for c in changes if c.run_id == task_id and c.seq > after_seq)


def test_two_streams_see_the_same_changes_and_a_third_resumes(
    server: int, smoke: tuple[Path, str]
) -> None:
    repo, task_id = smoke
    store = repo / ".freemad" / "ui-smoke" / "tasks.db"
    with urllib.request.urlopen(f"http://127.0.0.1:{server}/api/tasks", timeout=10) as answer:
        (task,) = json.loads(answer.read())["runs"]
    assert task["run_id"] == task_id and task["summary"]["status"] == "waiting_for_human"
    before = max(c.seq for c in StoreSource(store, print).changes(0) if c.run_id == task_id)

    browsers = [Browser(server), Browser(server)]
    for browser in browsers:
        browser.start()
    try:
        for browser in browsers:
            assert browser.connected.wait(timeout=30), browser.error
            assert browser.headers["content-type"].startswith("text/event-stream")
        assert browsers[0].ids == browsers[1].ids == []  # nothing from before they came

        freemad("task", "answer", task_id, "Use SQLite.", "--config", str(SMOKE), cwd=repo)
        done = json.loads(
            freemad("task", "resume", task_id, "--config", str(SMOKE), "--json", cwd=repo)
        )
        assert done["status"] == "completed"
        expected = task_ids(store, task_id, before)
        assert len(expected) >= 3

        wait_for(lambda: all(len(b.ids) >= len(expected) for b in browsers), "both streams", 60)
    finally:
        for browser in browsers:
            browser.close()
    assert browsers[0].error is None and browsers[1].error is None
    assert browsers[0].ids == browsers[1].ids == expected
    assert [d["run_id"] for d in browsers[0].data] == [task_id] * len(expected)
    assert browsers[0].data[0]["event"] == "human_answer"
    assert browsers[0].data[-1]["event"] == "completed"

    # A browser that lost its connection comes back with the first id it had.
    third = Browser(server, last_event_id=expected[0])
    third.start()
    try:
        wait_for(lambda: set(expected[1:]) <= set(third.ids), "the resumed stream", 60)
    finally:
        third.close()
    assert third.error is None
    assert expected[0] not in third.ids
    assert len(third.ids) == len(set(third.ids))
    assert third.ids == sorted(third.ids)  # sent in one go, in order


def test_the_page_and_api_over_gunicorn(server: int, smoke: tuple[Path, str]) -> None:
    _, task_id = smoke
    base = f"http://127.0.0.1:{server}"
    with urllib.request.urlopen(f"{base}/runs/{task_id}.html", timeout=10) as answer:
        page = answer.read().decode()
    assert "Watch this &lt;task&gt; live." in page
    request = urllib.request.Request(f"{base}/api/runs", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 405
    assert "read-only" in json.loads(refused.value.read())["error"]
    refused.value.close()


# --- the command's own errors: one line, no gunicorn --------------------------------------------


def dashboard(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*DASHBOARD, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("freemad-dashboard: error: ")
    assert "Traceback" not in done.stderr and done.stdout == ""
    return lines[0]


def test_without_a_source_it_says_so(tmp_path: Path) -> None:
    """Nothing named, and the config found from here (the built-in) has no runs yet."""
    done = dashboard("--port", str(free_port()), cwd=tmp_path)
    assert done.returncode == 2
    assert "at least one source" in one_line_error(done)
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_not_a_store_is_one_line(tmp_path: Path) -> None:
    not_a_store = tmp_path / "x.db"
    not_a_store.write_text("not sqlite")
    done = dashboard("--task-store", str(not_a_store))
    assert done.returncode == 2
    assert "is not a FREE-MAD store" in one_line_error(done)


def test_allow_start_needs_a_token_from_the_environment(tmp_path: Path) -> None:
    done = dashboard("--dir", str(tmp_path), "--allow-start", env={"MY_TOKEN": ""})
    assert done.returncode == 2
    assert "FREEMAD_DASHBOARD_TOKEN" in one_line_error(done)
    done = dashboard(
        "--dir", str(tmp_path), "--allow-start", "--token-env", "MY_TOKEN", env={"MY_TOKEN": ""}
    )
    assert done.returncode == 2 and "MY_TOKEN" in one_line_error(done)
    bad_config = tmp_path / "bad.yaml"
    bad_config.write_text("agents: 3\n")
    done = dashboard(
        "--dir",
        str(tmp_path),
        "--allow-start",
        "--config",
        str(bad_config),
        env={"FREEMAD_DASHBOARD_TOKEN": "t"},
    )
    assert done.returncode == 2 and "bad.yaml" in one_line_error(done)


def test_a_taken_port_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = dashboard("--dir", str(tmp_path), "--port", str(port))
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in one_line_error(done)


def test_help_names_every_option() -> None:
    done = dashboard("--help")
    assert done.returncode == 0
    for option in (
        "--dir",
        "--task-store",
        "--evolve-store",
        "--state-dir",
        "--commit-url",
        "--host",
        "--port",
        "--workers",
        "--max-streams",
        "--max-streams-per-client",
        "--trusted-proxies",
        "--allow-start",
        "--token-env",
    ):
        assert option in done.stdout


def test_an_open_page_updates_itself_when_its_run_moves_on(
    server: int, smoke: tuple[Path, str]
) -> None:
    """In headless Chromium: the page's own script (allowed by its CSP hash) opens the event
    stream, and when the task is answered and finishes, it fetches the page again and swaps it in."""
    repo, task_id = smoke
    page = LivePage(f"http://127.0.0.1:{server}/runs/{task_id}.html")
    try:
        live = "document.getElementById('live') && document.getElementById('live').textContent"
        assert page.wait_for(f"{live} === 'Live: connected'", "the page's event stream")
        badge = "document.querySelector('.badge').textContent"
        assert page.evaluate(badge) == "waiting_for_human"
        freemad("task", "answer", task_id, "Use SQLite.", "--config", str(SMOKE), cwd=repo)
        done = json.loads(
            freemad("task", "resume", task_id, "--config", str(SMOKE), "--json", cwd=repo)
        )
        assert done["status"] == "completed"
        page.wait_for(f"{badge} === 'completed'", "the page to show the task completed")
        assert str(page.evaluate(live)).startswith("Live: updated")
        assert "Waiting for an answer" not in page.evaluate("document.body.textContent")
    finally:
        page.close()
