"""The config editor (`freemad-dashboard --allow-start --edit-config`): edits checked by the
config's models, saved at once with the version replaced kept, rolled back, two saves at once;
and each of its defences attacked: another origin, no or a wrong CSRF token, no or a wrong start
token, the editor not switched on."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.reading.sources import TranscriptDir
from tests.dashboard.browser import LivePage, chromium
from tests.dashboard.served import DASHBOARD, allowed_to_start, serve, write_mock_config

TOKEN = "start-token-for-the-config-editor"


def quiet(message: str) -> None:
    raise AssertionError(f"unexpected warning: {message}")


def editor_app(tmp_path: Path, *, edit: bool = True) -> tuple[Flask, Path]:
    (tmp_path / "transcripts").mkdir(parents=True)
    config = tmp_path / "freemad.yaml"
    write_mock_config(config, 2)
    settings = DashboardSettings(
        [TranscriptDir(tmp_path / "transcripts", quiet)],
        allow_start=True,
        start_token=TOKEN,
        config_paths=[str(config)],
        edit_config=edit,
        warn=quiet,
    )
    return create_app(settings), config


class Editor:
    """A browser's calls to the editor: the start token and the CSRF token, or what is given."""

    def __init__(self, client: FlaskClient) -> None:
        self.client = client
        self.csrf = client.get("/api/csrf").get_json()["csrf"]
        self.good = {"Authorization": f"Bearer {TOKEN}", "X-CSRF-Token": self.csrf}

    def post(self, verb: str, body: dict[str, Any], **headers: str) -> TestResponse:
        sent = {**self.good, **{k.replace("_", "-"): v for k, v in headers.items()}}
        return self.client.post(
            f"/api/config/{verb}", json={"config": "freemad", **body}, headers=sent
        )

    def opened(self) -> dict[str, Any]:
        answer = self.post("source", {})
        assert answer.status_code == 200, answer.get_data(as_text=True)
        body: dict[str, Any] = answer.get_json()
        return body


def with_rounds(text: str, rounds: object) -> str:
    data = yaml.safe_load(text)
    data["debate"]["rounds"] = rounds
    return yaml.safe_dump(data)


def test_an_edit_is_checked_shown_as_a_diff_saved_and_rolled_back(tmp_path: Path) -> None:
    app, config = editor_app(tmp_path)
    editor = Editor(app.test_client())
    first = editor.opened()
    original = config.read_text()
    assert first["text"] == original and first["kept"] == []

    bad = with_rounds(original, 99)
    checked = editor.post("check", {"text": bad}).get_json()
    line = bad.splitlines().index("  rounds: 99") + 1
    assert checked["ok"] is False
    assert checked["problems"][0]["line"] == line
    assert "debate.rounds" in checked["problems"][0]["message"]
    refused = editor.post("save", {"text": bad, "base": first["version"]})
    assert refused.status_code == 400 and "debate.rounds" in refused.get_json()["error"]
    assert config.read_text() == original  # an edit that does not validate is never saved

    good = with_rounds(original, 1)
    checked = editor.post("check", {"text": good}).get_json()
    assert checked["ok"] is True
    assert "-  rounds: 2\n" in checked["diff"] and "+  rounds: 1\n" in checked["diff"]
    saved = editor.post("save", {"text": good, "base": first["version"]})
    assert saved.status_code == 200, saved.get_data(as_text=True)
    assert config.read_text() == good
    second = editor.opened()
    assert second["version"] == saved.get_json()["version"] != first["version"]
    assert [k["version"] for k in second["kept"]] == [first["version"]]

    back = editor.post("rollback", {"kept": second["kept"][0]["name"], "base": second["version"]})
    assert back.status_code == 200, back.get_data(as_text=True)
    assert config.read_text() == original
    assert [k["version"] for k in editor.opened()["kept"]] == [second["version"], first["version"]]
    assert (
        editor.post("rollback", {"kept": "../freemad.yaml", "base": first["version"]}).status_code
        == 404
    )


def test_each_problem_is_given_at_its_line(tmp_path: Path) -> None:
    app, config = editor_app(tmp_path)
    editor = Editor(app.test_client())
    opened = editor.opened()
    data = yaml.safe_load(opened["text"])
    data["debate"]["rounds"] = 99
    data["security"]["sandbx"] = "host"  # a misspelt key
    bad = yaml.safe_dump(data)
    lines = bad.splitlines()
    checked = editor.post("check", {"text": bad}).get_json()
    found = {p["line"]: p["message"] for p in checked["problems"]}
    assert len(checked["problems"]) == 2
    assert "debate.rounds" in found[lines.index("  rounds: 99") + 1]
    unknown = found[lines.index("  sandbx: host") + 1]
    assert "security.sandbx: unknown key" in unknown and "sandbox" in unknown  # the suggestion
    not_yaml = editor.post("check", {"text": "agents: [\n"}).get_json()
    assert not_yaml["ok"] is False and "invalid YAML" in not_yaml["problems"][0]["message"]
    assert editor.post("save", {"text": bad, "base": opened["version"]}).status_code == 400
    assert config.read_text() == opened["text"]


def test_a_linked_config_is_saved_where_the_link_points(tmp_path: Path) -> None:
    app, config = editor_app(tmp_path)
    real = tmp_path / "real" / "freemad.yaml"
    real.parent.mkdir()
    config.rename(real)
    config.symlink_to(real)
    editor = Editor(app.test_client())
    opened = editor.opened()
    saved = editor.post("save", {"text": with_rounds(opened["text"], 1), "base": opened["version"]})
    assert saved.status_code == 200
    assert config.is_symlink() and real.read_text() == with_rounds(opened["text"], 1)


def test_the_last_ten_versions_are_kept(tmp_path: Path) -> None:
    app, _config = editor_app(tmp_path)
    editor = Editor(app.test_client())
    versions = []
    for rounds in range(12):
        opened = editor.opened()
        versions.append(opened["version"])
        answer = editor.post(
            "save", {"text": with_rounds(opened["text"], rounds), "base": opened["version"]}
        )
        assert answer.status_code == 200
    kept = editor.opened()["kept"]
    assert [k["version"] for k in kept] == versions[::-1][:10]
    assert len(list((tmp_path / ".freemad.yaml.history").iterdir())) == 10


def test_a_save_of_the_text_the_file_holds_changes_nothing(tmp_path: Path) -> None:
    app, config = editor_app(tmp_path)
    editor = Editor(app.test_client())
    opened = editor.opened()
    edited = with_rounds(opened["text"], 1)
    saved = editor.post("save", {"text": edited, "base": opened["version"]}).get_json()
    assert saved["changed"] is True
    written = config.stat().st_mtime_ns
    for _ in range(3):  # three saves without an edit keep no copies of the same text
        again = editor.post("save", {"text": edited, "base": saved["version"]})
        assert again.status_code == 200, again.get_data(as_text=True)
        answer = again.get_json()
        assert answer["version"] == saved["version"] and answer["changed"] is False
        assert "unchanged" in answer["done"]
    assert [k["version"] for k in editor.opened()["kept"]] == [opened["version"]]
    assert config.read_text() == edited and config.stat().st_mtime_ns == written
    # A rollback to the text the file already holds is the same no-op.
    kept = editor.opened()["kept"][0]["name"]
    back = editor.post("rollback", {"kept": kept, "base": saved["version"]}).get_json()
    assert back["changed"] is True and config.read_text() == opened["text"]
    [newest, _] = editor.opened()["kept"]
    same = editor.post("rollback", {"kept": kept, "base": back["version"]}).get_json()
    assert same["changed"] is False and len(editor.opened()["kept"]) == 2
    assert newest["version"] == saved["version"]


def test_of_two_saves_from_one_version_the_later_is_told_and_nothing_is_lost(
    tmp_path: Path,
) -> None:
    app, config = editor_app(tmp_path)
    opened = Editor(app.test_client()).opened()
    texts = [with_rounds(opened["text"], n) for n in (0, 1)]
    start = threading.Barrier(2)
    answers: list[TestResponse] = []

    def save(text: str) -> None:
        editor = Editor(app.test_client())  # a browser of its own
        start.wait()
        answers.append(editor.post("save", {"text": text, "base": opened["version"]}))

    threads = [threading.Thread(target=save, args=(t,)) for t in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(a.status_code for a in answers) == [200, 409]
    later = next(a for a in answers if a.status_code == 409).get_json()
    assert "changed since you opened it" in later["error"]
    assert config.read_text() in texts  # the first save is the file...
    kept = Editor(app.test_client()).opened()["kept"]
    assert [k["version"] for k in kept] == [opened["version"]]  # ...and what it replaced kept
    assert later["version"] == Editor(app.test_client()).opened()["version"]


@pytest.mark.parametrize(
    ("headers", "status", "says"),
    [
        ({"Origin": "https://evil.example"}, 403, "another origin"),
        ({"Origin": "null"}, 403, "another origin"),
        ({"Sec-Fetch-Site": "cross-site"}, 403, "another site"),
        ({"X-CSRF-Token": ""}, 403, "X-CSRF-Token"),
        ({"X-CSRF-Token": "A" * 43}, 403, "X-CSRF-Token"),
        ({"Authorization": ""}, 401, "Bearer"),
        ({"Authorization": "Bearer not-the-token"}, 401, "Bearer"),
    ],
)
def test_an_edit_without_each_defence_is_refused(
    tmp_path: Path, headers: dict[str, str], status: int, says: str
) -> None:
    app, config = editor_app(tmp_path)
    editor = Editor(app.test_client())
    opened = editor.opened()
    original = config.read_text()
    sent = {**editor.good, **headers}
    for verb, body in (
        ("source", {}),
        ("save", {"text": with_rounds(original, 0), "base": opened["version"]}),
    ):
        answer = editor.client.post(
            f"/api/config/{verb}", json={"config": "freemad", **body}, headers=sent
        )
        assert answer.status_code == status, answer.get_data(as_text=True)
        assert says in answer.get_json()["error"]
        assert "rounds" not in answer.get_data(as_text=True)  # nothing of the config read
    assert config.read_text() == original


def test_a_cross_origin_post_without_the_csrf_cookie_is_refused(tmp_path: Path) -> None:
    """Another site's form can send neither the cookie (SameSite=Strict) nor the header."""
    app, config = editor_app(tmp_path)
    original = config.read_text()
    client = app.test_client()  # has never fetched /api/csrf: no cookie
    answer = client.post(
        "/api/config/save",
        json={"config": "freemad", "text": with_rounds(original, 0), "base": "0" * 64},
        headers={"Authorization": f"Bearer {TOKEN}", "X-CSRF-Token": "A" * 43},
    )
    assert answer.status_code == 403
    assert config.read_text() == original


def test_the_editor_is_off_unless_asked_for(tmp_path: Path) -> None:
    app, _config = editor_app(tmp_path, edit=False)
    editor = Editor(app.test_client())
    assert editor.client.get("/config/edit.html").status_code == 404
    assert editor.post("source", {}).status_code in (404, 405)
    assert "config/edit.html" not in editor.client.get("/").get_data(as_text=True)
    on, _ = editor_app(tmp_path / "on")
    assert "config/edit.html" in on.test_client().get("/").get_data(as_text=True)


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])  # refused before binding
def test_the_editor_needs_allow_start_and_its_token(tmp_path: Path, host: str) -> None:
    (tmp_path / "t").mkdir()
    env = {"PATH": str(Path(DASHBOARD[0]).parent), "HOME": str(tmp_path)}
    without = subprocess.run(
        [*DASHBOARD, "--dir", str(tmp_path / "t"), "--edit-config", "--host", host],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert without.returncode == 2 and "--edit-config needs --allow-start" in without.stderr
    no_token = subprocess.run(
        [
            *DASHBOARD,
            "--dir",
            str(tmp_path / "t"),
            "--allow-start",
            "--edit-config",
            "--host",
            host,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert no_token.returncode == 2 and "needs a token" in no_token.stderr
    assert "Traceback" not in without.stderr + no_token.stderr


def test_edit_refusal_and_rollback_in_a_browser(tmp_path: Path) -> None:
    """In headless Chromium against real gunicorn: an invalid edit refused with its message at
    its line, a valid one saved after its diff, then rolled back with the page's button."""
    chromium()
    _, config, args = allowed_to_start(tmp_path, 2)
    original = config.read_text()
    with serve(tmp_path, *args, "--edit-config", env={"FREEMAD_DASHBOARD_TOKEN": TOKEN}) as served:
        page = LivePage(served.url + "/config/edit.html")
        try:
            page.wait_for("!!document.getElementById('open')", "the editor")
            page.evaluate(
                f"document.getElementById('token').value = {json.dumps(TOKEN)};"
                "document.getElementById('open').click(); true"
            )
            page.wait_for("!document.getElementById('text').disabled", "the config's text")
            assert page.evaluate("document.getElementById('text').value") == original

            def edit_to(text: str) -> None:
                page.evaluate(
                    f"var t = document.getElementById('text'); t.value = {json.dumps(text)};"
                    "t.dispatchEvent(new Event('input'));"
                    "document.getElementById('check').click(); true"
                )

            edit_to(with_rounds(original, 99))
            problem = page.wait_for(
                "(document.querySelector('#problems li.bad') || {}).textContent",
                "the problem at its line",
            )
            assert "rounds: 99" in problem and "debate.rounds" in problem
            assert page.evaluate("document.getElementById('save').disabled") is True
            assert config.read_text() == original

            edit_to(with_rounds(original, 1))
            diff = page.wait_for(
                "!document.getElementById('diff').hidden && document.getElementById('diff').textContent",
                "the diff",
            )
            assert "+  rounds: 1" in diff
            page.evaluate("document.getElementById('save').click(); true")
            page.wait_for(
                "document.getElementById('said').textContent.indexOf('Saved') === 0", "the save"
            )
            assert config.read_text() == with_rounds(original, 1)

            page.evaluate("window.confirm = function () { return true; }; true")
            page.wait_for("!!document.querySelector('button.rollback')", "the kept version")
            page.evaluate("document.querySelector('button.rollback').click(); true")
            page.wait_for(
                "document.getElementById('said').textContent.indexOf('Done: rolled back') === 0",
                "the rollback",
            )
            assert config.read_text() == original
            assert page.evaluate("document.getElementById('text').value") == original
        finally:
            page.close()


def test_two_saves_at_once_on_two_gunicorn_workers(tmp_path: Path) -> None:
    """On real gunicorn with two workers (either may take either save), one save of two wins."""
    _, config, args = allowed_to_start(tmp_path, 2)
    env = {"FREEMAD_DASHBOARD_TOKEN": TOKEN}
    with serve(tmp_path, *args, "--edit-config", "--workers", "2", env=env) as served:
        status, opened = served.post("/api/config/source", TOKEN, {"config": "freemad"})
        assert status == 200
        for attempt in range(5):  # each round: two different saves from one version, at once
            base = opened["version"]
            texts = [with_rounds(opened["text"], 10 + 2 * attempt + n) for n in (0, 1)]
            answers = saved_at_once(served, texts, base)
            assert sorted(status for status, _ in answers) == [200, 409], (attempt, answers)
            status, opened = served.post("/api/config/source", TOKEN, {"config": "freemad"})
            assert opened["text"] in texts and opened["kept"][0]["version"] == base
    assert config.read_text() == opened["text"]


def saved_at_once(served: Any, texts: list[str], base: str) -> list[tuple[int, dict[str, Any]]]:
    start = threading.Barrier(len(texts))
    answers: list[tuple[int, dict[str, Any]]] = []

    def save(text: str) -> None:
        body = {"config": "freemad", "text": text, "base": base}
        start.wait()
        answers.append(served.post("/api/config/save", TOKEN, body))

    threads = [threading.Thread(target=save, args=(t,)) for t in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return answers
