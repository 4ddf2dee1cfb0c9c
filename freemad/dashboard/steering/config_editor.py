"""The config editor of the live dashboard (`freemad-dashboard --allow-start --edit-config`).

It shows the YAML of each of the server's config files. An edit is checked by the config's own
models, with each problem shown at its line, and its diff is shown before it is saved. A save
keeps the text it replaces, then replaces the file in one step. Any of the last 10 versions can
be rolled back to (`freemad.dashboard.steering.config_history`).

Every request but the page is a POST behind the checks every POST of the dashboard passes
(`Starter.refused`: same origin, the start token, the CSRF token), so another site can neither
read a config (it holds agents' commands) nor write one. The browser names a config by its short
name, never a path; a save names the version it started from, and is refused (409, the text kept
in the browser) when the file changed since.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from flask import Flask, Response, jsonify, request

from freemad.dashboard.http_errors import Problem, html, reason
from freemad.dashboard.steering.config_history import (
    MAX_TEXT,
    VERSION,
    ConfigFile,
    NoSuchVersion,
    StaleEdit,
)
from freemad.dashboard.steering.start_configs import ServerConfigs
from freemad.errors import ConfigError

_LINE = re.compile(r" line (\d+)(?=: )")  # where a config error says its problem is


def problems_of(text: str, name: str, json_syntax: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """What is wrong with a config's text, as the config's models say it, each problem with
    its `line` (None when it has none), and the deprecation warnings of a config that is right."""
    from freemad.config.load import InvalidConfig, parse_config

    warnings: list[str] = []
    try:
        parse_config(text, name=name, json_syntax=json_syntax, warn=warnings.append)
    except InvalidConfig as exc:  # every problem, each at its line
        return [
            {"line": line, "message": f"{name} line {line}: {what}" if line else f"{name}: {what}"}
            for line, what in exc.problems
        ], []
    except ConfigError as exc:  # not YAML, or not a mapping: one problem
        line = exc.one_line()
        found = _LINE.search(line)
        return [{"line": int(found[1]) if found else None, "message": line}], []
    return [], warnings


def diff_of(before: str, after: str, name: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        f"{name} (saved)",
        f"{name} (edited)",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


class ConfigEditor:
    """`/config/edit.html` and its POSTs; `refused` is the check every POST passes first."""

    def __init__(
        self, configs: ServerConfigs, refused: Callable[[], tuple[Response, int] | None]
    ) -> None:
        # Only files can be edited: the built-in mock agents' config is part of the package.
        self.files = {
            c.name: ConfigFile(c.path)
            for c in configs
            if c.path is not None and not c.path.startswith("builtin:")
        }
        self.refused = refused

    def register(self, app: Flask) -> None:
        app.add_url_rule("/config/edit.html", view_func=self.page, methods=["GET"])
        for verb, view in (
            ("source", self.source),
            ("check", self.check),
            ("save", self.save),
            ("rollback", self.rollback),
        ):
            app.add_url_rule(
                f"/api/config/{verb}", endpoint=f"config_{verb}", view_func=view, methods=["POST"]
            )

    def page(self) -> Response:
        from freemad.dashboard.views.html_pages import render_config_editor

        return html(render_config_editor(list(self.files)))

    # the POSTs

    def source(self) -> tuple[Response, int]:
        refused = self.refused()
        if refused is not None:
            return refused
        name, config = self._chosen(_body(("config",)))
        text, version = _read(config)
        kept = [
            {"name": k.name, "saved_at": k.saved_at, "version": k.version} for k in _kept(config)
        ]
        return jsonify({"config": name, "text": text, "version": version, "kept": kept}), 200

    def check(self) -> tuple[Response, int]:
        refused = self.refused()
        if refused is not None:
            return refused
        body = _body(("config", "text"))
        _, config = self._chosen(body)
        text = _text(body)
        problems, warnings = problems_of(text, config.given.name, _json(config.path))
        if problems:
            return _invalid(problems, 200)
        saved, version = _read(config)
        return jsonify(
            {
                "ok": True,
                "diff": diff_of(saved, text, config.given.name),
                "version": version,
                "warnings": warnings,
            }
        ), 200

    def save(self) -> tuple[Response, int]:
        refused = self.refused()
        if refused is not None:
            return refused
        body = _body(("config", "text", "base"))
        name, config = self._chosen(body)
        return self._write(name, config, _text(body), _base(body), "saved")

    def rollback(self) -> tuple[Response, int]:
        refused = self.refused()
        if refused is not None:
            return refused
        body = _body(("config", "kept", "base"))
        name, config = self._chosen(body)
        kept = body.get("kept")
        if not isinstance(kept, str):
            _refuse("kept must be the name of one of the config's kept versions")
        try:
            text = config.kept_text(kept)
        except NoSuchVersion:
            raise Problem(404, f"no kept version {kept[:80]!r} of {name}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise Problem(500, f"the kept version cannot be read: {reason(exc)}") from None
        return self._write(name, config, text, _base(body), f"rolled back to {kept}")

    def _write(
        self, name: str, config: ConfigFile, text: str, base: str, done: str
    ) -> tuple[Response, int]:
        problems, _ = problems_of(text, config.given.name, _json(config.path))
        if problems:  # an edit that does not validate is never saved
            return _invalid(problems, 400)
        try:
            version = config.save(text, base)
        except StaleEdit as exc:
            return jsonify(
                {
                    "error": f"{name} changed since you opened it (another save came first): "
                    "nothing was saved; your text is still here. Open the config again to "
                    "see the new version, and make your change to it.",
                    "version": exc.args[0],
                }
            ), 409
        except OSError as exc:
            raise Problem(500, f"{name} could not be saved: {reason(exc)}") from None
        if version == base:  # the text the file held: nothing written, nothing kept
            unchanged = f"{done} {name}, unchanged: it already held that text"
            return jsonify({"done": unchanged, "version": version, "changed": False}), 200
        return jsonify({"done": f"{done} {name}", "version": version, "changed": True}), 200

    def _chosen(self, body: dict[str, Any]) -> tuple[str, ConfigFile]:
        name = body.get("config")
        if not isinstance(name, str) or name not in self.files:
            names = ", ".join(self.files) or "none (the built-in config cannot be edited)"
            _refuse(f"config must name one of the server's config files: {names}"[:400])
        return name, self.files[name]


def _body(fields: tuple[str, ...]) -> dict[str, Any]:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        _refuse("send a JSON object")
    extra = sorted(str(k) for k in body if k not in fields)
    if extra:
        _refuse(f"only {', '.join(fields)} may be given, not {', '.join(extra)[:200]}")
    return body


def _text(body: dict[str, Any]) -> str:
    text = body.get("text")
    if not isinstance(text, str):
        _refuse("text must be the config's text")
    if len(text) > MAX_TEXT:
        _refuse(f"the config has {len(text)} characters; at most {MAX_TEXT}")
    return text


def _base(body: dict[str, Any]) -> str:
    base = body.get("base")
    if not isinstance(base, str) or not VERSION.fullmatch(base):
        _refuse("base must be the version the edit started from (as source gave it)")
    return base


def _read(config: ConfigFile) -> tuple[str, str]:
    try:
        return config.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise Problem(503, f"{config.given.name} cannot be read: {reason(exc)}") from None


def _kept(config: ConfigFile) -> list[Any]:
    try:
        return config.kept()
    except OSError as exc:
        raise Problem(
            503, f"{config.given.name}'s versions cannot be read: {reason(exc)}"
        ) from None


def _json(path: Path) -> bool:
    return path.suffix.lower() == ".json"


def _invalid(problems: list[dict[str, Any]], status: int) -> tuple[Response, int]:
    first = problems[0]["message"]
    return jsonify({"ok": False, "error": f"not saved: {first}", "problems": problems}), status


def _refuse(message: str) -> NoReturn:
    raise Problem(400, message)
