"""Evolve runs started from the browser (`--allow-start`): `POST /api/evolve` with a goal, one of
the server's configs that has an `evolve:` section (by its short name) and per-run overrides
(`freemad.dashboard.steering.evolve_overrides`), behind the start token and the CSRF check of
`freemad.dashboard.steering.starter` (`Starter.refused`). Never a path, a command or a config text.

Only a config whose evolve store this dashboard shows is offered, so the run appears among the
others. The run is `freemad evolve start GOAL --config F` with the overrides, in a process of its
own (`Starter.launch`, then `start_main`), in the repository the config names. The runtime picks
the run's id, so the process writes it into a pipe as soon as the run is created (before its
baseline is measured) and the request waits for it, up to `ANNOUNCE_WAIT`: the browser is sent
to the run's page, or told at once why the run could not begin (a dirty checkout, say). The
process also keeps the overrides beside the store (`overrides/<run id>.json`), for the steps the
dashboard carries on after an answer or a resume (`freemad.dashboard.steering.evolve_steering`).
"""

from __future__ import annotations

import os
import selectors
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, jsonify

from freemad.dashboard.http_errors import Problem
from freemad.dashboard.reading.sources import RUN_ID, Source
from freemad.dashboard.steering.evolve_overrides import checked_evolve_overrides
from freemad.dashboard.steering.evolve_steering import evolve_runner, evolve_store_of
from freemad.dashboard.steering.run_overrides import keep_overrides
from freemad.dashboard.steering.start_configs import config_resolved
from freemad.errors import FreemadError

if TYPE_CHECKING:
    from freemad.config.models import FreemadConfig
    from freemad.dashboard.steering.starter import Starter

MAX_GOAL = 20_000  # characters
ANNOUNCE_WAIT = 60.0  # seconds a request waits for the run's id (its checks come first)
_MAX_ANNOUNCEMENT = 64  # bytes: a run id and a newline


class EvolveStarter:
    """`POST /api/evolve`: a goal in, an evolve run of one of the server's configs."""

    def __init__(self, starter: Starter, sources: Sequence[Source]) -> None:
        self.starter = starter
        shown = {Path(s.path).absolute() for s in sources}
        # The configs whose evolve store a source shows, by name: the ones a run may start with.
        self.configs: dict[str, tuple[str, FreemadConfig]] = {}
        for named in starter.configs:
            store = evolve_store_of(named.path)
            if named.path is not None and store is not None and store in shown:
                self.configs[named.name] = (named.path, config_resolved(named.path).config)

    def register(self, app: Flask) -> None:
        if self.configs:
            app.add_url_rule(
                "/api/evolve", endpoint="evolve_start", view_func=self.start, methods=["POST"]
            )

    def controls(self) -> list[dict[str, Any]]:
        """What the start form shows of each config a run may start with (nothing secret)."""
        return [
            {"name": name, **startable_settings(config)}
            for name, (_, config) in self.configs.items()
        ]

    def start(self) -> tuple[Response, int]:
        from freemad.dashboard.steering.task_steering import json_body, text_field

        refused = self.starter.refused()
        if refused is not None:
            return refused
        body = json_body(("goal",), optional=("config", "overrides"))
        goal = text_field(body, "goal", MAX_GOAL)
        if not goal.strip():
            raise Problem(400, "the goal is empty")
        chosen = self.starter.configs.chosen(body)
        if chosen.name not in self.configs:
            offered = ", ".join(self.configs)
            raise Problem(
                400,
                f"config {chosen.name} has no evolve: section whose store this dashboard shows; "
                f"one of {offered}"[:400],
            )
        config_path, config = self.configs[chosen.name]
        try:
            overrides = checked_evolve_overrides(body.get("overrides"), config)
        except FreemadError as exc:
            raise Problem(400, exc.one_line()) from None
        start_key = uuid.uuid4().hex[:16]  # the process's name until the run has its own id
        read_end, write_end = os.pipe()
        order = {
            "kind": "evolve",
            "verb": "start",
            "run_id": start_key,
            "config_path": config_path,
            "goal": goal,
            "overrides": overrides,
            "announce_fd": write_end,
        }
        try:
            refusal = self.starter.launch(order, pass_fds=(write_end,))
            if refusal is not None:
                return refusal
            announced = read_announcement(read_end, ANNOUNCE_WAIT)
        finally:
            os.close(read_end)
        if announced is not None:
            return jsonify({"started": "start", "run_id": announced}), 202
        failed = self.starter.failures.reason(start_key)
        if failed is not None:
            raise Problem(409, f"the evolve run could not begin: {failed}")
        # Still checking after the wait (a slow repository): it appears in the list once created.
        return jsonify({"started": "start", "run_id": None}), 202


def startable_settings(config: FreemadConfig) -> dict[str, Any]:
    """The settings an evolve start form offers to override, as the config has them."""
    assert config.evolve is not None
    evolve = config.evolve
    return {
        "agents": [a.id for a in config.enabled_agents],
        "variation": evolve.variation.mode,
        "agent_id": evolve.variation.agent_id,
        "stop": evolve.stop.model_dump(mode="json", exclude={"target"}),
        "population": evolve.population.model_dump(mode="json"),
        "supervisor": evolve.supervisor.model_dump(mode="json"),
        "worker_timeout": evolve.worker_budget.timeout_sec,
    }


def read_announcement(fd: int, timeout: float) -> str | None:
    """The run id the process writes into the pipe at `fd` once the run exists; None when it
    ends first (the pipe closes) or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    got = b""
    # A selector, not select(): a busy server's descriptors may number past select's 1024.
    with selectors.DefaultSelector() as waiting:
        waiting.register(fd, selectors.EVENT_READ)
        while b"\n" not in got and len(got) < _MAX_ANNOUNCEMENT:
            left = deadline - time.monotonic()
            if left <= 0 or not waiting.select(left):
                return None
            chunk = os.read(fd, _MAX_ANNOUNCEMENT)
            if not chunk:
                return None
            got += chunk
    if b"\n" not in got:  # more than a run id, and no line: not one
        return None
    run_id = got.split(b"\n", 1)[0].decode("ascii", "replace")
    return run_id if RUN_ID.fullmatch(run_id) else None


def start_main(order: dict[str, Any]) -> None:
    """An evolve run started from the browser, in a process of its own
    (`freemad.dashboard.steering.starter.main`): `{"config_path", "goal", "overrides", "announce_fd"}`."""
    given: dict[str, Any] = order.get("overrides") or {}
    fd: int | None = order.get("announce_fd")
    with evolve_runner(order["config_path"], run=True, overrides=given) as runner:
        store = runner.evolve.store_path

        def created(kind: str, data: dict[str, Any]) -> None:
            nonlocal fd
            if kind != "run_created" or fd is None:
                return
            if given:  # before any step that may need them is taken again elsewhere
                keep_overrides(store, str(data["run_id"]), given)
            announce(fd, str(data["run_id"]))
            fd = None

        runner.on_step = created
        runner.start(order["goal"])


def announce(fd: int, run_id: str) -> None:
    """Tell the request that waits (if it still does) the run's id."""
    try:
        os.write(fd, f"{run_id}\n".encode("ascii"))
    except OSError:  # it stopped waiting: the run goes on all the same
        pass
    finally:
        os.close(fd)
