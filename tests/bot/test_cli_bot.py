"""`freemad bot serve` and `freemad bot worker` as commands: what they start, and with what."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from freemad.cli.bot import GUNICORN_CONF, WSGI_APP, bot_group

SECRET = "cli-test-secret"
TOKEN = "ghp_cli_test_token"


@pytest.fixture
def bot_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("FREEMAD_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("FREEMAD_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("FREEMAD_GITHUB_TOKEN", TOKEN)


def test_serve_runs_gunicorn_with_the_bot_settings(
    bot_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, list[str], dict[str, str]]] = []
    monkeypatch.setattr(os, "execve", lambda path, argv, env: calls.append((path, argv, env)))
    result = CliRunner().invoke(
        bot_group, ["serve", "--host", "::1", "--port", "9000", "--workers", "3"]
    )
    assert result.exit_code == 0, result.output
    [(path, argv, env)] = calls
    assert argv == [path, "-m", "gunicorn", "--config", GUNICORN_CONF, WSGI_APP]
    assert (env["FREEMAD_BIND"], env["FREEMAD_WORKERS"]) == ("[::1]:9000", "3")


def test_serve_refuses_to_start_without_a_secret(
    bot_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "execve", lambda *args: pytest.fail("gunicorn must not start"))
    monkeypatch.delenv("FREEMAD_WEBHOOK_SECRET", raising=False)
    result = CliRunner().invoke(bot_group, ["serve"])
    assert result.exit_code != 0
    assert "FREEMAD_WEBHOOK_SECRET" in str(result.exception)


def test_serve_help() -> None:
    result = CliRunner().invoke(bot_group, ["serve", "--help"])
    assert result.exit_code == 0
    assert "--host" in result.output and "--port" in result.output and "--workers" in result.output


def test_worker_hands_its_options_to_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str] | None] = []

    def fake_main(argv: list[str] | None = None) -> int:
        calls.append(argv)
        return 3

    monkeypatch.setattr("freemad.bot.worker.main", fake_main)
    result = CliRunner().invoke(bot_group, ["worker", "--workers", "4", "--help"])
    assert result.exit_code == 3
    assert calls == [["--workers", "4", "--help"]]
