"""Tasks started and steered from the browser, and the server's config shown read-only: only
with `--allow-start`, and every POST behind the start token and the CSRF check of
`freemad.dashboard.starter` (`Starter.refused`).

The browser names a verb and gives text, never a command, a path or a config: a task runs with
the server's config, in the task store the dashboard reads, in the folder the server was started
in. Steps that call no agent (an answer recorded, a stage approved or rejected, a pause) are
appended here, so a refusal is an answer (409 with the runner's one line); the agent work that
follows (a task started, carried on after an answer, resumed) runs in a process of its own
(`Starter.launch`), which the start token and FREE-MAD's credentials do not reach.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from flask import Flask, Response, jsonify, request

from freemad.dashboard.answers import Problem, html
from freemad.dashboard.render import render_config
from freemad.dashboard.sources import RUN_ID, Source
from freemad.dashboard.starter import Starter
from freemad.errors import FreemadError

if TYPE_CHECKING:
    from freemad.config.models import FreemadConfig
    from freemad.tasks.runtime import TaskRunner

MAX_TEXT = 20_000  # characters of a goal, an answer or a reason
MAX_STAGE = 100
# The verbs of a task's page, each with the fields its body must hold (and nothing else).
VERBS: dict[str, tuple[str, ...]] = {
    "answer": ("text",),
    "approve": ("stage",),
    "reject": ("stage", "reason"),
    "pause": (),
    "resume": (),
}
REDACTED = "[redacted]"


def server_config(config_path: str | None) -> FreemadConfig:
    """The config the server starts runs with, its relative paths taken from its folder (as the
    CLI loads it); without one, the built-in mock agents (as `Starter` runs debates)."""
    from freemad.config import default_config
    from freemad.config.discover import load

    return load(config_path).config if config_path else default_config()


def task_config(config_path: str | None, store: str) -> FreemadConfig:
    """The server's config, its tasks kept in `store` (artifacts beside it, as the dashboard
    reads them)."""
    config = server_config(config_path)
    task = config.task.model_copy(
        update={"store_path": store, "artifacts_dir": str(Path(store).parent / "artifacts")}
    )
    return config.model_copy(update={"task": task})


@contextmanager
def task_runner(config_path: str | None, store: str, *, run: bool) -> Iterator[TaskRunner]:
    """A runner on the task store; with `run`, handed the real adapters (it calls agents)."""
    from freemad.tasks.runtime import TaskRunner
    from freemad.wiring import ADAPTERS, open_task_store

    config = task_config(config_path, store)
    opened = open_task_store(config)
    config_arg = f" --config {shlex.quote(config_path)}" if config_path else ""
    try:
        yield TaskRunner(config, opened, config_arg=config_arg, adapters=ADAPTERS if run else None)
    finally:
        opened.close()


def task_main(order: dict[str, Any]) -> None:
    """A task's agent work, in a process of its own (`freemad.dashboard.starter.main`): `start`
    a plan task, carry one on after an answer (`advance`), or `resume` it."""
    with task_runner(order["config_path"], order["store"], run=True) as runner:
        if order["verb"] == "start":
            runner.start("plan", order["goal"], order["root"], task_id=order["run_id"])
        elif order["verb"] == "advance":
            runner.advance(order["run_id"])
        else:
            runner.resume(order["run_id"])


class Steering:
    """`POST /api/tasks` (a plan task's goal), `POST /api/tasks/<id>/<verb>`, `/config.html`,
    `/api/config` and `/api/config/schema`."""

    def __init__(self, starter: Starter, sources: Sequence[Source]) -> None:
        self.starter = starter
        self.config = server_config(starter.config_path)
        wanted = Path(self.config.task.store_path).absolute()
        # Tasks are started only into a task store this dashboard shows.
        self.store = next((str(wanted) for s in sources if Path(s.path).absolute() == wanted), None)
        self.root = str(Path.cwd())  # a plan task's workspace: where the server was started

    def register(self, app: Flask) -> None:
        app.add_url_rule("/config.html", view_func=self.config_page, methods=["GET"])
        app.add_url_rule("/api/config", view_func=self.api_config, methods=["GET"])
        app.add_url_rule("/api/config/schema", view_func=self.api_schema, methods=["GET"])
        if self.store is not None:
            app.add_url_rule("/api/tasks", view_func=self.start_task, methods=["POST"])
            app.add_url_rule("/api/tasks/<task_id>/<verb>", view_func=self.steer, methods=["POST"])

    def controls(self) -> dict[str, Any]:
        """What the pages' forms offer (nothing secret: the token is the reader's to give)."""
        return {"rounds": self.config.debate.rounds, "tasks": self.store is not None}

    # the config, read-only

    def shown_config(self) -> dict[str, Any]:
        from freemad.redact import Redactor

        data = self.config.model_dump(mode="json")
        shown: dict[str, Any] = _redacted(Redactor(self.config.security.redact_patterns).data(data))
        return shown

    def config_page(self) -> Response:
        return html(render_config(self.shown_config(), self.starter.config_path))

    def api_config(self) -> Response:
        return jsonify({"config": self.shown_config(), "schema": "/api/config/schema"})

    def api_schema(self) -> Response:
        from freemad.config.models import json_schema

        return jsonify(json_schema())

    # tasks

    def start_task(self) -> tuple[Response, int]:
        refused = self.starter.refused()
        if refused is not None:
            return refused
        body = _body(("goal",), optional=("task_type",))
        if body.get("task_type", "plan") != "plan":
            _refuse(
                "only plan tasks start here: a code task needs a repository checkout, which "
                "the dashboard does not choose (use `freemad task start --task-type code`)"
            )
        goal = _text(body, "goal", MAX_TEXT)
        if not goal.strip():
            _refuse("the goal is empty")
        return self._launch("start", Steering._new_id(), goal=goal, root=self.root)

    def steer(self, task_id: str, verb: str) -> tuple[Response, int]:
        refused = self.starter.refused()
        if refused is not None:
            return refused
        if verb not in VERBS:
            raise Problem(404, f"no verb {verb[:40]!r}; one of {', '.join(VERBS)}")
        if not RUN_ID.fullmatch(task_id):
            _refuse("not a task id")
        body = _body(VERBS[verb])
        given = {k: _stage(body) if k == "stage" else _text(body, k, MAX_TEXT) for k in body}
        assert self.store is not None
        if not Path(self.store).is_file():  # never made by a step
            raise Problem(404, f"no task {task_id}")
        with task_runner(self.starter.config_path, self.store, run=False) as runner:
            try:
                state = runner.state(task_id)  # a task of this store
                if verb == "answer":
                    runner.answer(task_id, given["text"])
                elif verb == "approve":
                    runner.approve(task_id, given["stage"])
                elif verb == "reject":
                    runner.reject(task_id, given["stage"], given["reason"])
                elif verb == "pause":
                    runner.pause(task_id)
                elif state.status.value in ("completed", "cancelled"):
                    raise Problem(409, f"task {task_id} has finished")
            except FreemadError as exc:
                raise Problem(409, exc.one_line()) from None
        if verb in ("answer", "resume"):  # the agents go on, away from this worker
            return self._launch("advance" if verb == "answer" else "resume", task_id)
        return jsonify({"done": verb, "run_id": task_id}), 200

    def _launch(self, verb: str, run_id: str, **more: str) -> tuple[Response, int]:
        order = {
            "kind": "task",
            "verb": verb,
            "run_id": run_id,
            "config_path": self.starter.config_path,
            "store": self.store,
            **more,
        }
        return self.starter.launch(order) or (jsonify({"started": verb, "run_id": run_id}), 202)

    @staticmethod
    def _new_id() -> str:
        import uuid

        return uuid.uuid4().hex[:16]


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


def _body(fields: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        _refuse("send a JSON object")
    extra = sorted(str(k) for k in body if k not in fields and k not in optional)
    if extra:
        _refuse(f"only {', '.join(fields) or 'nothing'} may be given, not {', '.join(extra)[:200]}")
    missing = [f for f in fields if f not in body]
    if missing:
        _refuse(f"missing {', '.join(missing)}")
    return body


def _text(body: dict[str, Any], name: str, limit: int) -> str:
    value = body.get(name)
    if not isinstance(value, str):
        _refuse(f"{name} must be a string")
    if len(value) > limit:
        _refuse(f"{name} has {len(value)} characters; at most {limit}")
    return value


def _stage(body: dict[str, Any]) -> str:
    stage = _text(body, "stage", MAX_STAGE)
    if not stage.replace("_", "").isalnum():
        _refuse("not a stage name")
    return stage


def _refuse(message: str) -> NoReturn:
    raise Problem(400, message)
