"""The configs a dashboard may start runs with (`freemad-dashboard --config A --config B`), each
known to the browser only by a short name: its file's stem, made unique. The browser sends that
name; the server maps it to its own path, so no path ever comes from a request. Each is shown
read-only, its secrets hidden, at `/config.html` and `/api/config`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from flask import Flask, Response, jsonify

from freemad.config.discover import BUILTIN
from freemad.dashboard.http_errors import Problem, html
from freemad.dashboard.run_records import unique_name

if TYPE_CHECKING:
    from freemad.config.discover import LoadedConfig
    from freemad.config.models import FreemadConfig

_T = TypeVar("_T")

BUILT_IN = "built-in"  # the name of the built-in mock agents' config (no file given)
BUILT_IN_SOURCE = "the built-in mock agents"
MAX_NAME = 100
REDACTED = "[redacted]"


@dataclass(frozen=True)
class NamedConfig:
    name: str  # what the browser sends
    path: str | None  # absolute (or builtin:NAME); None: the built-in mock agents


# The server's configs as this process first read them, by (how, path). gunicorn's master reads
# them before its workers fork (`read_at_start`), so a worker that boots later (one that crashed
# or hit its timeout, one TTIN adds) starts with the configs the server started with, even if a
# file was edited into an invalid one since: that would stop its boot, and gunicorn's master
# stops the whole server when a worker cannot boot. A HUP reads them again (`read_again`).
_READ: dict[tuple[str, str | None], Any] = {}


def _once(how: str, path: str | None, read: Callable[[str | None], _T]) -> _T:
    key = (how, config_path(path))
    if key not in _READ:
        _READ[key] = read(key[1])
    value: _T = _READ[key]
    return value


def config_as_written(path: str | None) -> FreemadConfig:
    """The config at `path` (None: the built-in mock agents) as a debate reads it, its relative
    paths as written; read once per process."""
    return _once("written", path, _read_as_written)


def config_resolved(path: str) -> LoadedConfig:
    """The config at `path` as the CLI finds it, its relative paths taken from its folder; read
    once per process."""
    from freemad.config.discover import load

    return _once("resolved", path, load)


def _read_as_written(path: str | None) -> FreemadConfig:
    from freemad.config import default_config, load_config

    return load_config(path) if path else default_config()


def read_at_start(paths: Sequence[str | None]) -> None:
    """Read each of the server's configs (`paths`) as the app will ask for it. Raises the first
    config's error (FreemadError), keeping what was read before."""
    for path in paths or (None,):
        config_as_written(path)
        if path is not None:
            config_resolved(path)


def read_again(paths: Sequence[str | None]) -> str | None:
    """Read the server's configs afresh; if one cannot be read, keep those read before and
    return why (one line), else None."""
    from freemad.errors import FreemadError

    before = dict(_READ)
    _READ.clear()
    try:
        read_at_start(paths)
    except FreemadError as exc:
        _READ.clear()
        _READ.update(before)
        return exc.one_line()
    return None


def config_path(given: str | None) -> str | None:
    """A config named to the server, as its processes find it again from any folder."""
    if not given or given.startswith(BUILTIN):
        return given or None
    return str(Path(given).absolute())


class ServerConfigs:
    """The server's configs in the order given, the first the default."""

    def __init__(self, paths: Sequence[str | None]) -> None:
        named: list[NamedConfig] = []
        taken: set[str] = set()
        for given in paths or (None,):
            path = config_path(given)
            named.append(NamedConfig(unique_name(_stem(path), taken), path))
        self.all = tuple(named)

    def __iter__(self) -> Iterator[NamedConfig]:
        return iter(self.all)

    @property
    def default(self) -> NamedConfig:
        return self.all[0]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.all]

    def chosen(self, body: dict[str, Any]) -> NamedConfig:
        """The config a request's `config` names (the default when it names none); an unknown
        name is a 400 with one line."""
        name = body.get("config")
        if name is None:
            return self.default
        if not isinstance(name, str):
            raise Problem(400, "config must be the name of one of the server's configs")
        for config in self.all:
            if config.name == name:
                return config
        raise Problem(
            400, f"no config {name[:MAX_NAME]!r} here; one of {', '.join(self.names)[:400]}"
        )


def _stem(path: str | None) -> str:
    if path is None:
        return BUILT_IN
    if path.startswith(BUILTIN):
        return path.removeprefix(BUILTIN) or BUILT_IN
    return Path(path).stem or "config"


class ConfigPages:
    """`/config.html`, `/api/config` and `/api/config/schema`: each of the server's configs,
    read-only, with what looks like a credential hidden."""

    def __init__(self, configs: ServerConfigs, loaded: Mapping[str, FreemadConfig]) -> None:
        self.configs = configs
        self.shown = {c.name: shown_config(loaded[c.name]) for c in configs}

    def register(self, app: Flask) -> None:
        app.add_url_rule("/config.html", view_func=self.config_page, methods=["GET"])
        app.add_url_rule("/api/config", view_func=self.api_config, methods=["GET"])
        app.add_url_rule("/api/config/schema", view_func=self.api_schema, methods=["GET"])

    def listed(self) -> list[dict[str, Any]]:
        return [
            {"name": c.name, "source": c.path or BUILT_IN_SOURCE, "config": self.shown[c.name]}
            for c in self.configs
        ]

    def config_page(self) -> Response:
        from freemad.dashboard.views.html_pages import render_config

        return html(render_config(self.listed()))

    def api_config(self) -> Response:
        default = self.configs.default.name
        return jsonify(
            {
                "config": self.shown[default],  # the default: the one a request naming none gets
                "default": default,
                "configs": self.listed(),
                "schema": "/api/config/schema",
            }
        )

    def api_schema(self) -> Response:
        from freemad.config.models import json_schema

        return jsonify(json_schema())


def shown_config(config: FreemadConfig) -> dict[str, Any]:
    """The config's data with what its redact patterns match, and every text under a key named
    like a credential, hidden."""
    from freemad.redact import Redactor

    data = config.model_dump(mode="json")
    shown: dict[str, Any] = _redacted(Redactor(config.security.redact_patterns).data(data))
    return shown


def _redacted(value: Any, key: str = "") -> Any:
    """The config's data with every text under a key named like a credential hidden."""
    from freemad.sandbox.process import looks_secret

    if isinstance(value, str) and value and looks_secret(key.replace("-", "_")):
        return REDACTED
    if isinstance(value, dict):
        return {k: _redacted(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value
