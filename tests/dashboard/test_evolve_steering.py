"""Evolve runs steered from the browser (`--allow-start`): a real evolve toy run (its scripted
agents, its git repository) that asks a person, answered, declined, paused, resumed and stopped
over HTTP; every defence attacked (a missing or wrong token or CSRF token, an unknown verb,
extra fields, a path or a command smuggled in, an over-long direction, a run of another store);
then, in headless Chromium against real gunicorn, a run paused and resumed from its page."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from flask import Flask

from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.reading.sources import build_sources
from freemad.dashboard.steering.evolve_steering import evolve_runner
from tests.conftest import SANDBOX
from tests.dashboard.browser import LivePage, chromium
from tests.dashboard.runs import BIN, FREEMAD, environment, run
from tests.dashboard.served import serve
from tests.dashboard.test_steering import TOKEN, Caller, wait, warns

GOAL = "make slow_sum as fast as possible"


@dataclass(frozen=True)
class Toy:
    folder: Path  # the toy's git repository, its config freemad.yaml in it
    run_id: str  # a run waiting for a person's direction

    @property
    def config(self) -> Path:
        return self.folder / "freemad.yaml"

    @property
    def store(self) -> Path:
        return self.folder / ".freemad" / "evolve" / "evolve.db"


def waiting_toy(folder: Path, env: dict[str, str]) -> Toy:
    """The evolve toy, asking a person as soon as it stalls (after its third iteration)."""
    run(FREEMAD, "example", "evolve-toy", str(folder), cwd=folder.parent, env=env)
    config = folder / "freemad.yaml"
    text = config.read_text().replace(
        "max_interventions_before_human: 2", "max_interventions_before_human: 0"
    )
    if SANDBOX == "host":  # no bubblewrap here: the run all the same
        text = text.replace("security:\n", "security:\n  sandbox: host\n")
    config.write_text(text)
    run(
        "git",
        "-c",
        "user.name=u",
        "-c",
        "user.email=u@u",
        "commit",
        "-qam",
        "ask",
        cwd=folder,
        env=env,
    )
    started = json.loads(run(FREEMAD, "evolve", "start", "--json", GOAL, cwd=folder, env=env))
    assert started["status"] == "waiting_for_human", started
    return Toy(folder, str(started["run_id"]))


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Toy:
    env = environment(tmp_path)
    (tmp_path / "gitconfig").write_text("")
    for name in ("PATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"):
        monkeypatch.setenv(name, env[name])  # the started processes find the toy's agents
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert str(BIN) in os.environ["PATH"]
    return waiting_toy(tmp_path / "toy", env)


def app_of(toy: Toy, *, evolve_store: Path | None = None) -> Flask:
    transcripts = toy.folder.parent / "transcripts"
    transcripts.mkdir(exist_ok=True)
    sources = build_sources(
        transcripts=str(transcripts),
        evolve_store=str(evolve_store or toy.store),
        warn=warns,
        say_missing=False,
    )
    return create_app(
        DashboardSettings(
            sources, allow_start=True, start_token=TOKEN, config_paths=[str(toy.config)], warn=warns
        )
    )


def status_of(caller: Caller, run_id: str) -> tuple[str, str | None]:
    answer = caller.client.get(f"/api/runs/{run_id}")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    view = answer.get_json()["view"]
    return view["status"], view["stop_reason"]


def test_a_waiting_run_is_answered_from_its_page_and_carried_to_its_target(toy: Toy) -> None:
    app = app_of(toy)
    caller = Caller(app.test_client())
    page = caller.client.get(f"/runs/{toy.run_id}.html").get_data(as_text=True)
    assert f'data-post="../api/evolve/{toy.run_id}/answer"' in page
    assert f'data-post="../api/evolve/{toy.run_id}/decline"' in page
    assert f'data-post="../api/evolve/{toy.run_id}/pause"' not in page  # not running
    assert TOKEN not in page

    # An empty direction, a pause of a run that is not running, a resume of one that waits
    # for a person: each refused with the runner's one line.
    for verb, body in (("answer", {"text": "  "}), ("pause", {}), ("resume", {})):
        refused = caller.post(f"/api/evolve/{toy.run_id}/{verb}", body)
        assert refused.status_code == 409, (verb, refused.get_json())
        assert "\n" not in refused.get_json()["error"]

    answered = caller.post(f"/api/evolve/{toy.run_id}/answer", {"text": "Try a closed form."})
    assert answered.status_code == 202, answered.get_json()
    assert answered.get_json() == {"started": "advance", "run_id": toy.run_id}
    wait(app)
    assert status_of(caller, toy.run_id) == ("stopped", "target")
    page = caller.client.get(f"/runs/{toy.run_id}.html").get_data(as_text=True)
    assert "Try a closed form." in page and 'data-post="../api/evolve' not in page
    again = caller.post(f"/api/evolve/{toy.run_id}/answer", {"text": "x"})
    assert again.status_code == 409 and "not waiting" in again.get_json()["error"]


def test_a_run_is_paused_resumed_and_declined_and_stopped(toy: Toy) -> None:
    app = app_of(toy)
    caller = Caller(app.test_client())
    # A direction recorded and the run not carried on (as a process killed after it would):
    # a running run that no process runs.
    with evolve_runner(str(toy.config), run=False) as runner:
        runner.answer(toy.run_id, "Try a closed form.")
    assert status_of(caller, toy.run_id) == ("running", None)
    paused = caller.post(f"/api/evolve/{toy.run_id}/pause", {})
    assert paused.status_code == 200 and paused.get_json() == {
        "done": "pause",
        "run_id": toy.run_id,
    }
    assert status_of(caller, toy.run_id) == ("paused", None)
    page = caller.client.get(f"/runs/{toy.run_id}.html").get_data(as_text=True)
    assert f'data-post="../api/evolve/{toy.run_id}/resume"' in page
    assert caller.post(f"/api/evolve/{toy.run_id}/decline", {}).status_code == 409  # not asked
    resumed = caller.post(f"/api/evolve/{toy.run_id}/resume", {})
    assert resumed.status_code == 202, resumed.get_json()
    wait(app)
    assert status_of(caller, toy.run_id) == ("stopped", "target")
    for verb in ("stop", "resume", "pause"):  # it has ended, for good
        assert caller.post(f"/api/evolve/{toy.run_id}/{verb}", {}).status_code == 409, verb

    # Another run, asking: declined, it ends; stopped, a third ends by a person's word.
    env = {**os.environ}
    second = json.loads(run(FREEMAD, "evolve", "start", "--json", GOAL, cwd=toy.folder, env=env))
    third = json.loads(run(FREEMAD, "evolve", "start", "--json", GOAL, cwd=toy.folder, env=env))
    declined = caller.post(f"/api/evolve/{second['run_id']}/decline", {})
    assert declined.status_code == 200, declined.get_json()
    assert status_of(caller, second["run_id"]) == ("stopped", "declined")
    stopped = caller.post(f"/api/evolve/{third['run_id']}/stop", {})
    assert stopped.status_code == 200, stopped.get_json()
    assert status_of(caller, third["run_id"]) == ("stopped", "user")


def test_every_evolve_post_refuses_a_bad_token_csrf_verb_body_or_run(
    toy: Toy, tmp_path: Path
) -> None:
    app = app_of(toy)
    caller = Caller(app.test_client())
    base = f"/api/evolve/{toy.run_id}"
    for verb, body in (
        ("answer", {"text": "x"}),
        ("decline", {}),
        ("pause", {}),
        ("resume", {}),
        ("stop", {}),
    ):
        for headers, status in (
            ({}, 401),
            ({"Authorization": "Bearer wrong", "X-CSRF-Token": caller.csrf}, 401),
            ({"Authorization": TOKEN, "X-CSRF-Token": caller.csrf}, 401),
            ({"Authorization": f"Bearer {TOKEN}"}, 403),
            ({"Authorization": f"Bearer {TOKEN}", "X-CSRF-Token": caller.csrf + "x"}, 403),
        ):
            refused = caller.post(f"{base}/{verb}", body, headers)
            assert refused.status_code == status, (verb, headers)
            assert "error" in refused.get_json()
    # Another toy's run: its store is not one this dashboard shows.
    other_env = {**os.environ}
    (tmp_path / "elsewhere").mkdir()
    other = waiting_toy(tmp_path / "elsewhere" / "toy", other_env)
    for path, body, status in (
        (f"{base}/answer", {"text": "x" * 20_001}, 400),
        (f"{base}/answer", {"text": ["x"]}, 400),
        (f"{base}/answer", {}, 400),
        (f"{base}/answer", ["x"], 400),
        (f"{base}/answer", {"text": "x", "config": "/etc/passwd"}, 400),
        (f"{base}/answer", {"text": "x", "config_path": str(other.config)}, 400),
        (f"{base}/resume", {"store": str(other.store)}, 400),
        (f"{base}/resume", {"cli_command": "sh -c id"}, 400),
        (f"{base}/pause", {"argv": ["sh", "-c", "id"]}, 400),
        (f"{base}/stop", {"run_id": other.run_id}, 400),
        (f"{base}/delete", {}, 404),
        (f"{base}/sh", {}, 404),
        ("/api/evolve/$(id)/pause", {}, 400),
        ("/api/evolve/..%2F..%2Fetc/pause", {}, 405),  # no such route
        ("/api/evolve/0123456789abcdef/stop", {}, 404),  # no such run
        (f"/api/evolve/{other.run_id}/stop", {}, 404),
        (f"/api/evolve/{other.run_id}/answer", {"text": "x"}, 404),
    ):
        refused = caller.post(path, body)
        assert refused.status_code == status, (path, body, refused.get_json())
        assert "error" in refused.get_json() and "Traceback" not in refused.get_json()["error"]
    # Nothing moved: both runs still wait for a person.
    assert status_of(caller, toy.run_id) == ("waiting_for_human", None)
    with evolve_runner(str(other.config), run=False) as runner:
        assert runner.state(other.run_id).status.value == "waiting_for_human"


def test_a_dashboard_that_does_not_show_the_configs_evolve_store_steers_none(toy: Toy) -> None:
    (toy.folder.parent / "empty").mkdir()
    empty = toy.folder.parent / "empty" / "evolve.db"
    app = app_of(toy, evolve_store=empty)  # a store named, not the config's
    caller = Caller(app.test_client())
    refused = caller.post(f"/api/evolve/{toy.run_id}/stop", {})
    assert refused.status_code == 405, refused.get_json()
    with evolve_runner(str(toy.config), run=False) as runner:
        assert runner.state(toy.run_id).status.value == "waiting_for_human"


def test_a_run_is_paused_and_resumed_from_its_page_in_chromium(toy: Toy, tmp_path: Path) -> None:
    chromium()  # skips, saying why, where there is none
    with evolve_runner(str(toy.config), run=False) as runner:  # running, and no process runs it
        runner.answer(toy.run_id, "Try a closed form.")
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    args = (
        "--dir",
        str(transcripts),
        "--evolve-store",
        str(toy.store),
        "--config",
        str(toy.config),
    )
    with serve(tmp_path, *args, "--allow-start", env={"FREEMAD_DASHBOARD_TOKEN": TOKEN}) as served:
        page = LivePage(f"{served.url}/runs/{toy.run_id}.html")
        try:
            page.wait_for(
                "!!document.querySelector('form[data-post$=\"/pause\"]')"
                " && !document.getElementById('controls').hidden",
                "the pause button",
            )
            page.evaluate(
                f"document.getElementById('token').value = {json.dumps(TOKEN)};"
                "document.querySelector('form[data-post$=\"/pause\"]').requestSubmit(); true"
            )
            page.wait_for(
                "!!document.querySelector('h1 + p.meta .badge.s-paused')"
                " && !!document.querySelector('form[data-post$=\"/resume\"]')",
                "the page to show the run paused, with a resume button",
                60,
            )
            assert page.evaluate("document.getElementById('token').value") == ""
            # The token is kept for the tab: the next step needs no pasting.
            page.evaluate(
                "document.querySelector('form[data-post$=\"/resume\"]').requestSubmit(); true"
            )
            page.wait_for(
                "!!document.querySelector('h1 + p.meta .badge.s-stopped')",
                "the page to show the run carried to its end",
                120,
            )
            status, body = served.get(f"/api/runs/{toy.run_id}")
            assert status == 200 and json.loads(body)["view"]["stop_reason"] == "target"
            assert TOKEN not in page.evaluate("document.documentElement.outerHTML")
        finally:
            page.close()
