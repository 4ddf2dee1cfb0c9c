"""Per-run overrides from the browser (rounds, agents, deadlines, scoring weights): checked by the
config's own models, refused with one line when they do not hold, and used by the run they start
(its transcript's settings say so), in a test client and in headless Chromium."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.config import load_config
from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.reading.sources import TranscriptDir
from freemad.dashboard.steering.run_overrides import apply_overrides, parse_overrides
from freemad.errors import ConfigError
from tests.conftest import MOCK_AGENT, SANDBOX, wait_for
from tests.dashboard.browser import LivePage, chromium
from tests.dashboard.served import serve

TOKEN = "start-token-for-overrides"
OVERRIDES = {
    "rounds": 1,
    "agents": ["b"],
    "deadlines": {"soft_timeout_ms": 40_000, "hard_timeout_ms": 50_000, "min_agents": 1},
    "scoring": {"weights": [1, 2, 3, 4]},
}


def two_agents(folder: Path) -> Path:
    """A config of two mock agents, `a` and `b`, with two critique rounds."""
    agent = {"cli_command": MOCK_AGENT, "cli_mode_arg": True}
    config = {
        "agents": [{"id": "a", **agent}, {"id": "b", **agent}],
        "security": {"cli_allowed_commands": [MOCK_AGENT], "sandbox": SANDBOX},
        "debate": {"rounds": 2},
        "deadlines": {"min_agents": 2},
    }
    path = folder / "two.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"rounds": 3}, "at most the config's 2"),
        ({"agents": ["a", "zed"]}, "not an enabled agent of the config: zed"),
        ({"agents": ["a"]}, "min_agents"),  # a quorum of 2 with one agent left
        ({"deadlines": {"soft_timeout_ms": 9000, "hard_timeout_ms": 8000}}, "soft_timeout_ms"),
        ({"scoring": {"weights": [1, 2, 3]}}, "expected 4 weights"),
        ({"scoring": {"weights": [1, 2, 3, -4]}}, "non-negative"),
        ({"cli_command": "sh -c id"}, "unknown key"),
        ({"agents": [{"id": "x", "cli_command": "sh"}]}, "agents[0]"),
        ({"deadlines": {"soft_timeout_ms": 0}}, "soft_timeout_ms"),
    ],
)
def test_overrides_that_do_not_hold_are_one_line(tmp_path: Path, given: Any, says: str) -> None:
    config = load_config(two_agents(tmp_path))
    with pytest.raises(ConfigError) as raised:
        apply_overrides(config, parse_overrides(given))
    line = raised.value.one_line()
    assert says in line and line.startswith("overrides") and "\n" not in line


def test_overrides_make_the_config_the_run_uses(tmp_path: Path) -> None:
    config = load_config(two_agents(tmp_path))
    changed = apply_overrides(config, parse_overrides(OVERRIDES))
    assert [a.id for a in changed.enabled_agents] == ["b"]
    assert changed.debate.rounds == 1 and changed.scoring.weights == (1, 2, 3, 4)
    assert changed.deadlines.soft_timeout_ms == 40_000 and changed.deadlines.min_agents == 1
    assert apply_overrides(config, parse_overrides({})) == config
    assert changed.agents[0].cli_command == config.agents[0].cli_command


def transcript_of(folder: Path, run_id: str) -> Path | None:
    for path in folder.glob("*.json"):
        if json.loads(path.read_text())["run_id"] == run_id:
            return path
    return None


def settings_of(folder: Path, run_id: str) -> dict[str, Any]:
    path = transcript_of(folder, run_id)
    assert path is not None, f"no transcript of {run_id}"
    written = json.loads(path.read_text())
    assert written["status"] == "completed", written.get("error")
    settings: dict[str, Any] = written["settings"]
    return settings


def test_a_debate_started_with_overrides_runs_with_them(tmp_path: Path) -> None:
    folder = tmp_path / "transcripts"
    folder.mkdir()
    config = two_agents(tmp_path)
    app = create_app(
        DashboardSettings(
            [TranscriptDir(folder, print)],
            allow_start=True,
            start_token=TOKEN,
            config_paths=[str(config)],
        )
    )
    client = app.test_client()
    csrf = client.get("/api/csrf").get_json()["csrf"]
    headers = {"Authorization": f"Bearer {TOKEN}", "X-CSRF-Token": csrf}
    for refused, says in (
        ({"agents": ["zed"]}, "not an enabled agent"),
        ({"cli_command": "sh"}, "unknown key"),
        ("all of them", "should be a mapping"),
    ):
        answer = client.post(
            "/api/debates", json={"requirement": "x", "overrides": refused}, headers=headers
        )
        assert answer.status_code == 400 and says in answer.get_json()["error"]
    twice = client.post(
        "/api/debates",
        json={"requirement": "x", "rounds": 1, "overrides": {"rounds": 1}},
        headers=headers,
    )
    assert twice.status_code == 400 and "once" in twice.get_json()["error"]
    assert list(folder.iterdir()) == []

    plain = client.post("/api/debates", json={"requirement": "x"}, headers=headers)
    started = client.post(
        "/api/debates", json={"requirement": "x", "overrides": OVERRIDES}, headers=headers
    )
    assert plain.status_code == 202 and started.status_code == 202
    assert app.extensions["freemad.dashboard"].starter.wait(timeout=120)
    before = settings_of(folder, plain.get_json()["run_id"])  # the config's own, as a baseline
    assert before["agents"] == ["a", "b"] and before["rounds"] == 2
    after = settings_of(folder, started.get_json()["run_id"])
    assert after["agents"] == ["b"] and after["rounds"] == 1
    assert after["weights"] == [1, 2, 3, 4] and after["min_agents"] == 1
    assert (after["soft_timeout_ms"], after["hard_timeout_ms"]) == (40_000, 50_000)
    assert before["weights"] != after["weights"]
    assert config.read_text() == yaml.safe_dump(yaml.safe_load(config.read_text()))  # untouched


def test_an_override_in_the_browser_is_used_by_the_run_it_starts(tmp_path: Path) -> None:
    chromium()
    folder = tmp_path / "transcripts"
    folder.mkdir()
    config = two_agents(tmp_path)
    args = ("--dir", str(folder), "--allow-start", "--config", str(config))
    with serve(tmp_path, *args, env={"FREEMAD_DASHBOARD_TOKEN": TOKEN}) as served:
        page = LivePage(served.url + "/index.html")
        try:
            page.wait_for("!document.getElementById('controls').hidden", "the start forms")
            page.evaluate(
                f"document.getElementById('token').value = {json.dumps(TOKEN)};"
                "document.getElementById('requirement').value = 'Say hello.';"
                "document.getElementById('debate-agents').value = 'b';"
                "document.getElementById('debate-quorum').value = '1';"
                "document.getElementById('debate-weights').value = '1, 2, 3, 4';"
                "document.getElementById('requirement').form.requestSubmit(); true"
            )
            link = page.wait_for(
                "(document.querySelector('a.started') || {}).href", "the started debate", 60
            )
            run_id = re.search(r"runs/([0-9a-f]+)\.html$", link)
            assert run_id, link
            wait_for(lambda: transcript_of(folder, run_id[1]), "its transcript", 120)
            settings = settings_of(folder, run_id[1])
            assert settings["agents"] == ["b"] and settings["weights"] == [1, 2, 3, 4]
            assert settings["min_agents"] == 1

            page.evaluate(
                "document.getElementById('debate-agents').value = 'a, nobody';"
                "document.getElementById('requirement').form.requestSubmit(); true"
            )
            said = page.wait_for(
                "(t => t.indexOf('Refused') === 0 && t)"
                "(document.querySelector('form.start output').textContent)",
                "the refusal",
            )
            assert "not an enabled agent of the config: nobody" in said
        finally:
            page.close()


def test_a_task_started_with_overrides_keeps_them_for_its_later_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from freemad.config.load import config_digest
    from freemad.dashboard.steering.task_steering import server_config, task_config
    from tests.dashboard.test_steering import Caller, app_of, task_of, wait

    monkeypatch.chdir(tmp_path)
    app, store = app_of(tmp_path)
    caller = Caller(app.test_client())
    deadlines = {"deadlines": {"soft_timeout_ms": 20_000, "hard_timeout_ms": 25_000}}
    refused = caller.post("/api/tasks", {"goal": "Plan.", "overrides": {"agents": ["planner"]}})
    assert refused.status_code == 400  # a task with no reviewer cannot run
    started = caller.post("/api/tasks", {"goal": "Plan a cache.", "overrides": deadlines})
    assert started.status_code == 202, started.get_json()
    task_id = started.get_json()["run_id"]
    wait(app)
    assert task_of(caller.client, task_id)["status"] == "waiting_for_human"
    with sqlite3.connect(store) as db:
        data = db.execute(
            "SELECT data FROM events WHERE run_id = ? ORDER BY seq LIMIT 1", (task_id,)
        ).fetchone()[0]
    db.close()
    config_path = str(tmp_path / "freemad.yaml")
    plain = task_config(config_path, str(store))
    wanted = apply_overrides(plain, parse_overrides(deadlines))
    assert json.loads(data)["config_digest"] == config_digest(wanted) != config_digest(plain)
    assert server_config(config_path).deadlines.soft_timeout_ms != 20_000
    kept = json.loads((store.parent / "overrides" / f"{task_id}.json").read_text())
    assert kept == deadlines
    answered = caller.post(f"/api/tasks/{task_id}/answer", {"text": "Use SQLite."})
    assert answered.status_code == 202
    wait(app)
    assert task_of(caller.client, task_id)["status"] == "completed"
