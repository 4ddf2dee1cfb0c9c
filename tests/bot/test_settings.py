"""BotSettings.from_env: the fixed FREEMAD_* names, one-line errors, secrets kept out of sight."""

from __future__ import annotations

from pathlib import Path

import pytest

from freemad.bot.settings import DEFAULT_MAX_BODY, BotSettings
from freemad.errors import ConfigError

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow-not-a-real-key\n-----END RSA PRIVATE KEY-----\n"
TOKEN_ENV = {"FREEMAD_WEBHOOK_SECRET": "s3cret-hook", "FREEMAD_GITHUB_TOKEN": "ghp_tok"}


def error_of(env: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as caught:
        BotSettings.from_env(env)
    line = caught.value.one_line()
    assert "\n" not in line
    return line


def test_defaults_with_a_token() -> None:
    settings = BotSettings.from_env(TOKEN_ENV)
    assert settings.auth_mode == "token"
    assert settings.github_api_url == "https://api.github.com"
    assert settings.state_dir == Path(".freemad/bot")
    assert settings.executor == "local"
    assert settings.queue_url is None
    assert settings.config_path is None
    assert settings.max_body == DEFAULT_MAX_BODY == 25 * 1024 * 1024
    assert settings.log_level == "INFO"
    assert settings.deliveries_path == Path(".freemad/bot/deliveries.sqlite3")


def test_every_name_is_read(tmp_path: Path) -> None:
    config = tmp_path / "freemad.yaml"
    config.write_text("agents: []\n")
    settings = BotSettings.from_env(
        {
            **TOKEN_ENV,
            "FREEMAD_GITHUB_API_URL": "https://ghe.example.com/api/v3/",
            "FREEMAD_CONFIG": str(config),
            "FREEMAD_STATE_DIR": str(tmp_path / "state"),
            "FREEMAD_EXECUTOR": "actions",
            "FREEMAD_QUEUE_URL": "redis://:pw@localhost:6379/0",
            "FREEMAD_MAX_BODY": "4096",
            "FREEMAD_LOG_LEVEL": "debug",
        }
    )
    assert settings.github_api_url == "https://ghe.example.com/api/v3"
    assert settings.config_path == config
    assert settings.state_dir == tmp_path / "state"
    assert settings.executor == "actions"
    assert settings.queue_url is not None
    assert settings.max_body == 4096
    assert settings.log_level == "DEBUG"
    assert "pw" in settings.secret_values()


def test_the_app_key_is_pem_text_or_a_path(tmp_path: Path) -> None:
    base = {"FREEMAD_WEBHOOK_SECRET": "s", "FREEMAD_APP_ID": "12345"}
    inline = BotSettings.from_env({**base, "FREEMAD_APP_PRIVATE_KEY": PEM})
    one_line = BotSettings.from_env({**base, "FREEMAD_APP_PRIVATE_KEY": PEM.replace("\n", "\\n")})
    key_file = tmp_path / "app.pem"
    key_file.write_text(PEM)
    from_file = BotSettings.from_env({**base, "FREEMAD_APP_PRIVATE_KEY": str(key_file)})
    for settings in (inline, one_line, from_file):
        assert settings.auth_mode == "app" and settings.app_id == "12345"
        assert settings.app_private_key is not None
        assert settings.app_private_key.get_secret_value().strip() == PEM.strip()


def test_secrets_stay_out_of_repr() -> None:
    settings = BotSettings.from_env({**TOKEN_ENV, "FREEMAD_QUEUE_URL": "redis://:pw-x@h/0"})
    for text in (repr(settings), str(settings), settings.model_dump_json()):
        assert "s3cret-hook" not in text and "ghp_tok" not in text and "pw-x" not in text


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"FREEMAD_GITHUB_TOKEN": "t"}, "FREEMAD_WEBHOOK_SECRET"),
        ({"FREEMAD_WEBHOOK_SECRET": "  ", "FREEMAD_GITHUB_TOKEN": "t"}, "FREEMAD_WEBHOOK_SECRET"),
        ({"FREEMAD_WEBHOOK_SECRET": "s"}, "FREEMAD_GITHUB_TOKEN"),
        ({**TOKEN_ENV, "FREEMAD_APP_ID": "1"}, "not both"),
        ({"FREEMAD_WEBHOOK_SECRET": "s", "FREEMAD_APP_ID": "1"}, "FREEMAD_APP_PRIVATE_KEY"),
        ({"FREEMAD_WEBHOOK_SECRET": "s", "FREEMAD_APP_PRIVATE_KEY": PEM}, "FREEMAD_APP_ID"),
        ({**TOKEN_ENV, "FREEMAD_EXECUTOR": "cloud"}, "FREEMAD_EXECUTOR"),
        ({**TOKEN_ENV, "FREEMAD_MAX_BODY": "lots"}, "FREEMAD_MAX_BODY"),
        ({**TOKEN_ENV, "FREEMAD_MAX_BODY": "0"}, "FREEMAD_MAX_BODY"),
        ({**TOKEN_ENV, "FREEMAD_LOG_LEVEL": "loud"}, "FREEMAD_LOG_LEVEL"),
        ({**TOKEN_ENV, "FREEMAD_GITHUB_API_URL": "api.github.com"}, "FREEMAD_GITHUB_API_URL"),
        ({**TOKEN_ENV, "FREEMAD_CONFIG": "/no/such/freemad.yaml"}, "FREEMAD_CONFIG"),
    ],
)
def test_problems_are_one_line_naming_the_variable(env: dict[str, str], names: str) -> None:
    assert names in error_of(env)


def test_a_bad_key_path_is_named_without_its_content(tmp_path: Path) -> None:
    base = {"FREEMAD_WEBHOOK_SECRET": "s", "FREEMAD_APP_ID": "1"}
    assert "FREEMAD_APP_PRIVATE_KEY" in error_of(
        {**base, "FREEMAD_APP_PRIVATE_KEY": str(tmp_path / "absent.pem")}
    )
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("hello")
    assert "not a PEM file" in error_of({**base, "FREEMAD_APP_PRIVATE_KEY": str(not_pem)})


def test_a_bad_queue_url_is_not_echoed() -> None:
    line = error_of({**TOKEN_ENV, "FREEMAD_QUEUE_URL": "amqp://user:hunter2@mq"})
    assert "FREEMAD_QUEUE_URL" in line and "hunter2" not in line


def test_settings_are_frozen() -> None:
    settings = BotSettings.from_env(TOKEN_ENV)
    with pytest.raises(ValueError, match="frozen"):
        settings.max_body = 1  # type: ignore[misc]
