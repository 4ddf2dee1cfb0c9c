"""Tasks started and steered from the browser: only with `--allow-start`, and every POST behind
the start token and the CSRF check of `freemad.dashboard.steering.starter` (`Starter.refused`).

The browser names a verb and gives text. It never gives a command, a path or a config; at most it
names one of the server's configs by its short name (`freemad.dashboard.steering.start_configs`).
A task runs with that config, in its task store if the dashboard reads it, and in the folder the
server was started in. A code task works on a branch of its own, and only when that folder is in
a git repository.

Steps that call no agent (an answer recorded, a stage approved or rejected, a pause) are
appended here, in the request, so a refusal is the answer (409 with the runner's one line). The
agent work that follows (a task started, carried on after an answer, resumed) runs in a process
of its own (`Starter.launch`), which neither the start token nor FREE-MAD's credentials reach. Evolve runs are started and steered the same way
(`freemad.dashboard.steering.evolve_start`, `freemad.dashboard.steering.evolve_steering`).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from flask import Flask, Response, jsonify, request

from freemad.dashboard.http_errors import Problem
from freemad.dashboard.reading.sources import RUN_ID, Source
from freemad.dashboard.run_records import Run
from freemad.dashboard.steering.evolve_start import EvolveStarter
from freemad.dashboard.steering.evolve_steering import EvolveSteering
from freemad.dashboard.steering.run_overrides import keep_overrides, kept_overrides, overridden
from freemad.dashboard.steering.start_configs import ConfigPages, config_resolved
from freemad.dashboard.steering.starter import Starter, run_overrides
from freemad.errors import FreemadError

if TYPE_CHECKING:
    from freemad.config.models import FreemadConfig
    from freemad.tasks.task_runner import TaskRunner

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


def server_config(config_path: str | None) -> FreemadConfig:
    """The config the server starts runs with, its relative paths taken from its folder (as the
    CLI loads it); without one, the built-in mock agents (as `Starter` runs debates)."""
    from freemad.config import default_config

    return config_resolved(config_path).config if config_path else default_config()


def task_config(config_path: str | None, store: str) -> FreemadConfig:
    """The server's config, its tasks kept in `store` (artifacts beside it, as the dashboard
    reads them)."""
    config = server_config(config_path)
    task = config.task.model_copy(
        update={"store_path": store, "artifacts_dir": str(Path(store).parent / "artifacts")}
    )
    return config.model_copy(update={"task": task})


@contextmanager
def task_runner(
    config_path: str | None, store: str, *, run: bool, overrides: dict[str, Any] | None = None
) -> Iterator[TaskRunner]:
    """A runner on the task store; with `run`, handed the real adapters (it calls agents); with
    `overrides`, the task's config has them (`freemad.dashboard.steering.run_overrides`)."""
    from freemad.tasks.task_runner import TaskRunner
    from freemad.wiring import ADAPTERS, open_task_store

    config = overridden(task_config(config_path, store), overrides)
    opened = open_task_store(config)
    config_arg = f" --config {shlex.quote(config_path)}" if config_path else ""
    try:
        yield TaskRunner(config, opened, config_arg=config_arg, adapters=ADAPTERS if run else None)
    finally:
        opened.close()


def task_main(order: dict[str, Any]) -> None:
    """A task's agent work, in a process of its own (`freemad.dashboard.steering.starter.main`): `start`
    a plan or code task, carry one on after an answer (`advance`), or `resume` it. A task
    started with overrides keeps them beside its store, for the steps after its start."""
    store, task_id = order["store"], order["run_id"]
    if order["verb"] == "start" and order.get("overrides"):
        keep_overrides(store, task_id, order["overrides"])
    overrides = kept_overrides(store, task_id)
    with task_runner(order["config_path"], store, run=True, overrides=overrides) as runner:
        if order["verb"] == "start":
            kind = order.get("task_type", "plan")
            runner.start(kind, order["goal"], order["root"], task_id=order["run_id"])
        elif order["verb"] == "advance":
            runner.advance(order["run_id"])
        else:
            runner.resume(order["run_id"])


class Steering:
    """`POST /api/tasks` (a plan or code task's goal), `POST /api/tasks/<id>/<verb>`, the
    evolve runs' start (`EvolveStarter`) and steps (`EvolveSteering`) and the configs' pages
    (`ConfigPages`)."""

    def __init__(self, starter: Starter, sources: Sequence[Source]) -> None:
        self.starter = starter
        self.configs = starter.configs
        self.loaded = {c.name: server_config(c.path) for c in self.configs}
        shown = {Path(s.path).absolute() for s in sources}
        # Tasks are started only into a task store this dashboard shows: each config's, if so.
        self.task_stores: dict[str, str] = {}
        for named in self.configs:
            wanted = Path(self.loaded[named.name].task.store_path).absolute()
            if wanted in shown:
                self.task_stores[named.name] = str(wanted)
        self.root = str(Path.cwd())  # a task's workspace: where the server was started
        self.code_problem = code_problem(Path(self.root))
        self.evolve = EvolveSteering(starter, sources, [c.path for c in self.configs])
        self.evolve_start = EvolveStarter(starter, sources)
        self.pages = ConfigPages(self.configs, self.loaded)

    def register(self, app: Flask) -> None:
        self.pages.register(app)
        if self.task_stores:
            app.add_url_rule("/api/tasks", view_func=self.start_task, methods=["POST"])
            app.add_url_rule("/api/tasks/<task_id>/<verb>", view_func=self.steer, methods=["POST"])
        self.evolve.register(app)
        self.evolve_start.register(app)

    def controls(self, run: Run | None = None) -> dict[str, Any]:
        """What the pages' forms offer (nothing secret: the token is the reader's to give); on
        `run`'s page, whether it may be steered here."""
        rounds = {c.name: self.starter.loaded[c.name].debate.rounds for c in self.configs}
        configs = [
            {
                "name": c.name,
                "rounds": rounds[c.name],
                "tasks": c.name in self.task_stores,
                **overridable(self.starter.loaded[c.name]),
            }
            for c in self.configs
        ]
        return {
            "rounds": self.starter.config.debate.rounds,
            "most_rounds": max(rounds.values()),
            "configs": configs,
            "tasks": bool(self.task_stores),
            "evolve_configs": self.evolve_start.controls(),
            "code": self.code_problem is None,
            "evolve": run is not None and run.kind == "evolve" and self.evolve.steers(run.origin),
        }

    # tasks

    def start_task(self) -> tuple[Response, int]:
        refused = self.starter.refused()
        if refused is not None:
            return refused
        body = json_body(("goal",), optional=("task_type", "config", "overrides"))
        task_type = body.get("task_type", "plan")
        if task_type not in ("plan", "code"):
            _refuse("task_type must be plan or code")
        if task_type == "code" and self.code_problem is not None:
            _refuse(self.code_problem)
        goal = text_field(body, "goal", MAX_TEXT)
        if not goal.strip():
            _refuse("the goal is empty")
        chosen = self.configs.chosen(body)
        store = self.task_stores.get(chosen.name)
        if store is None:
            _refuse(f"config {chosen.name} keeps its tasks in a store this dashboard does not show")
        overrides = run_overrides(body, self.loaded[chosen.name])
        _check_roles(task_type, overridden(self.loaded[chosen.name], overrides))
        more = {"goal": goal, "root": self.root, "task_type": task_type, "overrides": overrides}
        return self._launch("start", Steering._new_id(), chosen.path, store, **more)

    def steer(self, task_id: str, verb: str) -> tuple[Response, int]:
        refused = self.starter.refused()
        if refused is not None:
            return refused
        if verb not in VERBS:
            raise Problem(404, f"no verb {verb[:40]!r}; one of {', '.join(VERBS)}")
        if not RUN_ID.fullmatch(task_id):
            _refuse("not a task id")
        body = json_body(VERBS[verb])
        given = {k: _stage(body) if k == "stage" else text_field(body, k, MAX_TEXT) for k in body}
        config_path, store = self._store_of(task_id)
        with task_runner(config_path, store, run=False) as runner:
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
            then = "advance" if verb == "answer" else "resume"
            return self._launch(then, task_id, config_path, store)
        return jsonify({"done": verb, "run_id": task_id}), 200

    def _store_of(self, task_id: str) -> tuple[str | None, str]:
        """The config and task store of `task_id` (the first config that keeps its tasks in
        that store); 404 when no store of ours holds it."""
        from freemad.store.reader import StoreReader

        for named in self.configs:
            store = self.task_stores.get(named.name)
            if store is None or not Path(store).is_file():  # never made by a step
                continue
            try:
                listed = StoreReader(store).runs(("task",))
            except FreemadError as exc:
                raise Problem(503, f"the task store cannot be read: {exc.one_line()}") from None
            if any(i.row.run_id == task_id for i in listed):
                return named.path, store
        raise Problem(404, f"no task {task_id}")

    def _launch(
        self, verb: str, run_id: str, config_path: str | None, store: str, **more: str
    ) -> tuple[Response, int]:
        order = {
            "kind": "task",
            "verb": verb,
            "run_id": run_id,
            "config_path": config_path,
            "store": store,
            **more,
        }
        return self.starter.launch(order) or (jsonify({"started": verb, "run_id": run_id}), 202)

    @staticmethod
    def _new_id() -> str:
        import uuid

        return uuid.uuid4().hex[:16]


def overridable(config: FreemadConfig) -> dict[str, Any]:
    """What the start forms show of a config's settings a run may override."""
    return {
        "agents": [a.id for a in config.enabled_agents],
        "deadlines": config.deadlines.model_dump(mode="json"),
        "weights": ", ".join(f"{w:g}" for w in config.scoring.weights),
    }


def code_problem(root: Path) -> str | None:
    """Why a code task cannot start from the browser, or None: it needs the server to have
    been started in a git checkout, where it works on a branch and worktree of its own (as
    `freemad task start --task-type code` does from there); elsewhere it would edit in place."""
    from freemad.workspace.git import open_checkout

    try:
        open_checkout(root).close()
    except FreemadError:
        return (
            "a code task needs the dashboard to be started in a git repository (it works on a "
            "branch of its own there); this one was not"
        )
    return None


def _check_roles(task_type: str, config: FreemadConfig) -> None:
    """A config whose agents cannot fill the task's roles is refused now, not in its process."""
    from freemad.core.task_machine import RoleError, assign_roles

    try:
        assign_roles(task_type, {a.id: a.roles for a in config.enabled_agents})
    except RoleError as exc:
        _refuse(f"the config's agents cannot run a {task_type} task: {exc}")


def json_body(fields: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
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


def text_field(body: dict[str, Any], name: str, limit: int) -> str:
    value = body.get(name)
    if not isinstance(value, str):
        _refuse(f"{name} must be a string")
    if len(value) > limit:
        _refuse(f"{name} has {len(value)} characters; at most {limit}")
    return value


def _stage(body: dict[str, Any]) -> str:
    stage = text_field(body, "stage", MAX_STAGE)
    if not stage.replace("_", "").isalnum():
        _refuse("not a stage name")
    return stage


def _refuse(message: str) -> NoReturn:
    raise Problem(400, message)
