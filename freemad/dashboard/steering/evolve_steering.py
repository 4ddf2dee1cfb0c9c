"""Evolve runs steered from the browser (`--allow-start`): `POST /api/evolve/<run_id>/<verb>`,
behind the start token and the CSRF check of `freemad.dashboard.steering.starter` (`Starter.refused`).

Only runs of an evolve store this dashboard shows, and that one of the server's configs keeps
its runs in, are steered, with that config; the browser names a verb and, to answer, gives a
direction, never a path, a command or a config. Steps that call no agent (a direction recorded,
a question declined, a pause, a stop) are appended here, so a refusal is an answer (409 with the
runner's one line); the agent work that follows (the run carried on after an answer, resumed)
runs in a process of its own (`Starter.launch`, then `evolve_main`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, jsonify

from freemad.dashboard.http_errors import Problem
from freemad.dashboard.reading.sources import RUN_ID, Source
from freemad.dashboard.steering.evolve_overrides import evolve_overridden
from freemad.dashboard.steering.run_overrides import kept_overrides
from freemad.dashboard.steering.start_configs import config_resolved
from freemad.dashboard.steering.starter import Starter
from freemad.errors import ConfigError, FreemadError

if TYPE_CHECKING:
    from freemad.evolve.evolve_runner import EvolveRunner

MAX_DIRECTION = 20_000  # characters of a direction
# The verbs of an evolve run's page, each with the fields its body must hold (and nothing else).
EVOLVE_VERBS: dict[str, tuple[str, ...]] = {
    "answer": ("text",),
    "decline": (),
    "pause": (),
    "resume": (),
    "stop": (),
}

# A run stopped for one of these reasons has nothing to resume (a raised limit may carry one on).
ENDED_FOR_GOOD = ("target", "declined", "tampered", "baseline_failed")


def evolve_store_of(config_path: str | None) -> Path | None:
    """Where the config keeps its evolve runs (absolute); None without an evolve section."""
    if config_path is None:  # the built-in mock agents have no evolve section
        return None
    loaded = config_resolved(config_path)
    evolve = loaded.config.evolve
    if evolve is None:
        return None
    return Path(evolve.resolved(loaded.source.base).store_path).absolute()


@contextmanager
def evolve_runner(
    config_path: str,
    *,
    run: bool,
    run_id: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> Iterator[EvolveRunner]:
    """A runner on the config's evolve store, as `freemad evolve` opens it; with `run`, handed
    the real adapters (it calls agents and git). Its config has `overrides` laid over it, or
    those `run_id` was started with from the browser (kept beside the store,
    `freemad.dashboard.steering.evolve_start`), so a run is carried on as it was started."""
    from freemad.config.discover import load
    from freemad.evolve.evolve_runner import EvolveRunner
    from freemad.wiring import ADAPTERS, open_evolve_store

    loaded = load(config_path)
    config, base = loaded.config, loaded.source.base
    if config.evolve is None:
        raise ConfigError(f"{loaded.source.shown} has no evolve: section")
    resolved = config.evolve.resolved(base)
    if overrides is None and run_id is not None:
        overrides = kept_overrides(resolved.store_path, run_id)
    config = evolve_overridden(config, overrides)
    store = open_evolve_store(resolved)
    try:
        yield EvolveRunner(
            config,
            store,
            config_dir=base,
            config_arg=loaded.config_arg(),
            adapters=ADAPTERS if run else None,
        )
    finally:
        store.close()


def evolve_main(order: dict[str, Any]) -> None:
    """An evolve run's agent work, in a process of its own (`freemad.dashboard.steering.starter.main`):
    `start` one (`freemad.dashboard.steering.evolve_start.start_main`), carry it on after an answer
    (`advance`), or `resume` it."""
    if order["verb"] == "start":
        from freemad.dashboard.steering.evolve_start import start_main

        start_main(order)
        return
    with evolve_runner(order["config_path"], run=True, run_id=order["run_id"]) as runner:
        if order["verb"] == "advance":
            runner.advance(order["run_id"])
        else:
            runner.resume(order["run_id"])


class EvolveSteering:
    """`POST /api/evolve/<run_id>/<verb>`: answer, decline, pause, resume, stop."""

    def __init__(
        self, starter: Starter, sources: Sequence[Source], config_paths: Sequence[str | None]
    ) -> None:
        self.starter = starter
        shown = {Path(s.path).absolute() for s in sources}
        # Each evolve store a source shows, with the first of the server's configs that keeps
        # its runs there: the config its runs are steered with.
        self.stores: dict[Path, str] = {}
        for path in config_paths:
            store = evolve_store_of(path)
            if path is not None and store is not None and store in shown:
                self.stores.setdefault(store, path)

    def register(self, app: Flask) -> None:
        if self.stores:
            app.add_url_rule("/api/evolve/<run_id>/<verb>", view_func=self.steer, methods=["POST"])

    def steers(self, origin: str) -> bool:
        """Whether runs read from `origin` (a store's path) may be steered here."""
        return Path(origin).absolute() in self.stores

    def steer(self, run_id: str, verb: str) -> tuple[Response, int]:
        from freemad.core.evolve.fold import Status
        from freemad.dashboard.steering.task_steering import json_body, text_field
        from freemad.evolve.evolve_runner import judge_hash

        refused = self.starter.refused()
        if refused is not None:
            return refused
        if verb not in EVOLVE_VERBS:
            raise Problem(404, f"no verb {verb[:40]!r}; one of {', '.join(EVOLVE_VERBS)}")
        if not RUN_ID.fullmatch(run_id):
            raise Problem(400, "not an evolve run id")
        body = json_body(EVOLVE_VERBS[verb])
        text = text_field(body, "text", MAX_DIRECTION) if verb == "answer" else ""
        config_path = self._config_of(run_id)
        try:  # the config, or the overrides the run was started with, may no longer hold
            with evolve_runner(config_path, run=False, run_id=run_id) as runner:
                state = runner.state(run_id)
                if verb == "answer":
                    runner.answer(run_id, text)
                elif verb == "decline":
                    runner.decline(run_id)
                elif verb == "pause":
                    runner.pause(run_id)
                elif verb == "stop":
                    runner.stop(run_id)
                elif state.status is Status.WAITING:  # resume: what `runner.resume` refuses
                    raise Problem(409, f"run {run_id} waits for an answer: answer or decline")
                elif state.stop_reason in ENDED_FOR_GOOD:
                    raise Problem(409, f"run {run_id} has ended ({state.stop_reason})")
                elif state.judge_hash and state.judge_hash != judge_hash(runner.evolve):
                    raise Problem(409, f"evolve.judge has changed since run {run_id} started")
        except FreemadError as exc:
            raise Problem(409, exc.one_line()) from None
        if verb in ("answer", "resume"):  # the agents go on, away from this worker
            return self._launch("advance" if verb == "answer" else "resume", run_id, config_path)
        return jsonify({"done": verb, "run_id": run_id}), 200

    def _config_of(self, run_id: str) -> str:
        """The config of the store that holds `run_id`; 404 when none of ours does."""
        from freemad.store.reader import StoreReader

        for store, config_path in self.stores.items():
            if not store.is_file():
                continue
            reader = StoreReader(store, store.parent / "artifacts")
            try:
                if any(i.row.run_id == run_id for i in reader.runs(("evolve",))):
                    return config_path
            except FreemadError as exc:
                raise Problem(503, f"the evolve store cannot be read: {exc.one_line()}") from None
        raise Problem(404, f"no evolve run {run_id} in a store this dashboard steers")

    def _launch(self, verb: str, run_id: str, config_path: str) -> tuple[Response, int]:
        order = {"kind": "evolve", "verb": verb, "run_id": run_id, "config_path": config_path}
        return self.starter.launch(order) or (jsonify({"started": verb, "run_id": run_id}), 202)
