"""The live dashboard: the static site's pages rendered fresh, a small JSON API, and a stream of
changes (Server-Sent Events) that makes open pages refresh themselves.

Read-only unless asked: every method but GET and HEAD is refused (405). With `allow_start`, and
only with a start token and a CSRF token, `POST /api/debates` starts a debate from one of the
server's own configs (the browser gives the requirement, its rounds and the config's short name,
nothing else), and `freemad.dashboard.steering.task_steering` starts and steers tasks and evolve runs and
shows the configs read-only; the pages then carry the forms. Nothing happens at import time;
`freemad.dashboard.live.wsgi.app_from_env()` is what gunicorn calls (`freemad-dashboard` sets
the environment).

`/events` is the stream of changes `freemad.dashboard.live.event_feed` polls, as many at once as
`freemad.dashboard.live.stream_capacity` allows (429 or 503 with Retry-After beyond);
`freemad.dashboard.steering.starter` starts debates; `freemad.dashboard.http_errors` holds the error pages,
refusals and headers.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from freemad.dashboard import http_errors
from freemad.dashboard.http_errors import Problem, Warn, names_its_source, reason
from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.event_feed import READ_ERRORS, Feed, stream
from freemad.dashboard.live.stream_capacity import Caps, Refusal, Streams
from freemad.dashboard.reading.eval_folders import (
    EVAL_SLUG,
    EvalFolder,
    EvalReportError,
    eval_sources,
)
from freemad.dashboard.reading.sources import (
    RUN_ID,
    IndexFacts,
    Run,
    RunData,
    Source,
    SourceError,
    agent_records,
    all_runs,
    build_sources,
    is_transcripts_folder,
    parse_change_id,
)
from freemad.dashboard.steering.config_editor import ConfigEditor
from freemad.dashboard.steering.starter import Starter
from freemad.dashboard.steering.task_steering import Steering
from freemad.dashboard.steering.transcript_deleting import Deleter, transcript_folders
from freemad.dashboard.views import run_views
from freemad.dashboard.views.agent_views import AGENT_SLUG, agent_view, agents_table
from freemad.dashboard.views.eval_views import eval_summary, eval_view
from freemad.dashboard.views.html_pages import (
    render_agent,
    render_agents,
    render_eval,
    render_index,
    render_run,
    render_summary,
    view_of,
)
from freemad.dashboard.views.summary_views import summary_view
from freemad.errors import UsageError

MAX_PROXIES = 10
PAGE_CACHE = 256
MAX_BODY = 256 * 1024  # bytes of a POST body
DEFAULT_PAGE = 50  # runs on a page of `/api/runs?page=`
MAX_PAGE = 1000  # and at most, with `?limit=`
_VIEW_ERRORS = (ValueError, TypeError, KeyError, AttributeError, RecursionError)


def stderr_warn() -> Warn:
    """One line on stderr per distinct warning: sources warn on every poll, a log says it once."""
    said: set[str] = set()
    lock = threading.Lock()

    def warn(message: str) -> None:
        line = " ".join(message.split())
        with lock:
            if line in said:
                return
            if len(said) < 10_000:
                said.add(line)
        print(f"freemad-dashboard: warning: {line}", file=sys.stderr, flush=True)

    return warn


def create_app(settings: DashboardSettings) -> Flask:
    """The dashboard's Flask app over `settings.sources` (read each time a page or the API
    asks); `DashboardSettings` says what each setting does."""
    sources, evals = settings.sources, settings.evals
    if not sources and not evals:
        raise UsageError("the dashboard needs at least one source")
    if not settings.poll_interval > 0 or not settings.heartbeat > 0:
        raise UsageError("poll_interval and heartbeat must be positive numbers of seconds")
    say = settings.warn or stderr_warn()
    starter = None
    if settings.allow_start:
        if not settings.start_token:
            raise UsageError(
                "starting debates needs a non-empty start token (the browser must send it)"
            )
        folder = next((s.path for s in sources if is_transcripts_folder(s)), None)
        if folder is None:
            raise UsageError("starting debates needs a transcripts folder to write them into")
        configs: list[str | None] = [*settings.config_paths] or [None]
        starter = Starter(configs, folder, settings.start_token, say)
    trusted_proxies = settings.trusted_proxies
    if not 0 <= trusted_proxies <= MAX_PROXIES:
        raise UsageError(f"trusted_proxies must be from 0 to {MAX_PROXIES}")
    streams = Streams(settings.caps or Caps.from_env({}), settings.streams_dir)
    own = list(sources)
    # After the starter chose its folder: debates are never started into an evaluation's.
    sources = [*sources, *eval_sources(evals, say)]
    board = _Dashboard(
        sources,
        settings.commit_url,
        settings.poll_interval,
        settings.heartbeat,
        starter,
        say,
        streams,
    )
    board.evals = {evaluation.slug: evaluation for evaluation in evals}
    app = Flask("freemad.dashboard")
    if trusted_proxies:
        # X-Forwarded-For's last `trusted_proxies` entries are what the proxies saw; the
        # client's own entries before them are its to invent, and are not read.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=trusted_proxies)  # type: ignore[method-assign]
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.extensions["freemad.dashboard"] = board
    for rule, view in (
        ("/", board.index),
        ("/index.html", board.index),
        ("/runs/<run_id>.html", board.run_page),
        ("/agents.html", board.agents),
        ("/agents/<slug>.html", board.agent_page),
        ("/summary.html", board.summary),
        ("/evals/<slug>.html", board.eval_page),
        ("/api/runs", board.api_runs),
        ("/api/runs/<run_id>", board.api_run),
        ("/api/tasks", board.api_tasks),
        ("/api/evolve", board.api_evolve),
        ("/health", board.health),
        ("/events", board.events),
    ):
        app.add_url_rule(rule, endpoint=rule, view_func=view, methods=["GET"])
    if starter is not None:  # starting and steering runs (issue 16): every POST is here
        app.add_url_rule("/api/csrf", view_func=starter.csrf, methods=["GET"])
        app.add_url_rule("/api/debates", view_func=starter.start, methods=["POST"])
        board.steering = Steering(starter, sources)
        board.steering.register(app)
        # Only the folders given as sources, never an evaluation's (added to `sources` above).
        board.deleter = Deleter(starter, transcript_folders(own), board.find)
        board.deleter.register(app)
        if settings.edit_config:
            board.editor = ConfigEditor(starter.configs, starter.refused)
            board.editor.register(app)
    elif settings.edit_config:
        raise UsageError("editing the configs needs allow_start (and its token)")
    app.before_request(http_errors.read_only_unless(starter is not None))
    app.after_request(http_errors.security_headers)
    app.register_error_handler(HTTPException, http_errors.http_error)
    app.register_error_handler(Exception, http_errors.internal_error(say))
    return app


# --- pages and the API ------------------------------------------------------------------------


class _Lru:
    """A small least-recently-used map, safe across a worker's threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Any:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: tuple[str, str], value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class _Dashboard:
    def __init__(
        self,
        sources: Sequence[Source],
        commit_url: str | None,
        poll_interval: float,
        heartbeat: float,
        starter: Starter | None,
        warn: Warn,
        streams: Streams,
    ) -> None:
        self.sources = tuple(sources)
        self.commit_url = commit_url
        self.poll_interval = poll_interval
        self.heartbeat = heartbeat
        self.starter = starter
        self.warn = warn
        self.streams = streams
        self.feed = Feed(self.sources, poll_interval)
        self.pages = _Lru(PAGE_CACHE)
        self.views = _Lru(32)  # /api/runs/<id> bodies (a task's carry its artifacts)
        self.summaries = _Lru(4096)  # /api/tasks and /api/evolve rows
        self.index_facts = IndexFacts()  # the index's outcome, duration and agents of each run
        self.agent_records = agent_records()  # what each run's agents did, for /agents
        self.steering: Steering | None = None  # with --allow-start: the forms and their POSTs
        self.deleter: Deleter | None = None  # and deleting a debate's transcript
        self.editor: ConfigEditor | None = None  # and editing the configs (--edit-config)
        self.evals: dict[str, EvalFolder] = {}  # evaluation folders by their pages' names

    def controls(self, run: Run | None = None) -> dict[str, Any] | None:
        if self.steering is None:
            return None
        controls = self.steering.controls(run)
        controls["edit_config"] = self.editor is not None
        if run is not None and self.deleter is not None:
            controls["delete"] = self.deleter.deletable(run)
        return controls

    # reading runs

    def runs(self) -> list[Run]:
        try:
            return all_runs(self.sources)
        except READ_ERRORS as exc:
            raise Problem(503, f"a source cannot be read: {reason(exc)}") from None

    def find(self, run_id: str) -> Run:
        if RUN_ID.fullmatch(run_id):
            for run in self.runs():
                if run.run_id == run_id:
                    return run
        failed = self.starter.failures.reason(run_id) if self.starter is not None else None
        if failed is not None:  # started here and gone with nothing kept: say why
            raise Problem(404, f"run {run_id} failed and kept nothing: {failed}")
        raise Problem(404, f"no run {run_id}")

    def load(self, run: Run) -> RunData:
        try:
            return run.load()
        except READ_ERRORS as exc:
            raise Problem(503, f"run {run.run_id} cannot be read: {reason(exc)}") from None

    # routes

    def index(self) -> Response:
        entries = self.index_facts.entries(self.runs())
        page = render_index(entries, live=True, controls=self.controls(), evals=self._evals())
        return http_errors.html(page)

    def _evals(self) -> list[dict[str, Any]]:
        listed = []
        for evaluation in self.evals.values():
            row: dict[str, Any] = {"name": evaluation.name, "slug": evaluation.slug}
            try:
                row.update(eval_summary(evaluation.report()))
            except EvalReportError as exc:
                row["error"] = exc.one_line()
            listed.append(row)
        return listed

    def eval_page(self, slug: str) -> Response:
        evaluation = self.evals.get(slug) if EVAL_SLUG.fullmatch(slug) else None
        if evaluation is None:
            raise Problem(404, f"no evaluation {slug}")
        try:
            report = evaluation.report()
        except EvalReportError as exc:
            raise Problem(503, exc.one_line()) from None
        shown = {run.run_id for run in self.runs()}
        view = eval_view(evaluation.name, report, shown)
        return http_errors.html(render_eval(view, slug, live=True))

    def run_page(self, run_id: str) -> Response:
        run = self.find(run_id)
        key = (run.run_id, run.fingerprint)
        # A debate in flight is rendered afresh: its elapsed times move between its events.
        live = run.kind == "debate" and run.status == "running"
        page = None if live else self.pages.get(key)
        if page is None:
            data = self.load(run)
            try:
                page = render_run(
                    data, commit_url=self.commit_url, live=True, controls=self.controls(run)
                )
            except _VIEW_ERRORS as exc:
                raise _cannot_show(run, exc) from None
            if not live:
                self.pages.put(key, page)
        return http_errors.html(page)

    def agents(self) -> Response:
        return http_errors.html(render_agents(self._agents_table(), live=True))

    def summary(self) -> Response:
        summary = summary_view(self.agent_records.of(self.runs()))
        return http_errors.html(render_summary(summary, live=True))

    def agent_page(self, slug: str) -> Response:
        if AGENT_SLUG.fullmatch(slug):
            for row in self._agents_table():
                if row["slug"] == slug:
                    return http_errors.html(render_agent(agent_view(row), live=True))
        raise Problem(404, f"no agent {slug}")

    def _agents_table(self) -> list[dict[str, Any]]:
        return agents_table(self.agent_records.of(self.runs()))

    def api_runs(self) -> Response:
        kind, status = request.args.get("kind"), request.args.get("status")
        page, limit = _paging(request.args.get("page"), request.args.get("limit"))
        entries = [
            run.entry()
            for run in self.runs()
            if (not kind or run.kind == kind) and (not status or run.status == status)
        ]
        if limit is None:  # every run, as before paging was asked for
            return jsonify({"runs": entries})
        start = (page - 1) * limit
        return jsonify(
            {
                "runs": entries[start : start + limit],
                "page": page,
                "limit": limit,
                "total": len(entries),
                "pages": max(1, -(-len(entries) // limit)),
            }
        )

    def api_run(self, run_id: str) -> Response:
        run = self.find(run_id)
        key = (run.run_id, run.fingerprint)
        body = self.views.get(key)
        if body is None:
            view = self._view(run, self.load(run))
            body = json.dumps({**run.entry(), "view": view}, default=str, ensure_ascii=False)
            self.views.put(key, body)
        return Response(body, mimetype="application/json")

    def _view(self, run: Run, data: RunData) -> dict[str, Any]:
        try:
            view = view_of(data, self.commit_url)
        except _VIEW_ERRORS as exc:
            raise _cannot_show(run, exc) from None
        view.pop("chart", None)
        return view

    def api_tasks(self) -> Response:
        return jsonify({"runs": self._summaries("task", _task_summary)})

    def api_evolve(self) -> Response:
        return jsonify({"runs": self._summaries("evolve", _evolve_summary)})

    def _summaries(
        self, kind: str, summarize: Callable[[RunData], dict[str, Any]]
    ) -> list[dict[str, Any]]:
        rows = []
        for run in self.runs():
            if run.kind != kind:
                continue
            key = (run.run_id, run.fingerprint)
            summary = self.summaries.get(key)
            if summary is None:
                try:
                    summary = summarize(run.load())
                except READ_ERRORS as exc:
                    summary = {"error": f"cannot be read: {reason(exc)}"}
                except _VIEW_ERRORS as exc:
                    summary = {"error": f"cannot be shown: {type(exc).__name__}"}
                else:
                    self.summaries.put(key, summary)
            rows.append({**run.entry(), "summary": summary})
        return rows

    def health(self) -> tuple[Response, int]:
        seen: set[str] = set()
        for source in self.sources:
            try:
                runs = source.runs()
            except READ_ERRORS as exc:
                where = "" if names_its_source(exc) else f"{source.path}: "
                return jsonify({"ok": False, "error": where + reason(exc)}), 503
            seen.update(run.run_id for run in runs)
        return jsonify({"ok": True, "runs": len(seen), "sources": len(self.sources)}), 200

    # the stream

    def events(self) -> Response:
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        if request.method == "HEAD":
            return Response(b"", mimetype="text/event-stream", headers=headers)
        ticket = self.streams.open(request.remote_addr)
        if isinstance(ticket, Refusal):
            refused = http_errors.error(ticket.status, ticket.message)
            refused.headers["Retry-After"] = str(ticket.retry_after)
            refused.headers["Cache-Control"] = "no-store"
            return refused
        try:
            given = request.headers.get("Last-Event-ID") or request.args.get("last_event_id")
            given = (given or "").strip()[:200]
            resume = parse_change_id(given) if given else None
            body = stream(
                self.feed, resume, given, poll_interval=self.poll_interval, heartbeat=self.heartbeat
            )
            answer = Response(body, mimetype="text/event-stream", headers=headers)
        except BaseException:
            ticket.close()
            raise
        # Whenever the stream ends (the client went, the worker stops), gunicorn closes it.
        answer.call_on_close(ticket.close)
        return answer


def _paging(page: str | None, limit: str | None) -> tuple[int, int | None]:
    """`?page=` (from 1) and `?limit=` (1 to MAX_PAGE) of `/api/runs`; no limit: every run (a
    page alone pages by DEFAULT_PAGE). A value that is no such number is a 400."""
    if page is None and limit is None:
        return 1, None

    def whole(text: str | None, name: str, default: int, most: int) -> int:
        if text is None:
            return default
        if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= most:
            raise Problem(400, f"{name} must be a whole number from 1 to {most}")
        return int(text)

    return whole(page, "page", 1, 1_000_000), whole(limit, "limit", DEFAULT_PAGE, MAX_PAGE)


def _task_summary(data: RunData) -> dict[str, Any]:
    view = run_views.task_view(data.run_id, data.events, data.times, data.status, ())
    return {k: view[k] for k in ("status", "current_stage", "question")}


def _evolve_summary(data: RunData) -> dict[str, Any]:
    from freemad.evolve.run_report import report_data  # what evolve_view shows, without its chart

    report = report_data(data.run_id, data.events)
    return {
        "status": report["status"],
        "stop_reason": report["stop_reason"],
        "incumbent": report["incumbent"],
        "versions": len(report["versions"]),
    }


def _cannot_show(run: Run, exc: BaseException) -> Problem:
    return Problem(500, f"run {run.run_id} cannot be shown: {type(exc).__name__}")


__all__ = ["DashboardSettings", "SourceError", "build_sources", "create_app", "stderr_warn"]
