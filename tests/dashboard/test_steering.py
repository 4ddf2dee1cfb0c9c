"""Starting and steering runs from the browser (`--allow-start`): the forms, a plan task started
and carried to its end over HTTP, every POST's defences attacked (a missing or wrong token, a
missing or wrong CSRF token, oversized input, a path or a command smuggled into a field), and
the server's config shown read-only with its secrets hidden; then, in headless Chromium against
real gunicorn, a task started from the index's form, answered from its page, completed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from freemad.bundled import bundled
from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.reading.sources import build_sources
from freemad.dashboard.steering.starter import CSRF_COOKIE
from tests.conftest import wait_for
from tests.dashboard.browser import LivePage, chromium
from tests.dashboard.served import serve

TOKEN = "start-token-for-steering-tests"
GOAL = 'Plan the <script>alert("x")</script> storage & its API.'
SECRET = "sekrit-4242"  # what the config's redact pattern hides
PLAIN_KEY = "plain-value-under-a-key-name"  # hidden for its key's name


def smoke_config(folder: Path) -> tuple[Path, Path]:
    """The bundled task smoke config (mock agents that wait for a person) in `folder`, with a
    redact pattern and a text it hides; the config and its task store."""
    data = yaml.safe_load((bundled("configs") / "autonomous_smoke.yaml").read_text())
    data["security"]["redact_patterns"] = ["sekrit-[0-9]+"]
    data["agents"].append(
        {
            "id": "spare",
            "enabled": False,
            "cli_command": "freemad-task-mock",
            "cli_args": {"api_key": PLAIN_KEY, "note": SECRET},
        }
    )
    config = folder / "freemad.yaml"
    config.write_text(yaml.safe_dump(data))
    return config, folder / ".freemad" / "ui-smoke" / "tasks.db"


def warns(message: str) -> None:
    raise AssertionError(f"unexpected warning: {message}")


def app_of(tmp_path: Path, *, allow_start: bool = True) -> tuple[Flask, Path]:
    config, store = smoke_config(tmp_path)
    (tmp_path / "transcripts").mkdir()
    sources = build_sources(
        transcripts=str(tmp_path / "transcripts"),
        task_store=str(store),
        warn=warns,
        say_missing=False,
    )
    app = create_app(
        DashboardSettings(
            sources,
            allow_start=allow_start,
            start_token=TOKEN if allow_start else None,
            config_paths=[str(config)],
            warn=warns,
        )
    )
    return app, store


class Caller:
    """A browser of the dashboard: the token and CSRF headers, or not."""

    def __init__(self, client: FlaskClient) -> None:
        self.client = client
        self.csrf = client.get("/api/csrf").get_json()["csrf"]
        self.good = {"Authorization": f"Bearer {TOKEN}", "X-CSRF-Token": self.csrf}

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> TestResponse:
        return self.client.post(path, json=body, headers=self.good if headers is None else headers)


def wait(app: Flask) -> None:
    assert app.extensions["freemad.dashboard"].starter.wait(timeout=120)


def task_of(client: FlaskClient, task_id: str) -> dict[str, Any]:
    answer = client.get(f"/api/runs/{task_id}")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    body: dict[str, Any] = answer.get_json()
    return body


@pytest.fixture
def steered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Flask, Path, Caller]:
    """A dashboard that may start runs, run from `tmp_path` (a plan task's workspace)."""
    monkeypatch.chdir(tmp_path)
    app, store = app_of(tmp_path)
    return app, store, Caller(app.test_client())


def test_a_plan_task_is_started_answered_and_completed_over_http(
    steered: tuple[Flask, Path, Caller],
) -> None:
    app, store, caller = steered
    client = caller.client
    index = client.get("/").get_data(as_text=True)
    assert 'data-post="api/tasks"' in index and 'data-post="api/debates"' in index
    assert TOKEN not in index

    started = caller.post("/api/tasks", {"goal": GOAL})
    assert started.status_code == 202, started.get_json()
    task_id = started.get_json()["run_id"]
    wait(app)
    assert store.is_file()
    task = task_of(client, task_id)
    assert task["status"] == "waiting_for_human"
    page = client.get(f"/runs/{task_id}.html").get_data(as_text=True)
    assert f'data-post="../api/tasks/{task_id}/answer"' in page
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert TOKEN not in page

    # A stage that is not the current one, and an answer while none is asked, are refused.
    assert caller.post(f"/api/tasks/{task_id}/approve", {"stage": "nope"}).status_code == 409
    assert caller.post(f"/api/tasks/{task_id}/answer", {"text": " "}).status_code == 409

    answered = caller.post(f"/api/tasks/{task_id}/answer", {"text": "Use SQLite."})
    assert answered.status_code == 202, answered.get_json()
    wait(app)
    assert task_of(client, task_id)["status"] == "completed"
    # A finished task takes no more steps, and its page offers none.
    for verb, body in (("answer", {"text": "x"}), ("pause", {}), ("resume", {})):
        refused = caller.post(f"/api/tasks/{task_id}/{verb}", body)
        assert refused.status_code == 409, (verb, refused.get_json())
    assert 'data-post="../api' not in client.get(f"/runs/{task_id}.html").get_data(as_text=True)


def test_a_task_is_paused_and_resumed_and_a_stage_rejected(
    steered: tuple[Flask, Path, Caller],
) -> None:
    app, _, caller = steered
    client = caller.client
    task_id = caller.post("/api/tasks", {"goal": "Plan a cache."}).get_json()["run_id"]
    wait(app)
    stage = task_of(client, task_id)["view"]["current_stage"]
    rejected = caller.post(f"/api/tasks/{task_id}/reject", {"stage": stage, "reason": "Too vague."})
    assert rejected.status_code == 200, rejected.get_json()
    paused = caller.post(f"/api/tasks/{task_id}/pause", {})
    assert paused.status_code == 200 and paused.get_json() == {"done": "pause", "run_id": task_id}
    assert task_of(client, task_id)["status"] == "paused"
    assert caller.post(f"/api/tasks/{task_id}/resume", {}).status_code == 202
    wait(app)
    assert task_of(client, task_id)["status"] != "paused"


def test_every_post_refuses_a_missing_or_wrong_token_or_csrf(tmp_path: Path) -> None:
    app, store = app_of(tmp_path)
    client = app.test_client()
    caller = Caller(client)
    task = "0123456789abcdef"
    for path, body in (
        ("/api/tasks", {"goal": "x"}),
        ("/api/debates", {"requirement": "x"}),
        (f"/api/tasks/{task}/answer", {"text": "x"}),
        (f"/api/tasks/{task}/approve", {"stage": "plan"}),
        (f"/api/tasks/{task}/reject", {"stage": "plan", "reason": "x"}),
        (f"/api/tasks/{task}/pause", {}),
        (f"/api/tasks/{task}/resume", {}),
    ):
        for headers, status in (
            ({}, 401),
            ({"X-CSRF-Token": caller.csrf}, 401),
            ({"Authorization": "Bearer wrong", "X-CSRF-Token": caller.csrf}, 401),
            ({"Authorization": TOKEN, "X-CSRF-Token": caller.csrf}, 401),  # not a bearer
            ({"Authorization": f"Bearer {TOKEN}"}, 403),
            ({"Authorization": f"Bearer {TOKEN}", "X-CSRF-Token": caller.csrf + "x"}, 403),
        ):
            refused = caller.post(path, body, headers)
            assert refused.status_code == status, (path, headers)
            assert "error" in refused.get_json()
    # A CSRF header is nothing without the cookie that holds the same value.
    bare = app.test_client()
    refused = bare.post(
        "/api/tasks",
        json={"goal": "x"},
        headers={"Authorization": f"Bearer {TOKEN}", "X-CSRF-Token": caller.csrf},
    )
    assert refused.status_code == 403 and bare.get_cookie(CSRF_COOKIE) is None
    assert not store.exists()  # nothing was started


def test_inputs_are_bounded_and_carry_no_path_or_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # not a git repository: no code task starts here
    app, store = app_of(tmp_path)
    caller = Caller(app.test_client())
    task = "0123456789abcdef"
    for path, body, status in (
        ("/api/tasks", {"goal": "x" * 20_001}, 400),
        ("/api/tasks", {"goal": "  "}, 400),
        ("/api/tasks", {"goal": ["x"]}, 400),
        ("/api/tasks", ["x"], 400),
        ("/api/tasks", {"goal": "x", "task_type": "code"}, 400),
        ("/api/tasks", {"goal": "x", "task_type": "sh"}, 400),
        ("/api/tasks", {"goal": "x", "config": "nope"}, 400),
        ("/api/tasks", {"goal": "x", "config": ["freemad"]}, 400),
        ("/api/tasks", {"goal": "x", "workspace_root": "/etc"}, 400),
        ("/api/tasks", {"goal": "x", "config": "/etc/passwd"}, 400),
        ("/api/tasks", {"goal": "x", "store": "/tmp/evil.db"}, 400),
        ("/api/tasks", {"goal": "x", "argv": ["sh", "-c", "id"]}, 400),
        ("/api/debates", {"requirement": "x", "rounds": 99}, 400),
        ("/api/debates", {"requirement": "x", "rounds": -1}, 400),
        ("/api/debates", {"requirement": "x", "rounds": True}, 400),
        ("/api/debates", {"requirement": "x", "rounds": "1; rm -rf /"}, 400),
        ("/api/debates", {"requirement": "x", "config_path": "/etc/passwd"}, 400),
        ("/api/debates", {"requirement": "x", "config": "/etc/passwd"}, 400),
        ("/api/debates", {"requirement": "x", "config": "../freemad"}, 400),
        (f"/api/tasks/{task}/answer", {"text": "x" * 20_001}, 400),
        (f"/api/tasks/{task}/answer", {"text": "x", "cli_command": "sh -c id"}, 400),
        (f"/api/tasks/{task}/answer", {}, 400),
        (f"/api/tasks/{task}/approve", {"stage": "../../etc/passwd"}, 400),
        (f"/api/tasks/{task}/approve", {"stage": "x" * 101}, 400),
        (f"/api/tasks/{task}/pause", {"config": "/etc/passwd"}, 400),
        ("/api/tasks/..%2F..%2Fetc/answer", {"text": "x"}, 405),  # no such route
        ("/api/tasks/$(id)/answer", {"text": "x"}, 400),
        (f"/api/tasks/{task}/answer", {"text": "x"}, 404),  # no task (and no store made)
        (f"/api/tasks/{task}/cancel", {}, 404),
        (f"/api/tasks/{task}/sh", {}, 404),
    ):
        refused = caller.post(path, body)
        assert refused.status_code == status, (path, body, refused.get_json())
        assert "error" in refused.get_json()
    too_big = caller.client.post(
        "/api/tasks",
        data=b'{"goal": "' + b"x" * 300_000 + b'"}',
        headers=caller.good,
        content_type="application/json",
    )
    assert too_big.status_code == 413
    code = caller.post("/api/tasks", {"goal": "x", "task_type": "code"}).get_json()["error"]
    assert "git repository" in code and "\n" not in code
    assert "data-post" in caller.client.get("/").get_data(as_text=True)
    assert 'value="code"' not in caller.client.get("/").get_data(as_text=True)
    # Only the routes of the start token take a POST.
    assert caller.post("/api/runs", {}).status_code == 405
    assert caller.post("/config.html", {}).status_code == 405
    assert not store.exists()


def test_the_config_is_shown_read_only_with_its_secrets_hidden(tmp_path: Path) -> None:
    app, _ = app_of(tmp_path)
    client = app.test_client()
    page = client.get("/config.html")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "freemad-task-mock" in text and "ui-smoke" in text
    assert SECRET not in text and "[REDACTED]" in text
    assert PLAIN_KEY not in text and "[redacted]" in text
    assert 'href="api/config/schema"' in text and "data-post" not in text
    shown = client.get("/api/config").get_json()
    assert SECRET not in json.dumps(shown)
    assert shown["config"]["task"]["max_total_iterations"] == 30
    assert [c["name"] for c in shown["configs"]] == ["freemad"] and shown["default"] == "freemad"
    schema = client.get("/api/config/schema").get_json()
    assert schema["title"] == "FREE-MAD configuration" and "agents" in schema["properties"]


def test_a_read_only_dashboard_has_no_forms_and_no_config_page(tmp_path: Path) -> None:
    app, _ = app_of(tmp_path, allow_start=False)
    client = app.test_client()
    assert "data-post" not in client.get("/").get_data(as_text=True)
    assert client.get("/config.html").status_code == 404
    assert client.post("/api/tasks", json={"goal": "x"}).status_code == 405


def test_a_task_started_from_the_form_is_answered_from_its_page_and_completes(
    tmp_path: Path,
) -> None:
    chromium()  # skips, saying why, where there is none
    config, store = smoke_config(tmp_path)
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    args = ("--dir", str(transcripts), "--task-store", str(store), "--config", str(config))
    with serve(tmp_path, *args, "--allow-start", env={"FREEMAD_DASHBOARD_TOKEN": TOKEN}) as served:
        page = LivePage(served.url + "/index.html")
        try:
            page.wait_for("!document.getElementById('controls').hidden", "the start forms")
            assert TOKEN not in page.evaluate("document.documentElement.outerHTML")
            page.evaluate(
                f"document.getElementById('token').value = {json.dumps(TOKEN)};"
                f"document.getElementById('goal').value = {json.dumps(GOAL)};"
                "document.getElementById('goal').form.requestSubmit(); true"
            )
            link = page.wait_for(
                "(document.querySelector('a.started') || {}).href", "the started task's link", 60
            )
            task_id = re.search(r"runs/([0-9a-f]+)\.html$", link)
            assert task_id, link
            # The token is kept for the tab, not in the page.
            assert page.evaluate("document.getElementById('token').value") == ""

            def waiting() -> bool:
                status, body = served.get(f"/api/runs/{task_id[1]}")
                return status == 200 and json.loads(body)["status"] == "waiting_for_human"

            wait_for(waiting, "the task to ask its question", 60)
            page.evaluate(f"location.href = {json.dumps(link)}; true")
            page.wait_for(
                "!!document.getElementById('answer') && !document.getElementById('controls').hidden",
                "the answer form",
                30,
            )
            page.evaluate(
                "document.getElementById('answer').value = 'Use SQLite.';"
                "document.getElementById('answer').form.requestSubmit(); true"
            )
            page.wait_for(
                "!!document.querySelector('h1 + p.meta .badge.s-completed')",
                "the page to show the task completed",
                90,
            )
            status, body = served.get(f"/api/runs/{task_id[1]}")
            assert status == 200 and json.loads(body)["status"] == "completed"
            assert TOKEN not in page.evaluate("document.documentElement.outerHTML")
        finally:
            page.close()


def test_a_debate_started_with_fewer_rounds_runs_that_many(tmp_path: Path) -> None:
    folder = tmp_path / "transcripts"
    folder.mkdir()
    app = create_app(
        DashboardSettings(
            build_sources(transcripts=str(folder), warn=warns), allow_start=True, start_token=TOKEN
        )
    )
    caller = Caller(app.test_client())
    assert 'max="1"' in caller.client.get("/").get_data(as_text=True)  # the config's rounds
    assert caller.post("/api/debates", {"requirement": "x", "rounds": 2}).status_code == 400
    started = caller.post("/api/debates", {"requirement": "Add two numbers.", "rounds": 0})
    assert started.status_code == 202, started.get_json()
    wait(app)
    [written] = folder.glob("*.json")
    transcript = json.loads(written.read_text())
    assert transcript["run_id"] == started.get_json()["run_id"]
    assert len(transcript["holders_history"]) == 1  # the proposals, no critique round
