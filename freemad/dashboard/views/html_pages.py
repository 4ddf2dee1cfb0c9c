"""HTML pages from view data: one Jinja environment, autoescaped, shared by the site and server.

Pure: the same data renders the same bytes (no clock, no randomness). Every page is one
self-contained file: its stylesheet and scripts are inline and allowed by hash in a strict
Content-Security-Policy, charts are inline SVG, and links are relative, so a page works from
`file://`, from a Pages sub-path and from the live server alike. Text from agents, issues and
configs is escaped by autoescaping; the only markup let through is the chart SVG, built with
the one chart kit `freemad.svg_chart`, whose `xml_text` escapes every text they draw, and
highlighted code, Pygments' escaped tokens in spans (`freemad.dashboard.views.fenced_code`).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import jinja2
from markupsafe import Markup

from freemad.dashboard.run_records import RunData
from freemad.dashboard.views import debate_views, run_views
from freemad.dashboard.views.agent_views import agent_slug
from freemad.dashboard.views.fenced_code import highlighted, parts

_CSS_CLASS = re.compile(r"[^a-z0-9_-]")


def _when(seconds: Any, with_seconds: bool = False) -> str:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        return "-"
    try:
        moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return "-"
    return moment.strftime("%Y-%m-%d %H:%M:%S" if with_seconds else "%Y-%m-%d %H:%M")


def _duration(seconds: Any) -> str:
    """Seconds as a person reads a duration: 326 ms, 4.2 s, 12 s, 3 min 5 s, 2 h 10 min, 3 d 2 h;
    "-" unknown."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds >= 0:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds >= 1e9:  # longer than any run: a clock gone wrong
        return "-"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours < 48 else f"{hours // 24} d {hours % 24} h"


def _short(text: Any, limit: int) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _css(text: Any) -> str:
    return _CSS_CLASS.sub("_", str(text).lower())[:40]


def _safe_svg(svg: str) -> Markup:
    # Our chart modules build these and escape every text inside (xml_text); nothing else is marked safe.
    return Markup(svg)  # noqa: S704


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("freemad", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(when=_when, duration=_duration, short=_short, css=_css, slug=agent_slug)
    env.filters.update(safe_svg=_safe_svg, parts=parts, highlighted=highlighted)  # markup makers
    return env


def _asset(name: str) -> str:
    loader = _environment().loader
    assert loader is not None
    source, _, _ = loader.get_source(_environment(), f"dashboard/{name}")
    return source.strip()


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@functools.lru_cache(maxsize=4)
def _assets(script_names: tuple[str, ...], live: bool) -> tuple[str, tuple[str, ...], str]:
    css = _asset("site.css")
    scripts = tuple(_asset(name) for name in script_names)
    policy = [
        "default-src 'none'",
        f"style-src {_digest(css)}",
        f"script-src {' '.join(_digest(s) for s in scripts)}" if scripts else "script-src 'none'",
        "img-src data:",
        "base-uri 'none'",
        "form-action 'none'",
    ]
    if live:
        policy.append("connect-src 'self'")
    return css, scripts, "; ".join(policy)


def _page(
    template: str,
    *,
    root: str,
    live: bool,
    canonical: str | None,
    run_id: str | None,
    scripts: tuple[str, ...],
    controls: Mapping[str, Any] | None = None,
    **values: Any,
) -> str:
    # `controls`: the live server's forms (it lets runs be started and steered), and their script.
    # `connect` (in `values`): the page's own script calls the server (live pages' do).
    connect = bool(values.pop("connect", False))
    steer = ("steer.js",) if controls is not None else ()
    names = (*scripts, *steer, *(("live.js",) if live else ()))
    css, inline, csp = _assets(names, live or connect)
    # Our own assets, read from the package: the only text besides charts not escaped.
    return (
        _environment()
        .get_template(f"dashboard/{template}")
        .render(
            css=Markup(css),  # noqa: S704
            scripts=[Markup(s) for s in inline],  # noqa: S704
            csp=csp,
            root=root,
            live=live,
            canonical=canonical,
            run_id=run_id,
            controls=controls,
            **values,
        )
    )


def _canonical(base_url: str | None, path: str) -> str | None:
    return None if not base_url else base_url.rstrip("/") + "/" + path


def render_index(
    entries: Sequence[Mapping[str, Any]],
    *,
    live: bool = False,
    base_url: str | None = None,
    controls: Mapping[str, Any] | None = None,
    evals: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The list of every run, newest first: entries as `Run.entry()` gives them, with the
    facts `IndexFacts` adds where known (outcome, seconds, agents); and the evaluations, each
    `name`, `slug` and its `eval_views.eval_summary` or an `error`."""
    kinds: dict[str, int] = {}
    for entry in entries:
        kinds[entry["kind"]] = kinds.get(entry["kind"], 0) + 1
    runs = []
    for entry in entries:
        agents = [str(a) for a in entry.get("agents") or ()]
        outcome = str(entry.get("outcome") or "")
        words = f"{entry['run_id']} {outcome} {' '.join(agents)} {entry['title']}"
        runs.append(
            {
                **entry,
                "outcome": outcome or "-",
                "agents": agents,
                "seconds": entry.get("seconds"),
                "search": " ".join(words.lower().split())[:500],
            }
        )
    return _page(
        "index.html.j2",
        root="",
        live=live,
        canonical=_canonical(base_url, "index.html"),
        run_id=None,
        scripts=("index.js",),
        controls=controls,
        runs=runs,
        evals=evals,
        counts=sorted(kinds.items()),
        statuses=sorted({e["status"] for e in entries}),
    )


def view_of(data: RunData, commit_url: str | None = None) -> dict[str, Any]:
    """A run's view data, whichever its runtime (what its page shows and the API returns)."""
    if data.kind == "debate" and data.live is not None:
        return debate_views.live_debate_view(data.live)
    if data.kind == "debate":
        view = debate_views.debate_view(data.transcript or {})
        view["run_id"] = view["run_id"] or data.run_id
        return view
    if data.kind == "task":
        artifacts = [(a.name, a.size, a.read()) for a in data.artifacts]
        return run_views.task_view(data.run_id, data.events, data.times, data.status, artifacts)
    wanted = set(run_views.version_diff_ids(data.events))
    diffs = {a.ident: a.read() for a in data.artifacts if a.ident and a.ident in wanted}
    return run_views.evolve_view(data.run_id, data.events, commit_url, diffs)


_TEMPLATES = {"debate": ("debate.html.j2", "d"), "task": ("task.html.j2", "t")}


def render_run(
    data: RunData,
    *,
    commit_url: str | None = None,
    live: bool = False,
    base_url: str | None = None,
    controls: Mapping[str, Any] | None = None,
) -> str:
    """A run's page; it lives at `runs/<run_id>.html`."""
    template, name = _TEMPLATES.get(data.kind, ("evolve.html.j2", "e"))
    if data.live is not None:
        template = "debate_live.html.j2"
    view = view_of(data, commit_url)
    return _page(
        template,
        root="../",
        live=live,
        canonical=_canonical(base_url, f"runs/{data.run_id}.html"),
        run_id=data.run_id,
        scripts=(),
        # A finished debate's page carries its delete form; one in flight, nothing.
        controls=controls if data.live is None else None,
        **{name: view},
    )


def render_config(configs: Sequence[Mapping[str, Any]]) -> str:
    """The live server's configs (`name`, `source`, `config`), read-only (their secrets already
    hidden), at `config.html`; the first is the default."""
    import json

    shown = [{**c, "text": json.dumps(c["config"], indent=2, ensure_ascii=False)} for c in configs]
    return _page(
        "config.html.j2",
        root="",
        live=False,
        canonical=None,
        run_id=None,
        scripts=(),
        configs=shown,
    )


def render_config_editor(names: Sequence[str]) -> str:
    """The live server's config editor (`config_editor`): the names of the config files it
    edits; the text itself is fetched by the page's script, behind the start token."""
    return _page(
        "config_edit.html.j2",
        root="../",
        live=False,
        canonical=None,
        run_id=None,
        scripts=("config_edit.js",),
        connect=True,
        names=list(names),
    )


def render_agents(
    table: Sequence[Mapping[str, Any]], *, live: bool = False, base_url: str | None = None
) -> str:
    """Every agent across the runs (debates, tasks, evolve) (`agent_views.agents_table`); it lives at `agents.html`."""
    return _agents_page("agents.html.j2", "agents.html", live, base_url, table=table)


def render_agent(
    agent: Mapping[str, Any], *, live: bool = False, base_url: str | None = None
) -> str:
    """One agent's page (`agent_views.agent_view`); it lives at `agents/<slug>.html`."""
    path = f"agents/{agent['slug']}.html"
    return _agents_page("agent.html.j2", path, live, base_url, a=agent)


def _agents_page(name: str, path: str, live: bool, base_url: str | None, **values: Any) -> str:
    url, root = _canonical(base_url, path), "../" * path.count("/")
    return _page(name, root=root, live=live, canonical=url, run_id=None, scripts=(), **values)


def render_summary(
    summary: Mapping[str, Any], *, live: bool = False, base_url: str | None = None
) -> str:
    """The transcript summaries (`summary_views.summary_view`); they live at `summary.html`."""
    return _agents_page("summary.html.j2", "summary.html", live, base_url, s=summary)


def render_eval(
    view: Mapping[str, Any], slug: str, *, live: bool = False, base_url: str | None = None
) -> str:
    """An evaluation's page (`eval_views.eval_view`); it lives at `evals/<slug>.html`."""
    path = f"evals/{slug}.html"
    return _page(
        "eval.html.j2",
        root="../",
        live=live,
        canonical=_canonical(base_url, path),
        run_id=None,
        scripts=(),
        e=view,
    )
