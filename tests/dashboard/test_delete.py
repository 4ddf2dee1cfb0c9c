"""Deleting a debate's transcript (and paging /api/runs) from the live dashboard (`--allow-start` only): the page's form,
`POST /api/runs/<id>/delete` behind the start token and the CSRF check, attacked (no token, a
wrong one, no CSRF token, a task's id, a path, a symbolic link, an evaluation's transcript, a
debate in flight), and then through real gunicorn and, where Chromium is, the page's button."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from freemad.core.run_events import Event
from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.reading.eval_folders import EvalFolder
from freemad.dashboard.reading.sources import build_sources
from freemad.debate.live_journal import LiveJournal
from freemad.redact import Redactor
from tests.dashboard.browser import LivePage, chromium
from tests.dashboard.runs import FREEMAD, environment, run, start_plan_task
from tests.dashboard.served import Served, serve
from tests.dashboard.test_steering import TOKEN, Caller, smoke_config, warns


def debates(work: Path, count: int) -> tuple[Path, list[str]]:
    """`count` debates of the bundled mock agents, run by the CLI from `work`; their folder."""
    work.mkdir(exist_ok=True)
    env = environment(work)
    ids = [
        json.loads(
            run(FREEMAD, f"Say {n}.", "--rounds", "0", "--json", "--quiet", cwd=work, env=env)
        )["run_id"]
        for n in range(count)
    ]
    return work / "transcripts", ids


def file_of(folder: Path, run_id: str) -> Path:
    found = [p for p in folder.glob("*.json") if run_id in p.read_text()]
    assert len(found) == 1, found
    return found[0]


def app_of(folder: Path, *, allow_start: bool = True, **extra: Any) -> Flask:
    config, store = smoke_config(folder.parent)
    sources = build_sources(
        transcripts=str(folder), task_store=str(store), warn=warns, say_missing=False
    )
    return create_app(
        DashboardSettings(
            sources,
            allow_start=allow_start,
            start_token=TOKEN if allow_start else None,
            config_paths=[str(config)],
            warn=warns,
            **extra,
        )
    )


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, list[str]]:
    return debates(tmp_path / "work", 2)


def test_a_finished_debate_is_deleted_with_the_token_and_csrf_and_nothing_else(
    two: tuple[Path, list[str]],
) -> None:
    folder, (gone, kept) = two
    app = app_of(folder)
    caller = Caller(app.test_client())
    page = caller.client.get(f"/runs/{gone}.html").get_data(as_text=True)
    assert f'data-post="../api/runs/{gone}/delete"' in page and TOKEN not in page

    answer = caller.post(f"/api/runs/{gone}/delete", {})
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json() == {"done": f"deleted run {gone}", "deleted": gone}
    assert [p.name for p in folder.glob("*.json")] == [file_of(folder, kept).name]
    assert caller.client.get(f"/api/runs/{gone}").status_code == 404
    listed = [r["run_id"] for r in caller.client.get("/api/runs").get_json()["runs"]]
    assert gone not in listed and kept in listed
    again = caller.post(f"/api/runs/{gone}/delete", {})
    assert again.status_code == 404 and again.get_json()["error"] == f"no run {gone}"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer not-the-token", "X-CSRF-Token": "set below"},
        {"Authorization": f"Basic {TOKEN}", "X-CSRF-Token": "set below"},
        {"Authorization": f"Bearer {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN}", "X-CSRF-Token": "a" * 43},
    ],
    ids=["nothing", "wrong-token", "not-bearer", "no-csrf", "wrong-csrf"],
)
def test_without_the_token_and_the_csrf_token_nothing_is_deleted(
    two: tuple[Path, list[str]], headers: dict[str, str]
) -> None:
    folder, (target, _) = two
    caller = Caller(app_of(folder).test_client())
    if headers.get("X-CSRF-Token") == "set below":
        headers = {**headers, "X-CSRF-Token": caller.csrf}
    answer = caller.post(f"/api/runs/{target}/delete", {}, headers=headers)
    assert answer.status_code in (401, 403), answer.get_json()
    assert file_of(folder, target).is_file()


def test_a_read_only_dashboard_offers_no_delete_and_refuses_one(
    two: tuple[Path, list[str]],
) -> None:
    folder, (target, _) = two
    client = app_of(folder, allow_start=False).test_client()
    assert "/delete" not in client.get(f"/runs/{target}.html").get_data(as_text=True)
    answer = client.post(f"/api/runs/{target}/delete", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 405
    assert file_of(folder, target).is_file()


def test_only_a_debate_in_the_servers_folder_is_deleted(tmp_path: Path) -> None:
    folder, (target,) = debates(tmp_path / "work", 1)
    # A task: a store is an append-only log, never edited from the browser.
    config, store = smoke_config(tmp_path / "work")  # the store the dashboard reads
    work = tmp_path / "work"
    task = start_plan_task(str(config), work, "Plan a cache.", environment(work))
    before = store.read_bytes()
    caller = Caller(app_of(folder).test_client())
    refused = caller.post(f"/api/runs/{task}/delete", {})
    assert refused.status_code == 409
    assert refused.get_json()["error"] == f"only debates can be deleted here; run {task} is a task"
    assert store.read_bytes() == before
    assert "/delete" not in caller.client.get(f"/runs/{task}.html").get_data(as_text=True)
    # A path where the id goes matches no run (or, with its slashes, no route).
    for hostile in ("..%2F..%2Fetc%2Fpasswd", "..", "%2e%2e", target + "%00", target + ".json"):
        answer = caller.post(f"/api/runs/{hostile}/delete", {})
        assert answer.status_code in (404, 405), (hostile, answer.status_code)
    assert file_of(folder, target).is_file()


def test_a_symbolic_link_is_removed_and_what_it_points_to_is_kept(tmp_path: Path) -> None:
    elsewhere, (target,) = debates(tmp_path / "work", 1)
    folder = tmp_path / "shown"
    folder.mkdir()
    original = file_of(elsewhere, target)
    (folder / original.name).symlink_to(original)
    caller = Caller(app_of(folder).test_client())
    answer = caller.post(f"/api/runs/{target}/delete", {})
    assert answer.status_code == 200, answer.get_json()
    assert not (folder / original.name).is_symlink() and original.is_file()


def test_an_evaluations_transcripts_and_a_debate_in_flight_are_not_deleted(
    tmp_path: Path,
) -> None:
    folder, (finished,) = debates(tmp_path / "work", 1)
    evaluation = tmp_path / "eval"
    (evaluation / "transcripts").mkdir(parents=True)
    graded = evaluation / "transcripts" / "graded.json"
    data = json.loads(file_of(folder, finished).read_text())
    data["run_id"] = "e" * 32
    graded.write_text(json.dumps(data))
    (evaluation / "report.json").write_text(json.dumps({"methods": {}}))
    in_flight = "f" * 32
    with LiveJournal(folder, Redactor([])) as journal:
        journal(Event(in_flight, 0, time.time(), "run_started", {"requirement": "Wait."}))
        caller = Caller(app_of(folder, evals=[EvalFolder(evaluation, "eval")]).test_client())
        assert caller.client.get(f"/api/runs/{in_flight}").get_json()["status"] == "running"
        refused = caller.post(f"/api/runs/{in_flight}/delete", {})
        assert refused.status_code == 409
        assert refused.get_json()["error"] == (
            f"debate {in_flight} is still running; delete it once it ends"
        )
        assert journal.path is not None and journal.path.is_file()
    assert caller.client.get(f"/api/runs/{'e' * 32}").status_code == 200
    refused = caller.post(f"/api/runs/{'e' * 32}/delete", {})
    assert refused.status_code == 409
    assert "not in the dashboard's transcripts folder" in refused.get_json()["error"]
    assert graded.is_file()


def delete_over_http(served: Served, run_id: str, token: str) -> tuple[int, dict[str, Any]]:
    return served.post(f"/api/runs/{run_id}/delete", token)


def test_the_live_server_deletes_over_http(tmp_path: Path) -> None:
    folder, (gone, kept) = debates(tmp_path / "work", 2)
    env = {"FREEMAD_DASHBOARD_TOKEN": TOKEN}
    with serve(tmp_path, "--dir", str(folder), "--allow-start", env=env) as served:
        # Paging, as the live server answers it: one run a page, two pages.
        pages = [json.loads(served.get(f"/api/runs?page={n}&limit=1")[1]) for n in (1, 2)]
        assert [(p["page"], p["limit"], p["total"], p["pages"]) for p in pages] == [
            (1, 1, 2, 2),
            (2, 1, 2, 2),
        ]
        assert {p["runs"][0]["run_id"] for p in pages} == {gone, kept}
        assert served.get("/api/runs?page=0")[0] == 400
        status, body = delete_over_http(served, gone, "a-wrong-token-of-some-length")
        assert status == 401, body
        status, body = delete_over_http(served, gone, TOKEN)
        assert (status, body["deleted"]) == (200, gone)
        assert served.get(f"/api/runs/{gone}")[0] == 404
        assert served.get(f"/api/runs/{kept}")[0] == 200
        after = json.loads(served.get("/api/runs?page=1")[1])
        assert (after["total"], [r["run_id"] for r in after["runs"]]) == (1, [kept])
    assert [p.name for p in folder.glob("*.json")] == [file_of(folder, kept).name]


def test_the_pages_button_deletes_after_asking_and_goes_to_the_index(tmp_path: Path) -> None:
    chromium()  # skips, saying why, where there is none
    folder, (gone, kept) = debates(tmp_path / "work", 2)
    env = {"FREEMAD_DASHBOARD_TOKEN": TOKEN}
    with serve(tmp_path, "--dir", str(folder), "--allow-start", env=env) as served:
        page = LivePage(f"{served.url}/runs/{gone}.html")
        try:
            page.wait_for("!document.getElementById('controls').hidden", "the delete form")
            # Declined first: nothing is sent.
            page.evaluate(
                "window.confirm = function () { return false; };"
                f"document.getElementById('token').value = {json.dumps(TOKEN)};"
                "document.querySelector('form[data-confirm]').requestSubmit(); true"
            )
            assert served.get(f"/api/runs/{gone}")[0] == 200
            page.evaluate(
                "window.confirm = function () { return true; };"
                "document.querySelector('form[data-confirm]').requestSubmit(); true"
            )
            page.wait_for("location.pathname.endsWith('/index.html')", "the index", 30)
        finally:
            page.close()
        assert served.get(f"/api/runs/{gone}")[0] == 404
        assert served.get(f"/api/runs/{kept}")[0] == 200
