"""The live dashboard's Flask app over real runs: a debate of the bundled mock agents and a task
of the autonomous smoke config waiting for a person. Pages, the JSON API, health, the write
guard, starting a debate, and the event stream (resume, live, no duplicates)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from freemad.config import default_config
from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.event_feed import SLACK
from freemad.dashboard.live.event_feed import stream as events_stream
from freemad.dashboard.live.server import create_app
from freemad.dashboard.reading.sources import StoreSource, TranscriptDir, build_sources
from freemad.dashboard.steering.starter import CSRF_COOKIE
from freemad.debate import run_debate, write_transcript
from freemad.errors import FreemadError
from freemad.redact import Redactor
from freemad.wiring import ADAPTERS

ROOT = Path(__file__).resolve().parents[2]
# The shipped copy of configs/autonomous_smoke.yaml; its store lives in the current folder.
SMOKE = "builtin:autonomous_smoke"
REQUIREMENT = 'Write <script>alert("fib")</script> & a Fibonacci function.'
GOAL = "Plan the <b>storage</b> layer & its API."
QUESTION = "Which storage backend should we use first? (SQLite, Postgres)"
TOKEN = "start-token-for-tests"


@dataclass(frozen=True)
class Made:
    transcripts: Path
    repo: Path
    store: Path
    debate_id: str
    task_id: str


def quiet_warn(message: str) -> None:
    raise AssertionError(f"unexpected warning: {message}")


def git_env(home: Path) -> dict[str, str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(home / "gitconfig"), "GIT_CONFIG_NOSYSTEM": "1"}
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        env.pop(name, None)
    return env


def freemad(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "freemad", *args],
        cwd=cwd,
        env=git_env(cwd.parent),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def start_task(repo: Path, goal: str = GOAL) -> str:
    """A task of the smoke config in a fresh git repository; it stops waiting for a person."""
    repo.mkdir(parents=True)
    (repo.parent / "gitconfig").write_text("")
    (repo / "README.md").write_text("a repository\n")
    env = git_env(repo.parent)
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    started = json.loads(
        freemad(
            "task",
            "start",
            "--config",
            SMOKE,
            "--task-type",
            "plan",
            "--json",
            "--workspace-root",
            str(repo),
            goal,
            cwd=repo,
        )
    )
    assert started["status"] == "waiting_for_human"
    return str(started["task_id"])


def debate_into(folder: Path, requirement: str = REQUIREMENT) -> str:
    config = default_config()
    output = config.output.model_copy(update={"transcript_dir": str(folder)})
    config = config.model_copy(update={"output": output})
    result = run_debate(requirement, config, rounds=1, adapters=ADAPTERS)
    assert result.status == "completed", result.error
    write_transcript(result, config.output, Redactor(config.security.redact_patterns))
    return result.run_id


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    base = tmp_path_factory.mktemp("served")
    transcripts = base / "transcripts"
    debate_id = debate_into(transcripts)
    repo = base / "repo"
    task_id = start_task(repo)
    store = repo / ".freemad" / "ui-smoke" / "tasks.db"
    return Made(transcripts, repo, store, debate_id, task_id)


@pytest.fixture
def client(made: Made) -> FlaskClient:
    sources = [TranscriptDir(made.transcripts, quiet_warn), StoreSource(made.store, quiet_warn)]
    app = create_app(DashboardSettings(sources, poll_interval=0.02, heartbeat=0.2, warn=quiet_warn))
    return app.test_client()


# --- pages ------------------------------------------------------------------------------------


def test_the_index_lists_both_runs_escaped_and_live(client: FlaskClient, made: Made) -> None:
    for path in ("/", "/index.html"):
        page = client.get(path)
        assert page.status_code == 200 and page.mimetype == "text/html"
        html = page.get_data(as_text=True)
        assert f'href="runs/{made.debate_id}.html"' in html
        assert f'href="runs/{made.task_id}.html"' in html
        assert "Plan the &lt;b&gt;storage&lt;/b&gt; layer &amp; its API." in html
        assert "<b>storage</b>" not in html
        assert 'data-events="events"' in html
        # Each run's outcome, duration and agents, the task's read from its store.
        assert re.search(
            r"<td>winner [0-9a-f]{16}</td><td class=\"num nowrap\">[\d.]+ m?s</td>", html
        )
        assert "<td>at stage plan_review</td>" in html and "<td>planner, reviewer" in html
        assert page.headers["X-Content-Type-Options"] == "nosniff"
        assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]


def test_run_pages_show_the_requirement_escaped(client: FlaskClient, made: Made) -> None:
    debate = client.get(f"/runs/{made.debate_id}.html")
    assert debate.status_code == 200
    html = debate.get_data(as_text=True)
    assert "&lt;script&gt;alert(" in html and "<script>alert(" not in html
    assert 'data-events="../events"' in html
    task = client.get(f"/runs/{made.task_id}.html").get_data(as_text=True)
    assert "Plan the &lt;b&gt;storage&lt;/b&gt;" in task
    assert QUESTION in task
    # The second time comes from the page cache: the same bytes.
    assert client.get(f"/runs/{made.debate_id}.html").get_data(as_text=True) == html


def test_an_unknown_run_is_a_small_escaped_404(client: FlaskClient) -> None:
    for path in ("/runs/nope.html", "/runs/%3Cscript%3Ealert(1).html"):
        page = client.get(path)
        assert page.status_code == 404 and page.mimetype == "text/html"
        html = page.get_data(as_text=True)
        assert "<script>" not in html and "Traceback" not in html
    assert "&lt;script&gt;" in html
    assert client.get("/no/such/page").status_code == 404


# --- the API ----------------------------------------------------------------------------------


def test_api_runs_lists_and_filters(client: FlaskClient, made: Made) -> None:
    runs = client.get("/api/runs").get_json()["runs"]
    assert {(r["kind"], r["run_id"]) for r in runs} == {
        ("debate", made.debate_id),
        ("task", made.task_id),
    }
    debate = next(r for r in runs if r["kind"] == "debate")
    assert debate["title"] == REQUIREMENT and debate["status"] == "completed"
    assert set(debate) == {"kind", "run_id", "status", "title", "started", "updated"}
    only_tasks = client.get("/api/runs?kind=task").get_json()["runs"]
    assert [r["run_id"] for r in only_tasks] == [made.task_id]
    completed = client.get("/api/runs?status=completed").get_json()["runs"]
    assert [r["run_id"] for r in completed] == [made.debate_id]
    assert client.get("/api/runs?kind=evolve").get_json() == {"runs": []}


def test_api_runs_pages_on_request_and_refuses_bad_pages(client: FlaskClient, made: Made) -> None:
    every = client.get("/api/runs").get_json()["runs"]
    assert len(every) == 2
    first = client.get("/api/runs?limit=1").get_json()
    assert first == {"runs": every[:1], "page": 1, "limit": 1, "total": 2, "pages": 2}
    second = client.get("/api/runs?limit=1&page=2").get_json()
    assert second["runs"] == every[1:] and second["page"] == 2
    assert client.get("/api/runs?limit=1&page=3").get_json()["runs"] == []  # past the end
    paged = client.get("/api/runs?page=1").get_json()  # a page alone: the default size
    assert paged["runs"] == every and paged["limit"] == 50 and paged["pages"] == 1
    tasks = client.get("/api/runs?kind=task&limit=5").get_json()
    assert [r["run_id"] for r in tasks["runs"]] == [made.task_id] and tasks["total"] == 1
    for bad in ("limit=0", "limit=1001", "page=0", "page=-1", "limit=abc", "page=1.5", "limit=٣"):
        answer = client.get(f"/api/runs?{bad}")
        assert answer.status_code == 400, bad
        assert "must be a whole number" in answer.get_json()["error"], bad


def test_api_run_gives_the_entry_and_its_view(client: FlaskClient, made: Made) -> None:
    debate = client.get(f"/api/runs/{made.debate_id}")
    assert debate.status_code == 200 and debate.mimetype == "application/json"
    body = debate.get_json()
    assert body["run_id"] == made.debate_id and body["kind"] == "debate"
    assert body["view"]["requirement"] == REQUIREMENT
    assert body["view"]["status"] == "completed" and body["view"]["winner"]
    assert "chart" not in body["view"]
    task = client.get(f"/api/runs/{made.task_id}").get_json()
    assert task["view"]["question"] == QUESTION
    assert task["view"]["current_stage"] == "plan_review"
    missing = client.get("/api/runs/nope")
    assert missing.status_code == 404 and missing.get_json() == {"error": "no run nope"}


def test_api_tasks_shows_the_waiting_question_and_evolve_is_empty(
    client: FlaskClient, made: Made
) -> None:
    tasks = client.get("/api/tasks").get_json()["runs"]
    assert [t["run_id"] for t in tasks] == [made.task_id]
    assert tasks[0]["summary"] == {
        "status": "waiting_for_human",
        "current_stage": "plan_review",
        "question": QUESTION,
    }
    assert tasks[0]["title"] == GOAL
    assert client.get("/api/evolve").get_json() == {"runs": []}


def test_health_counts_runs_and_sources(client: FlaskClient) -> None:
    health = client.get("/health")
    assert health.status_code == 200
    assert health.get_json() == {"ok": True, "runs": 2, "sources": 2}


def test_health_is_503_with_one_line_when_a_source_is_gone(tmp_path: Path, made: Made) -> None:
    folder = tmp_path / "transcripts"
    shutil.copytree(made.transcripts, folder)
    app = create_app(DashboardSettings([TranscriptDir(folder, quiet_warn)], warn=quiet_warn))
    client = app.test_client()
    assert client.get("/health").get_json() == {"ok": True, "runs": 1, "sources": 1}
    shutil.rmtree(folder)
    health = client.get("/health")
    assert health.status_code == 503
    body = health.get_json()
    assert body["ok"] is False and str(folder) in body["error"] and "\n" not in body["error"]
    index = client.get("/")
    assert index.status_code == 503 and "Traceback" not in index.get_data(as_text=True)


def test_every_write_is_refused_when_read_only(client: FlaskClient) -> None:
    for path in ("/", "/index.html", "/api/runs", "/api/debates", "/api/csrf", "/events"):
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            answer = client.open(path, method=method, json={"requirement": "x"})
            assert answer.status_code == 405, (method, path)
            assert "GET" in answer.headers["Allow"]
    assert client.get("/api/csrf").status_code == 404  # not even a cookie without --allow-start


# --- starting debates -------------------------------------------------------------------------


def test_starting_needs_a_token(made: Made) -> None:
    sources = [TranscriptDir(made.transcripts, quiet_warn)]
    for token in ("", None):
        with pytest.raises(FreemadError, match="token"):
            create_app(DashboardSettings(sources, allow_start=True, start_token=token))
    store_only = [StoreSource(made.store, quiet_warn)]
    with pytest.raises(FreemadError, match="transcripts folder"):
        create_app(DashboardSettings(store_only, allow_start=True, start_token=TOKEN))


def test_a_debate_started_over_http_writes_its_transcript(tmp_path: Path) -> None:
    folder = tmp_path / "transcripts"
    folder.mkdir()
    warnings: list[str] = []
    app = create_app(
        DashboardSettings(
            [TranscriptDir(folder, warnings.append)],
            allow_start=True,
            start_token=TOKEN,
            warn=warnings.append,
        )
    )
    client = app.test_client()
    good = {"Authorization": f"Bearer {TOKEN}"}

    def post(body: Any, headers: dict[str, str]) -> TestResponse:
        return client.post("/api/debates", json=body, headers=headers)

    assert post({"requirement": "x"}, {}).status_code == 401
    assert post({"requirement": "x"}, {"Authorization": "Bearer wrong"}).status_code == 401
    assert post({"requirement": "x"}, {"Authorization": TOKEN}).status_code == 401
    # A good token, but no CSRF cookie yet.
    assert post({"requirement": "x"}, {**good, "X-CSRF-Token": "made-up"}).status_code == 403
    csrf = client.get("/api/csrf")
    value = csrf.get_json()["csrf"]
    cookie = client.get_cookie(CSRF_COOKIE)
    assert cookie is not None and cookie.value == value
    assert cookie.http_only and cookie.same_site == "Strict"
    assert client.get("/api/csrf").get_json()["csrf"] == value  # the same while the cookie lasts
    assert post({"requirement": "x"}, good).status_code == 403
    assert post({"requirement": "x"}, {**good, "X-CSRF-Token": value + "x"}).status_code == 403
    with_csrf = {**good, "X-CSRF-Token": value}
    for body in (
        {"requirement": "x", "agents": [{"id": "evil", "cli_command": "sh -c 'id'"}]},
        {"requirement": "x", "config": "/etc/passwd"},
        {"requirement": ["x"]},
        {"requirement": "   "},
        {"requirement": "x" * 20_001},
        ["x"],
    ):
        refused = post(body, with_csrf)
        assert refused.status_code == 400, body
        assert "error" in refused.get_json()
    not_json = client.post("/api/debates", data="requirement=x", headers=with_csrf)
    assert not_json.status_code == 400
    assert list(folder.iterdir()) == []
    # Other writes stay refused.
    assert client.put("/api/debates", json={"requirement": "x"}).status_code == 405
    assert client.post("/api/runs", json={}).status_code == 405

    started = post({"requirement": "Write <i>hello</i> in Python."}, with_csrf)
    assert started.status_code == 202
    body = started.get_json()
    assert body["started"] is True
    assert app.extensions["freemad.dashboard"].starter.wait(timeout=120)
    assert warnings == []
    written = [p for p in folder.iterdir() if p.suffix == ".json"]
    assert len(written) == 1
    transcript = json.loads(written[0].read_text())
    assert transcript["run_id"] == body["run_id"]
    assert transcript["requirement"] == "Write <i>hello</i> in Python."
    assert transcript["status"] == "completed"
    runs = client.get("/api/runs").get_json()["runs"]
    assert [r["run_id"] for r in runs] == [body["run_id"]]


# --- the event stream -------------------------------------------------------------------------


def read_stream(
    answer: TestResponse, done: Callable[[list[dict[str, str]]], bool], seconds: float = 60
) -> tuple[str, list[dict[str, str]]]:
    """Read an SSE response until `done(blocks)` or the deadline; every block, parsed."""
    text = ""
    deadline = time.monotonic() + seconds
    iterator: Iterator[bytes] = iter(answer.response)
    blocks: list[dict[str, str]] = []
    for chunk in iterator:
        text += chunk.decode() if isinstance(chunk, bytes) else chunk
        blocks = [parse_block(b) for b in text.split("\n\n") if b]
        if done(blocks) or time.monotonic() > deadline:
            break
    answer.close()
    return text, blocks


def parse_block(block: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in block.split("\n"):
        name, _, value = line.partition(":")
        fields[name or "comment"] = value.removeprefix(" ")
    return fields


def ids_of(blocks: list[dict[str, str]]) -> list[str]:
    return [b["id"] for b in blocks if "id" in b]


def test_a_stream_resumes_from_a_last_event_id_without_duplicates(
    client: FlaskClient, made: Made
) -> None:
    everything = [
        *StoreSource(made.store, quiet_warn).changes(0),
        *TranscriptDir(made.transcripts, quiet_warn).changes(0),
    ]
    task_changes = sorted((c for c in everything if c.run_id == made.task_id), key=lambda c: c.id)
    older = task_changes[2]
    expected = sorted(c.id for c in everything if c.time >= older.time - SLACK and c != older)
    assert len(expected) >= len(task_changes) - 1

    for how in ("query", "header"):
        if how == "query":
            answer = client.get(f"/events?last_event_id={older.id}", buffered=False)
        else:
            answer = client.get("/events", headers={"Last-Event-ID": older.id}, buffered=False)
        assert answer.status_code == 200
        assert answer.mimetype == "text/event-stream"
        assert answer.headers["Cache-Control"] == "no-cache"
        assert answer.headers["X-Accel-Buffering"] == "no"
        # Read past everything expected until two keepalives: polls that found the same changes
        # again must not have sent them again.
        text, blocks = read_stream(
            answer, lambda b: sum("comment" in x and "keepalive" in x["comment"] for x in b) >= 2
        )
        assert text.startswith("retry: 2000\n\n")
        got = ids_of(blocks)
        assert len(got) == len(set(got))
        assert sorted(got) == expected
        assert older.id not in got
        for block in blocks:
            if "id" in block:
                assert block["event"] == "run"
                data = json.loads(block["data"])
                assert set(data) == {"kind", "run_id", "seq", "event", "time"}
                assert block["id"].endswith(f".{data['run_id']}.{data['seq']}")


def test_a_new_stream_sends_only_what_happens_after_it_connects(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    task_id = start_task(repo, "A second task to watch.")
    store = repo / ".freemad" / "ui-smoke" / "tasks.db"
    with sqlite3.connect(store) as conn:
        (before,) = conn.execute(
            "SELECT MAX(seq) FROM events WHERE run_id = ?", (task_id,)
        ).fetchone()
    app = create_app(
        DashboardSettings([StoreSource(store, quiet_warn)], poll_interval=0.02, heartbeat=0.2)
    )
    answer = app.test_client().get("/events", buffered=False)
    chunks = iter(answer.response)
    first = next(chunks)
    assert first == b"retry: 2000\n\n"  # and nothing of what the store held already
    freemad("task", "answer", task_id, "Use SQLite.", "--config", SMOKE, cwd=repo)
    text = ""
    deadline = time.monotonic() + 60
    while "human_answer" not in text and time.monotonic() < deadline:
        text += next(chunks).decode()
    answer.close()
    blocks = [parse_block(b) for b in text.split("\n\n") if b]
    got = [json.loads(b["data"]) for b in blocks if "id" in b]
    # The answer, then (`task answer` carries the task on) what followed it; nothing from before.
    assert got[0]["event"] == "human_answer"
    assert got[0]["run_id"] == task_id and got[0]["seq"] == before + 1
    assert [d["seq"] for d in got] == list(range(before + 1, before + 1 + len(got)))


def test_a_stream_stops_cleanly_when_the_client_goes(client: FlaskClient) -> None:
    board = client.application.extensions["freemad.dashboard"]
    stream = events_stream(board.feed, None, "", poll_interval=0.02, heartbeat=0.2)
    assert next(stream) == "retry: 2000\n\n"
    stream.close()  # what the server does when the client has gone: GeneratorExit at the yield
    with pytest.raises(StopIteration):
        next(stream)


def test_head_of_events_does_not_stream(client: FlaskClient) -> None:
    answer = client.head("/events")
    assert answer.status_code == 200 and answer.get_data() == b""


def test_sources_named_before_they_exist_are_picked_up_when_they_do(tmp_path: Path) -> None:
    """Start the dashboard first, then the first debate and the first task."""
    repo, transcripts = tmp_path / "repo", tmp_path / "transcripts"
    warnings: list[str] = []
    sources = build_sources(
        transcripts=str(transcripts),
        task_store=str(repo / ".freemad" / "ui-smoke" / "tasks.db"),
        warn=warnings.append,
    )
    assert len(warnings) == 2 and all("does not exist yet" in w for w in warnings)
    client = create_app(DashboardSettings(sources, warn=quiet_warn)).test_client()
    assert client.get("/api/runs").get_json() == {"runs": []}
    assert client.get("/health").get_json()["ok"] is True

    debate_id = debate_into(transcripts)
    task_id = start_task(repo)
    listed = {run["run_id"]: run["kind"] for run in client.get("/api/runs").get_json()["runs"]}
    assert listed == {debate_id: "debate", task_id: "task"}
    assert client.get(f"/runs/{task_id}.html").status_code == 200
