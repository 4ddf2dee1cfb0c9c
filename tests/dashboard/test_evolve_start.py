"""Evolve runs started from the browser (`--allow-start`, `POST /api/evolve`): per-run overrides
checked by the config's own models and refused with one line; the same-origin, token and CSRF
defences attacked; a real evolve toy run started with an override that it then runs with (its
`run_created` event's config digest is the overridden config's, it stops where the override says),
through the test client and, against real gunicorn, from the form in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from freemad.config.discover import load
from freemad.config.load import config_digest
from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.reading.sources import build_sources
from freemad.dashboard.steering.evolve_overrides import (
    apply_evolve_overrides,
    parse_evolve_overrides,
)
from freemad.errors import ConfigError
from tests.conftest import SANDBOX
from tests.dashboard.browser import LivePage, chromium
from tests.dashboard.runs import BIN, FREEMAD, ROOT, environment, run
from tests.dashboard.served import serve
from tests.dashboard.test_steering import TOKEN, Caller, wait, warns

GOAL = "make slow_sum as fast as possible"
ONE_ITERATION = {"stop": {"max_iterations": 1}, "supervisor": {"stall_window": 4}}


def toy_at(folder: Path, env: dict[str, str]) -> Path:
    """The evolve toy's repository (no run yet); its config, freemad.yaml, in it."""
    run(FREEMAD, "example", "evolve-toy", str(folder), cwd=folder.parent, env=env)
    if SANDBOX == "host":  # no bubblewrap here: the run all the same
        config = folder / "freemad.yaml"
        config.write_text(config.read_text().replace("security:\n", "security:\n  sandbox: host\n"))
        git = ("git", "-c", "user.name=u", "-c", "user.email=u@u")
        run(*git, "commit", "-qam", "host sandbox", cwd=folder, env=env)
    return folder


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    env = environment(tmp_path)
    (tmp_path / "gitconfig").write_text("")
    for name in ("PATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"):
        monkeypatch.setenv(name, env[name])  # the started processes find the toy's agents
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert str(BIN) in os.environ["PATH"]
    return toy_at(tmp_path / "toy", env)


def store_of(toy: Path) -> Path:
    return toy / ".freemad" / "evolve" / "evolve.db"


def app_of(toy: Path, warn: Callable[[str], None] = warns) -> Flask:
    transcripts = toy.parent / "transcripts"
    transcripts.mkdir(exist_ok=True)
    sources = build_sources(
        transcripts=str(transcripts),
        evolve_store=str(store_of(toy)),
        warn=warns,
        say_missing=False,
    )
    settings = DashboardSettings(
        sources,
        allow_start=True,
        start_token=TOKEN,
        config_paths=[str(toy / "freemad.yaml")],
        warn=warn,
    )
    return create_app(settings)


def created_of(store: Path, run_id: str) -> dict[str, Any]:
    """The run's `run_created` event, as the store keeps it."""
    with sqlite3.connect(store) as db:
        row = db.execute(
            "SELECT data FROM events WHERE run_id = ? AND kind = 'run_created'", (run_id,)
        ).fetchone()
    db.close()
    assert row is not None, f"no run_created of {run_id}"
    created: dict[str, Any] = json.loads(row[0])
    return created


def iterations_of(store: Path, run_id: str) -> int:
    with sqlite3.connect(store) as db:
        count: int = db.execute(
            "SELECT count(*) FROM events WHERE run_id = ? AND kind = 'iteration_started'",
            (run_id,),
        ).fetchone()[0]
    db.close()
    return count


def runs_in(store: Path) -> int:
    if not store.is_file():
        return 0
    with sqlite3.connect(store) as db:
        count: int = db.execute("SELECT count(*) FROM runs").fetchone()[0]
    db.close()
    return count


TOY_CONFIG = ROOT / "examples" / "evolve_toy" / "evolve.yaml"


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"judge": {"stages": []}}, "overrides: judge: unknown key"),
        ({"repo_path": "/etc"}, "overrides: repo_path: unknown key"),
        ({"stop": {"target": ["runtime_ms < 1"]}}, "overrides: stop.target: unknown key"),
        ({"agents": [{"id": "x", "cli_command": "sh"}]}, "overrides: agents[0]"),
        ({"stop": {"max_iterations": 0}}, "evolve.stop.max_iterations: should be greater than 0"),
        ({"stop": {"max_iterations": "many"}}, "stop.max_iterations: should be a valid integer"),
        ({"population": {"size": True}}, "population.size: should be a valid integer"),
        ({"population": {"size": -2}}, "evolve.population.size: should be greater than 0"),
        ({"supervisor": {"loop_threshold": 1}}, "evolve.supervisor.loop_threshold"),
        ({"supervisor": {"intervention": "shell"}}, "supervisor.intervention"),
        ({"worker_budget": {"timeout_sec": 0}}, "evolve.worker_budget.timeout_sec"),
        ({"variation": {"agent_id": "zed"}}, "'zed' is not an enabled agent"),
        ({"agents": ["planner-a"]}, "'worker' is not an enabled agent"),
        ({"agents": ["nobody"]}, "not an enabled agent of the config: nobody"),
        ({"variation": {"debate_agent_ids": ["worker", "worker"]}}, "listed twice"),
        ({"deadlines": {"soft_timeout_ms": 9000, "hard_timeout_ms": 8000}}, "soft_timeout_ms"),
        ("all of them", "overrides: should be a mapping"),
    ],
)
def test_evolve_overrides_that_do_not_hold_are_one_line(given: Any, says: str) -> None:
    config = load(str(TOY_CONFIG)).config
    with pytest.raises(ConfigError) as raised:
        apply_evolve_overrides(config, parse_evolve_overrides(given))
    line = raised.value.one_line()
    assert says in line, line
    assert line.startswith("overrides") and "\n" not in line


def test_evolve_overrides_make_the_config_the_run_uses() -> None:
    config = load(str(TOY_CONFIG)).config
    given = {
        "agents": ["worker", "planner-b"],
        "stop": {"max_iterations": 2, "max_wall_clock_minutes": 1.5},
        "population": {"size": 3, "parallel": 2},
        "supervisor": {"stall_window": 4, "max_interventions_before_human": 0},
        "worker_budget": {"timeout_sec": 30},
    }
    changed = apply_evolve_overrides(config, parse_evolve_overrides(given))
    assert changed.evolve is not None and config.evolve is not None
    assert [a.id for a in changed.enabled_agents] == ["worker", "planner-b"]
    assert changed.evolve.stop.max_iterations == 2 != config.evolve.stop.max_iterations
    assert changed.evolve.stop.max_wall_clock_minutes == 1.5
    assert changed.evolve.stop.target == config.evolve.stop.target  # not given: the config's
    assert (changed.evolve.population.size, changed.evolve.population.parallel) == (3, 2)
    assert changed.evolve.supervisor.stall_window == 4
    assert changed.evolve.supervisor.loop_threshold == config.evolve.supervisor.loop_threshold
    assert changed.evolve.worker_budget.timeout_sec == 30
    assert changed.evolve.judge == config.evolve.judge
    assert apply_evolve_overrides(config, parse_evolve_overrides({})) == config
    assert parse_evolve_overrides({"stop": {}}).given() == {}


def test_every_evolve_start_refuses_another_origin_a_missing_token_or_csrf(toy: Path) -> None:
    app = app_of(toy)
    caller = Caller(app.test_client())
    body = {"goal": GOAL, "overrides": ONE_ITERATION}
    good = caller.good
    for headers, status in (
        ({**good, "Origin": "http://evil.example"}, 403),
        ({**good, "Origin": "null"}, 403),
        ({**good, "Sec-Fetch-Site": "cross-site"}, 403),
        ({**good, "Sec-Fetch-Site": "same-site"}, 403),
        ({"X-CSRF-Token": caller.csrf}, 401),  # no token
        ({"Authorization": "Bearer wrong", "X-CSRF-Token": caller.csrf}, 401),
        ({"Authorization": TOKEN, "X-CSRF-Token": caller.csrf}, 401),
        ({"Authorization": f"Bearer {TOKEN}"}, 403),  # no CSRF token
        ({"Authorization": f"Bearer {TOKEN}", "X-CSRF-Token": caller.csrf + "x"}, 403),
    ):
        refused = caller.post("/api/evolve", body, headers)
        assert refused.status_code == status, (headers, refused.get_json())
        assert "error" in refused.get_json()
    # A CSRF token without its cookie: another client, whose cookie jar is empty.
    bare = app.test_client()
    refused = bare.post("/api/evolve", json=body, headers=good)
    assert refused.status_code == 403, refused.get_json()
    for given, says in (
        ({"goal": GOAL, "config_path": "/etc/passwd"}, "not config_path"),
        ({"goal": GOAL, "repo": str(toy.parent)}, "not repo"),
        ({"goal": GOAL, "cli_command": "sh -c id"}, "not cli_command"),
        ({"goal": GOAL, "config": "/etc/passwd"}, "no config"),
        ({"goal": GOAL, "config": "toy"}, "no config 'toy'"),
        ({"goal": "   "}, "the goal is empty"),
        ({"goal": "x" * 20_001}, "at most 20000"),
        ({"goal": ["x"]}, "goal must be a string"),
        ({"goal": GOAL, "overrides": {"judge": {}}}, "overrides: judge: unknown key"),
        ({"goal": GOAL, "overrides": {"stop": {"max_iterations": 0}}}, "greater than 0"),
        ({"goal": GOAL, "overrides": {"agents": ["nobody"]}}, "nobody"),
        ([GOAL], "send a JSON object"),
    ):
        refused = caller.post("/api/evolve", given)
        assert refused.status_code == 400, (given, refused.get_json())
        error = refused.get_json()["error"]
        assert says in error and "\n" not in error and "Traceback" not in error, error
    wait(app)
    assert runs_in(store_of(toy)) == 0  # nothing started


def test_an_evolve_run_started_with_overrides_runs_with_them(toy: Path) -> None:
    said: list[str] = []
    app = app_of(toy, said.append)
    caller = Caller(app.test_client())
    config_text = (toy / "freemad.yaml").read_text()

    # A checkout with uncommitted changes: the run cannot begin, and the request says why.
    slow_sum = toy / "slow_sum.py"
    kept = slow_sum.read_text()
    slow_sum.write_text(kept + "\n# edited\n")
    refused = caller.post("/api/evolve", {"goal": GOAL})
    assert refused.status_code == 409, refused.get_json()
    assert "uncommitted changes" in refused.get_json()["error"]
    wait(app)
    assert len(said) == 1 and "uncommitted changes" in said[0]  # the server's log says it too
    assert runs_in(store_of(toy)) == 0
    slow_sum.write_text(kept)

    started = caller.post("/api/evolve", {"goal": GOAL, "overrides": ONE_ITERATION})
    assert started.status_code == 202, started.get_json()
    run_id = started.get_json()["run_id"]
    assert re.fullmatch(r"[0-9a-f]{16}", run_id), run_id
    wait(app)
    view = caller.client.get(f"/api/runs/{run_id}").get_json()["view"]
    assert (view["status"], view["stop_reason"]) == ("stopped", "max_iterations"), view
    loaded = load(str(toy / "freemad.yaml"))
    assert loaded.config.evolve is not None and loaded.config.evolve.stop.max_iterations == 8
    wanted = apply_evolve_overrides(loaded.config, parse_evolve_overrides(ONE_ITERATION))
    created = created_of(store_of(toy), run_id)
    assert created["config_digest"] == config_digest(wanted) != config_digest(loaded.config)
    assert created["goal"] == GOAL
    kept_file = store_of(toy).parent / "overrides" / f"{run_id}.json"
    assert json.loads(kept_file.read_text()) == ONE_ITERATION
    assert (toy / "freemad.yaml").read_text() == config_text  # the file is not touched

    # Resumed from its page, it is carried on with the overrides it started with: still one
    # iteration at most, so it stops again at once (the config's 8 would judge seven more).
    judged = iterations_of(store_of(toy), run_id)
    assert judged == 2  # the seed's baseline (iteration 0) and one iteration
    resumed = caller.post(f"/api/evolve/{run_id}/resume", {})
    assert resumed.status_code == 202, resumed.get_json()
    wait(app)
    view = caller.client.get(f"/api/runs/{run_id}").get_json()["view"]
    assert (view["status"], view["stop_reason"]) == ("stopped", "max_iterations"), view
    assert iterations_of(store_of(toy), run_id) == judged


def test_an_override_typed_into_the_form_is_used_by_the_evolve_run(
    toy: Path, tmp_path: Path
) -> None:
    chromium()  # skips, saying why, where there is none
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    args = ("--dir", str(transcripts), "--evolve-store", str(store_of(toy)))
    args += ("--config", str(toy / "freemad.yaml"), "--allow-start")
    with serve(tmp_path, *args, env={"FREEMAD_DASHBOARD_TOKEN": TOKEN}) as served:
        page = LivePage(f"{served.url}/index.html")
        try:
            page.wait_for(
                "!document.getElementById('controls').hidden"
                " && !!document.getElementById('evolve-goal')",
                "the evolve start form",
            )
            page.evaluate(
                f"document.getElementById('token').value = {json.dumps(TOKEN)};"
                "document.getElementById('evolve-iterations').value = '1';"
                "document.getElementById('evolve-worker').value = 'zed';"
                f"document.getElementById('evolve-goal').value = {json.dumps(GOAL)};"
                "document.getElementById('evolve-goal').form.requestSubmit(); true"
            )
            said = page.wait_for(
                "(t => t.indexOf('Refused') === 0 && t)"
                "(document.querySelector('form[data-post$=\"api/evolve\"] output').textContent)",
                "the refusal",
            )
            assert "evolve.variation.agent_id: 'zed' is not an enabled agent" in said
            assert runs_in(store_of(toy)) == 0
            page.evaluate(
                "document.getElementById('evolve-worker').value = '';"
                "document.getElementById('evolve-goal').form.requestSubmit(); true"
            )
            link = page.wait_for(
                "(document.querySelector('form[data-post$=\"api/evolve\"] a.started') || {}).href",
                "the started evolve run",
                90,
            )
            found = re.search(r"runs/([0-9a-f]+)\.html$", link)
            assert found, link
            run_id = found[1]
            page.evaluate(f"window.location.href = {json.dumps(link)}; true")
            page.wait_for(
                "!!document.querySelector('h1 + p.meta .badge.s-stopped')",
                "the run's page to show it stopped",
                180,
            )
            status, body = served.get(f"/api/runs/{run_id}")
            assert status == 200 and json.loads(body)["view"]["stop_reason"] == "max_iterations"
            loaded = load(str(toy / "freemad.yaml"))
            wanted = apply_evolve_overrides(
                loaded.config, parse_evolve_overrides({"stop": {"max_iterations": 1}})
            )
            assert created_of(store_of(toy), run_id)["config_digest"] == config_digest(wanted)
            assert TOKEN not in page.evaluate("document.documentElement.outerHTML")
        finally:
            page.close()


@pytest.mark.parametrize(
    ("written", "closed", "read"),
    [
        (b"0123456789abcdef\n", False, "0123456789abcdef"),
        (b"0123456789abcdef\nmore", True, "0123456789abcdef"),
        (b"../../etc/passwd\n", True, None),  # no run id: nothing to send the browser to
        (b"0123456789abcdef", True, None),  # ended before the line was whole
        (b"", True, None),  # the process ended without creating a run
        (b"", False, None),  # still checking when the wait is over
        (b"x" * 200, False, None),  # more than a run id and no line: not read on and on
    ],
)
def test_the_announced_run_id_is_read_only_when_whole(
    written: bytes, closed: bool, read: str | None
) -> None:
    from freemad.dashboard.steering.evolve_start import read_announcement

    read_end, write_end = os.pipe()
    try:
        os.write(write_end, written)
        if closed:
            os.close(write_end)
        assert read_announcement(read_end, 0.2) == read
    finally:
        os.close(read_end)
        if not closed:
            os.close(write_end)
