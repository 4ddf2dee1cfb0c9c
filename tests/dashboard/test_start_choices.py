"""What the start forms let a person choose (`--allow-start`): one of several configs, by the
short name the server gave it (never a path), checked against that config's rounds and shown
read-only; and a code task, only when the server was started in a git repository (it works on
a branch of its own there, the checkout left alone)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from freemad.config import default_config
from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.live.token_handover import TOKEN as TOKEN_VAR
from freemad.dashboard.live.wsgi import CONFIGS, app_from_env
from freemad.dashboard.reading.sources import build_sources
from freemad.errors import UsageError
from tests.conftest import SANDBOX
from tests.dashboard.runs import BIN
from tests.dashboard.served import serve
from tests.dashboard.test_steering import TOKEN, Caller, smoke_config, wait, warns

SECRET_B = "sekrit-777"


def two_configs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The task smoke config (tmp/a/freemad.yaml, one round) and the built-in one with two
    rounds (tmp/b/freemad.json, the same stem); and a transcripts folder."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, _ = smoke_config(tmp_path / "a")
    data = default_config().model_dump(mode="json")
    data["debate"]["rounds"] = 2
    data["security"]["redact_patterns"] = ["sekrit-[0-9]+"]
    data["agents"][0]["cli_args"] = {"note": SECRET_B}
    second = tmp_path / "b" / "freemad.json"
    second.write_text(json.dumps(data))
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    return first, second, transcripts


def test_a_debate_starts_with_the_config_its_name_chooses(tmp_path: Path) -> None:
    first, second, transcripts = two_configs(tmp_path)
    store = tmp_path / "a" / ".freemad" / "ui-smoke" / "tasks.db"
    sources = build_sources(
        transcripts=str(transcripts), task_store=str(store), warn=warns, say_missing=False
    )
    app = create_app(
        DashboardSettings(
            sources,
            allow_start=True,
            start_token=TOKEN,
            config_paths=[str(first), str(second)],
            warn=warns,
        )
    )
    caller = Caller(app.test_client())
    index = caller.client.get("/").get_data(as_text=True)
    assert '<option value="freemad">' in index and '<option value="freemad-2">' in index
    assert str(tmp_path) not in index  # the browser sees names, never paths

    # Rounds are checked against the chosen config's; a name not given is the first config.
    for body in (
        {"requirement": "x", "rounds": 2},
        {"requirement": "x", "rounds": 2, "config": "freemad"},
        {"requirement": "x", "rounds": 3, "config": "freemad-2"},
    ):
        refused = caller.post("/api/debates", body)
        assert refused.status_code == 400, (body, refused.get_json())
    for name in ("nope", str(second), "b/freemad", "freemad.json", "", "x" * 5000):
        refused = caller.post("/api/debates", {"requirement": "x", "config": name})
        assert refused.status_code == 400, name
        error = refused.get_json()["error"]
        assert "freemad, freemad-2" in error and "\n" not in error and len(error) < 700
    # The second config keeps its tasks in a store this dashboard does not show.
    refused = caller.post("/api/tasks", {"goal": "x", "config": "freemad-2"})
    assert refused.status_code == 400 and "does not show" in refused.get_json()["error"]

    started = caller.post(
        "/api/debates", {"requirement": "Add two numbers.", "rounds": 2, "config": "freemad-2"}
    )
    assert started.status_code == 202, started.get_json()
    wait(app)
    [written] = transcripts.glob("*.json")
    transcript = json.loads(written.read_text())
    assert transcript["run_id"] == started.get_json()["run_id"]
    assert len(transcript["holders_history"]) == 3  # the proposals and two critique rounds


def test_each_config_is_shown_read_only_with_its_secrets_hidden(tmp_path: Path) -> None:
    first, second, transcripts = two_configs(tmp_path)
    app = create_app(
        DashboardSettings(
            build_sources(transcripts=str(transcripts), warn=warns),
            allow_start=True,
            start_token=TOKEN,
            config_paths=[str(first), str(second)],
            warn=warns,
        )
    )
    client = app.test_client()
    page = client.get("/config.html").get_data(as_text=True)
    assert 'id="config-freemad"' in page and 'id="config-freemad-2"' in page
    assert "(the default)" in page and 'href="api/config/schema"' in page
    assert SECRET_B not in page and "sekrit-4242" not in page
    shown = client.get("/api/config").get_json()
    assert [c["name"] for c in shown["configs"]] == ["freemad", "freemad-2"]
    assert shown["default"] == "freemad" and shown["schema"] == "/api/config/schema"
    assert shown["configs"][1]["config"]["debate"]["rounds"] == 2
    assert SECRET_B not in json.dumps(shown)


def test_gunicorns_app_reads_its_configs_from_the_environment(tmp_path: Path) -> None:
    first, second, transcripts = two_configs(tmp_path)
    env = {
        "FREEMAD_DASHBOARD_DIR": str(transcripts),
        "FREEMAD_DASHBOARD_ALLOW_START": "1",
        TOKEN_VAR: TOKEN,
        CONFIGS: json.dumps([str(first), str(second)]),
    }
    shown = app_from_env(env).test_client().get("/api/config").get_json()
    assert [c["name"] for c in shown["configs"]] == ["freemad", "freemad-2"]
    # FREEMAD_CONFIG alone (one config) still works.
    single = {k: v for k, v in env.items() if k != CONFIGS} | {"FREEMAD_CONFIG": str(second)}
    shown = app_from_env(single).test_client().get("/api/config").get_json()
    assert [c["name"] for c in shown["configs"]] == ["freemad"]  # the JSON file's stem
    for bad in ("not json", "[]", '"a.yaml"', "[1]", '[""]'):
        with pytest.raises(UsageError, match=CONFIGS):
            app_from_env({**env, CONFIGS: bad})


def test_the_command_offers_every_config_given(tmp_path: Path) -> None:
    first, second, transcripts = two_configs(tmp_path)
    args = ("--dir", str(transcripts), "--config", str(first), "--config", str(second))
    with serve(tmp_path, *args, "--allow-start", env={TOKEN_VAR: TOKEN}) as served:
        status, body = served.get("/api/config")
        assert status == 200
        assert [c["name"] for c in json.loads(body)["configs"]] == ["freemad", "freemad-2"]
        status, body = served.get("/index.html")
        assert status == 200 and b'<option value="freemad-2">' in body


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def code_config(folder: Path) -> tuple[Path, Path]:
    """Scripted agents that plan, review and write src/calc.py; the config and its task store."""

    def mock(*args: str) -> str:
        return shlex.join(["freemad-task-mock", *args])

    data = {
        "agents": [
            {"id": "planner", "cli_command": mock("--approve"), "roles": ["planner", "researcher"]},
            {"id": "reviewer", "cli_command": mock("--approve"), "roles": ["reviewer"]},
            {
                "id": "coder",
                "cli_command": mock("--write", "src/calc.py=def add(a, b): return a + b"),
                "roles": ["implementer"],
            },
        ],
        "security": {"cli_allowed_commands": ["freemad-task-mock"], "sandbox": SANDBOX},
        "task": {
            "store_path": str(folder / "store" / "tasks.db"),
            "worktrees_dir": str(folder / "worktrees"),
            "tool_policy": {"allow_workspace_write": True, "allowed_write_roots": ["src"]},
        },
    }
    config = folder / "code.yaml"
    config.write_text(yaml.safe_dump(data))
    return config, folder / "store" / "tasks.db"


def test_a_code_task_started_in_a_repository_lands_on_its_own_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "me@example.com")
    git(repo, "config", "user.name", "Me")
    (repo / "README.md").write_text("# calc\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    (repo / "README.md").write_text("# calc\n\nwork in progress\n")  # an uncommitted edit
    before = git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")
    config, store = code_config(tmp_path)
    (tmp_path / "transcripts").mkdir()
    monkeypatch.chdir(repo)  # the server's folder: the only repository a code task gets
    monkeypatch.setenv("PATH", f"{BIN}:{Path(sys.executable).parent}:/usr/bin:/bin")
    sources = build_sources(
        transcripts=str(tmp_path / "transcripts"),
        task_store=str(store),
        warn=warns,
        say_missing=False,
    )
    app = create_app(
        DashboardSettings(
            sources, allow_start=True, start_token=TOKEN, config_paths=[str(config)], warn=warns
        )
    )
    caller = Caller(app.test_client())
    assert '<option value="code">' in caller.client.get("/").get_data(as_text=True)
    # The repository is the server's folder, whatever a body says.
    for extra in ({"workspace_root": "/"}, {"repo": str(tmp_path)}, {"branch": "main"}):
        body = {"goal": "Add calc.add", "task_type": "code", **extra}
        assert caller.post("/api/tasks", body).status_code == 400, extra

    started = caller.post("/api/tasks", {"goal": "Add calc.add", "task_type": "code"})
    assert started.status_code == 202, started.get_json()
    task_id = started.get_json()["run_id"]
    wait(app)
    task = caller.client.get(f"/api/runs/{task_id}").get_json()
    assert task["status"] == "completed", task["view"].get("question")
    assert task["view"]["task_type"] == "code"
    branch = f"freemad/task/{task_id}"
    assert git(repo, "show", f"{branch}:src/calc.py").strip() == "def add(a, b): return a + b"
    assert (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")) == before
    assert not (repo / "src").exists()
