"""Starting a debate from the browser: only behind a flag, a token and a CSRF check, and only ever
with one of the server's own configs (the browser gives the requirement, at most the config's
rounds, and the config's short name: `freemad.dashboard.steering.start_configs`; nothing else). The same token
and CSRF check guard every POST (`Starter.refused`), and the same processes run a task's or an
evolve run's agent work (`Starter.launch`, `freemad.dashboard.steering.task_steering`,
`freemad.dashboard.steering.evolve_start`, `freemad.dashboard.steering.evolve_steering`).

Each debate runs in a process of its own (`python -m freemad.dashboard.steering.starter`, watched by a
thread): its event loop then runs in a main thread, as the runtime expects, and a debate that
goes wrong cannot take a web worker with it. That process is not given the server's own settings
(FREEMAD_DASHBOARD_*, the start token above all) nor FREE-MAD's credentials (`debate_environment`),
so neither reaches the agent CLIs it starts.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from flask import Response, jsonify, request

from freemad.dashboard.http_errors import Problem, Warn, json_error, reason
from freemad.dashboard.reading.failed_starts import FailedStarts
from freemad.dashboard.steering.run_overrides import checked_overrides, overridden
from freemad.dashboard.steering.start_configs import ServerConfigs, config_as_written
from freemad.errors import FreemadError
from freemad.redact import Redactor, redact_secrets
from freemad.sandbox.process import freemad_secret

if TYPE_CHECKING:
    from freemad.config.models import FreemadConfig

MAX_REQUIREMENT = 20_000  # characters
MAX_RUNNING = 2  # debates one server process runs at once
DEBATE_TIMEOUT = 3600.0  # seconds; a debate's own deadlines end it long before
CSRF_COOKIE = "freemad_csrf"
CSRF_HEADER = "X-CSRF-Token"
_CSRF_VALUE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def cross_origin() -> str | None:
    """Why the request came from another site's page (a browser says where it sends from in
    `Origin` and `Sec-Fetch-Site`), or None. A client that is no browser sends neither."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in ("same-origin", "none"):
        return f"a request from another site is refused (Sec-Fetch-Site: {site[:40]})"
    origin = request.headers.get("Origin")
    if origin is not None and urlsplit(origin).netloc.lower() != request.host.lower():
        return f"a request from another origin is refused (Origin: {origin[:100]})"
    return None


def debate_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """What a debate's process starts with: the server's environment less the dashboard's own
    settings (FREEMAD_DASHBOARD_*) and FREE-MAD's credentials."""
    return {
        name: value
        for name, value in environ.items()
        if not name.upper().startswith("FREEMAD_DASHBOARD_") and not freemad_secret(name)
    }


def start_config(config_path: str | None, folder: Path) -> FreemadConfig:
    """The config a debate starts with: read once per process (`config_as_written`: in the
    server, as its master read it; in a debate's own process, afresh)."""
    config = config_as_written(config_path)
    # Where the transcript goes is the server's choice: where this dashboard reads them from.
    output = config.output.model_copy(
        update={"transcript_dir": str(folder.absolute()), "save_transcript": True, "format": "json"}
    )
    return config.model_copy(update={"output": output})


class Starter:
    """`GET /api/csrf` and `POST /api/debates`: a requirement in, a debate of one of the server's
    configs (the first unless the body names another).

    Each debate runs in a process of its own (`python -m freemad.dashboard.steering.starter`),
    watched by a thread. Two reasons. The runtime expects its event loop in a main thread: its
    signal handling needs one, and on Python < 3.12 so does asyncio's child watcher, which is
    tied to the main thread's loop once a process has run a debate. And a debate that goes wrong
    cannot take a web worker down with it.
    """

    def __init__(
        self, config_paths: Sequence[str | None], folder: Path, token: str, warn: Warn
    ) -> None:
        self.configs = ServerConfigs(config_paths)
        self.config_path = self.configs.default.path
        self.folder = folder.absolute()
        # Each config as a debate would start with it: a bad one fails here, not on a request.
        self.loaded = {c.name: start_config(c.path, self.folder) for c in self.configs}
        self.config = self.loaded[self.configs.default.name]
        self.token = token.encode("utf-8")
        self.warn = warn
        self.slots = threading.BoundedSemaphore(MAX_RUNNING)
        self._threads: set[threading.Thread] = set()
        # Why a run failed, for its page (`failed_starts`): the server's log alone reaches no one
        # in the browser that started it.
        self.failures = FailedStarts(self.folder)
        patterns = (p for c in self.loaded.values() for p in c.security.redact_patterns)
        self.redactor = Redactor(dict.fromkeys(patterns))

    def csrf(self) -> Response:
        value = request.cookies.get(CSRF_COOKIE, "")
        if not (len(value) == 43 and set(value) <= _CSRF_VALUE):
            value = secrets.token_urlsafe(32)
        answer = jsonify({"csrf": value})
        answer.set_cookie(CSRF_COOKIE, value, httponly=True, samesite="Strict", path="/")
        answer.headers["Cache-Control"] = "no-store"
        return answer

    def refused(self) -> tuple[Response, int] | None:
        """None when the request comes from this server's own pages and bears the start token
        and the CSRF token its cookie holds; else the refusal (403, 401, 403) to send. Every POST
        of the dashboard asks this first."""
        elsewhere = cross_origin()
        if elsewhere is not None:
            return json_error(403, elsewhere)
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode("utf-8", "replace"), self.token
        ):
            answer = jsonify({"error": "a valid 'Authorization: Bearer <token>' is required"})
            answer.headers["WWW-Authenticate"] = "Bearer"
            return answer, 401
        cookie = request.cookies.get(CSRF_COOKIE, "")
        header = request.headers.get(CSRF_HEADER, "")
        if not cookie or not hmac.compare_digest(
            cookie.encode("utf-8", "replace"), header.encode("utf-8", "replace")
        ):
            return json_error(403, f"the {CSRF_HEADER} header must match the cookie /api/csrf set")
        return None

    def start(self) -> tuple[Response, int]:
        refused = self.refused()
        if refused is not None:
            return refused
        body = request.get_json(silent=True)
        if not isinstance(body, dict):
            _refuse('send a JSON object: {"requirement": "..."}')
        fields = ("requirement", "rounds", "config", "overrides")
        extra = sorted(str(k) for k in body if k not in fields)
        if extra:
            _refuse(
                "only requirement, rounds, config and overrides may be given, "
                f"not {', '.join(extra)[:200]}"
            )
        chosen = self.configs.chosen(body)
        config = self.loaded[chosen.name]
        requirement = _requirement(body, config)
        overrides = run_overrides(body, config)
        if "rounds" in overrides and body.get("rounds") is not None:
            _refuse("give the rounds once: rounds, or overrides.rounds")
        run_id = uuid.uuid4().hex
        order = {
            "kind": "debate",
            "requirement": requirement,
            "rounds": _rounds(body, config),
            "run_id": run_id,
            "config_path": chosen.path,
            "folder": str(self.folder),
            "overrides": overrides,
        }
        return self.launch(order) or (jsonify({"started": True, "run_id": run_id}), 202)

    def launch(
        self, order: dict[str, Any], pass_fds: tuple[int, ...] = ()
    ) -> tuple[Response, int] | None:
        """Run `order` (a debate, or a task's steps: `main` below) in a process of its own,
        watched by a thread; the refusal to send when as many already run as may. The process
        also gets `pass_fds` (an evolve start's pipe, `freemad.dashboard.steering.evolve_start`), which
        are this method's to close: once the process has ended and a failure is kept, or now
        when it is refused."""
        if not self.slots.acquire(blocking=False):
            _close(pass_fds)
            return json_error(429, f"{MAX_RUNNING} runs started here are running; try again later")
        thread = threading.Thread(
            target=self._run,
            args=(order, pass_fds),
            name=f"run-{order['run_id'][:12]}",
            daemon=True,
        )
        self._threads.add(thread)
        try:
            thread.start()
        except RuntimeError:
            self._threads.discard(thread)
            self.slots.release()
            _close(pass_fds)
            raise
        return None

    def _run(self, order: dict[str, Any], pass_fds: tuple[int, ...] = ()) -> None:
        run_id, what = order["run_id"], order["kind"]
        try:
            done = subprocess.run(
                [sys.executable, "-m", "freemad.dashboard.steering.starter"],
                input=json.dumps(order),
                env=debate_environment(os.environ),
                capture_output=True,
                text=True,
                timeout=DEBATE_TIMEOUT,
                check=False,
                pass_fds=pass_fds,
            )
        except subprocess.TimeoutExpired:
            self._failed(
                run_id,
                what,
                f"stopped after {DEBATE_TIMEOUT:.0f} s, the longest a run started here may take",
            )
        except (OSError, subprocess.SubprocessError) as exc:
            self._failed(run_id, what, f"{type(exc).__name__}: {reason(exc)}")
        else:
            if done.returncode != 0:
                lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
                self._failed(run_id, what, lines[-1])
        finally:
            _close(pass_fds)  # after the failure is kept: what waits on them then reads it
            self._threads.discard(threading.current_thread())
            self.slots.release()

    def _failed(self, run_id: str, what: str, line: str) -> None:
        """Say why `run_id` failed in the server's log and keep it for the run's page: without
        what the configs' patterns match or what looks like a credential."""
        line = redact_secrets(self.redactor.text(line))
        self.warn(f"{what} {run_id} failed: {line}")
        try:
            self.failures.record(run_id, what, line)
        except OSError as exc:
            self.warn(f"cannot keep why {what} {run_id} failed: {reason(exc)}")

    def wait(self, timeout: float) -> bool:
        """Wait for the debates this process started; False if one still runs after `timeout`."""
        deadline = time.monotonic() + timeout
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in list(self._threads))


def main() -> int:
    """One run started over HTTP, its order as JSON on stdin: a debate (`debate_main`), a
    task's steps (`freemad.dashboard.steering.task_steering.task_main`) or an evolve run's
    (`freemad.dashboard.steering.evolve_steering.evolve_main`). Errors are one line on stderr."""
    from freemad.dashboard.steering.evolve_steering import evolve_main
    from freemad.dashboard.steering.task_steering import task_main

    try:
        order = json.loads(sys.stdin.read())
        if order["kind"] == "task":
            task_main(order)
        elif order["kind"] == "evolve":
            evolve_main(order)
        else:
            debate_main(order)
    except FreemadError as exc:
        print(exc.one_line(), file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"{type(exc).__name__}: {reason(exc)}", file=sys.stderr)
        return 1
    return 0


def debate_main(order: dict[str, Any]) -> None:
    """One debate: `{"requirement", "rounds", "run_id", "config_path", "folder", "overrides"}`;
    its transcript goes into `folder`."""
    from freemad.debate import run_debate, write_transcript
    from freemad.debate.live_journal import LiveJournal
    from freemad.wiring import ADAPTERS

    config = start_config(order["config_path"], Path(order["folder"]))
    config = overridden(config, order.get("overrides"))
    redactor = Redactor(config.security.redact_patterns)
    # Its journal lets the dashboard show the debate while it runs; gone once it is kept.
    with LiveJournal(config.output.transcript_dir, redactor) as journal:
        result = run_debate(
            order["requirement"],
            config,
            rounds=order.get("rounds"),
            run_id=order["run_id"],
            on_event=journal,
            adapters=ADAPTERS,
        )
        write_transcript(result, config.output, redactor)


def _requirement(body: dict[str, Any], config: FreemadConfig) -> str:
    from freemad.debate import check_requirement

    requirement = body.get("requirement")
    if not isinstance(requirement, str):
        _refuse("requirement must be a string")
    limit = min(MAX_REQUIREMENT, config.security.max_requirement_size)
    if len(requirement) > limit:
        _refuse(f"the requirement has {len(requirement)} characters; at most {limit}")
    try:
        return check_requirement(requirement, config)
    except FreemadError as exc:
        _refuse(exc.one_line())


def run_overrides(body: dict[str, Any], config: FreemadConfig) -> dict[str, Any]:
    """The request's `overrides`, checked against `config` (400 with one line when they do not
    hold): what the run's order carries."""
    try:
        return checked_overrides(body.get("overrides"), config)
    except FreemadError as exc:
        _refuse(exc.one_line())


def _rounds(body: dict[str, Any], config: FreemadConfig) -> int | None:
    """The rounds asked for, from 0 to the config's own (None: the config's)."""
    rounds, most = body.get("rounds"), config.debate.rounds
    if rounds is None:
        return None
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 0 <= rounds <= most:
        _refuse(f"rounds must be a whole number from 0 to {most} (the config's)")
    return rounds


def _refuse(message: str) -> NoReturn:
    raise Problem(400, message)


def _close(fds: tuple[int, ...]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
