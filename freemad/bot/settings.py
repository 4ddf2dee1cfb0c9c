"""The bot's settings, read once from the environment (the fixed `FREEMAD_*` names of docs/bot.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from freemad.errors import ConfigError
from freemad.github.pulls import web_url_of

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_STATE_DIR = ".freemad/bot"
# GitHub caps webhook payloads at 25 MB; anything larger is not from GitHub.
DEFAULT_MAX_BODY = 25 * 1024 * 1024
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
ExecutorName = Literal["local", "actions"]


class BotSettings(BaseModel):
    """Everything the bot's processes need to know; secrets are `SecretStr`, hidden from repr."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    webhook_secret: SecretStr
    github_api_url: str = DEFAULT_API_URL
    github_token: SecretStr | None = None
    app_id: str | None = None
    app_private_key: SecretStr | None = None  # the PEM text, read from the file when given a path
    config_path: Path | None = None  # None: the built-in default config
    state_dir: Path = Path(DEFAULT_STATE_DIR)
    executor: ExecutorName = "local"
    queue_url: SecretStr | None = (
        None  # redis://... may carry a password; None: SQLite in state_dir
    )
    max_body: int = DEFAULT_MAX_BODY
    log_level: LogLevel = "INFO"
    run_store: Literal["local", "branch"] = (
        "local"  # where jobs keep runs (freemad/bot/run_store.py)
    )
    git_url: str | None = None  # the repositories' git URL with {repo}; None: from the API URL

    def git_remote(self, repo: str) -> str:
        """Where `repo` ("owner/name") is fetched from and pushed to: FREEMAD_GIT_URL with
        {repo}, else the web host of the API (api.github.com -> github.com; GHES's /api/v3 off)."""
        if self.git_url:
            return self.git_url.replace("{repo}", repo)
        return f"{web_url_of(self.github_api_url)}/{repo}.git"

    @property
    def auth_mode(self) -> Literal["token", "app"]:
        return "token" if self.github_token is not None else "app"

    @property
    def deliveries_path(self) -> Path:
        """The SQLite delivery log the web edge dedupes against."""
        return self.state_dir / "deliveries.sqlite3"

    def secret_values(self) -> list[str]:
        """Every secret's text, for log redaction: never log these, never answer with them."""
        values = [self.webhook_secret.get_secret_value()]
        for secret in (self.github_token, self.app_private_key, self.queue_url):
            if secret is not None:
                values.append(secret.get_secret_value())
        if self.queue_url is not None:
            password = _url_password(self.queue_url.get_secret_value())
            if password:
                values.append(password)
        return [value for value in values if value]

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> BotSettings:
        """Read the settings; a missing or malformed one raises a one-line `ConfigError`."""

        def get(name: str) -> str | None:
            value = environ.get(name, "").strip()
            return value or None  # an empty variable (say, from an env file) counts as unset

        secret = get("FREEMAD_WEBHOOK_SECRET")
        if secret is None:
            raise ConfigError(
                "FREEMAD_WEBHOOK_SECRET is not set",
                hint="the webhook secret of the GitHub App, as entered in its settings",
            )
        token, app_id, key = (
            get("FREEMAD_GITHUB_TOKEN"),
            get("FREEMAD_APP_ID"),
            get("FREEMAD_APP_PRIVATE_KEY"),
        )
        _check_auth(token=token, app_id=app_id, key=key)
        config_path = get("FREEMAD_CONFIG")
        if config_path is not None and not Path(config_path).is_file():
            raise ConfigError(f"FREEMAD_CONFIG: no file at {config_path}")
        fields: dict[str, object] = {
            "webhook_secret": secret,
            "github_api_url": _api_url(get("FREEMAD_GITHUB_API_URL") or DEFAULT_API_URL),
            "github_token": token,
            "app_id": app_id,
            "app_private_key": _private_key(key) if key is not None else None,
            "config_path": config_path,
            "state_dir": get("FREEMAD_STATE_DIR") or DEFAULT_STATE_DIR,
            "executor": _choice("FREEMAD_EXECUTOR", get("FREEMAD_EXECUTOR"), ("local", "actions")),
            "queue_url": _queue_url(get("FREEMAD_QUEUE_URL")),
            "max_body": _max_body(get("FREEMAD_MAX_BODY")),
            "run_store": _choice(
                "FREEMAD_RUN_STORE", get("FREEMAD_RUN_STORE"), ("local", "branch")
            ),
            "git_url": _git_url(get("FREEMAD_GIT_URL")),
            "log_level": _choice(
                "FREEMAD_LOG_LEVEL", (get("FREEMAD_LOG_LEVEL") or "INFO").upper(), LOG_LEVELS
            ),
        }
        try:
            return cls.model_validate({k: v for k, v in fields.items() if v is not None})
        except ValidationError as exc:  # not expected after the checks above; still one line
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            raise ConfigError(f"bot settings: {where}: {error['msg']}") from None


def _check_auth(*, token: str | None, app_id: str | None, key: str | None) -> None:
    app = app_id is not None or key is not None
    if token is not None and app:
        raise ConfigError(
            "set FREEMAD_GITHUB_TOKEN or FREEMAD_APP_ID + FREEMAD_APP_PRIVATE_KEY, not both"
        )
    if token is None and not app:
        raise ConfigError(
            "no GitHub credentials: set FREEMAD_APP_ID + FREEMAD_APP_PRIVATE_KEY "
            "(a GitHub App) or FREEMAD_GITHUB_TOKEN"
        )
    if app and app_id is None:
        raise ConfigError("FREEMAD_APP_PRIVATE_KEY is set but FREEMAD_APP_ID is not")
    if app and key is None:
        raise ConfigError("FREEMAD_APP_ID is set but FREEMAD_APP_PRIVATE_KEY is not")


def _private_key(value: str) -> str:
    """The PEM text itself, or the text of the PEM file the value names."""
    if "-----BEGIN" in value:
        # Env files often carry the PEM on one line with literal `\n`s.
        return value.replace("\\n", "\n") if "\n" not in value else value
    path = Path(value).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ConfigError(
            f"FREEMAD_APP_PRIVATE_KEY: neither PEM text nor a readable PEM file ({path}: {reason})"
        ) from None
    if "-----BEGIN" not in text:
        raise ConfigError(f"FREEMAD_APP_PRIVATE_KEY: {path} is not a PEM file")
    return text


def _api_url(value: str) -> str:
    if not re.match(r"https?://[^/\s]+", value):
        raise ConfigError(f"FREEMAD_GITHUB_API_URL: not an http(s) URL: {value!r}")
    return value.rstrip("/")


def _queue_url(value: str | None) -> str | None:
    if value is not None and not value.startswith(("redis://", "rediss://", "unix://")):
        # Never echo the value: a queue URL may carry a password.
        raise ConfigError(
            "FREEMAD_QUEUE_URL: expected a redis:// (or rediss://, unix://) URL",
            hint="leave it unset for the SQLite queue in FREEMAD_STATE_DIR",
        )
    return value


def _git_url(value: str | None) -> str | None:
    if value is None:
        return None
    if "{repo}" not in value:
        raise ConfigError(
            f"FREEMAD_GIT_URL is {value!r}; it needs {{repo}} where owner/name goes",
            hint="for example https://github.example.com/{repo}.git",
        )
    return value


def _max_body(value: str | None) -> int:
    if value is None:
        return DEFAULT_MAX_BODY
    try:
        size = int(value)
    except ValueError:
        size = 0
    if size <= 0:
        raise ConfigError(f"FREEMAD_MAX_BODY: expected a positive number of bytes, got {value!r}")
    return size


def _choice(name: str, value: str | None, allowed: tuple[str, ...]) -> str | None:
    if value is not None and value not in allowed:
        raise ConfigError(f"{name}: expected one of {', '.join(allowed)}, got {value!r}")
    return value


def _url_password(url: str) -> str | None:
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).password
    except ValueError:
        return None
