"""The evolve run report: markdown and a score chart, rendered from the run's events alone. No I/O.

Pure and deterministic: no clock (event times are left out), no randomness, numbers at a fixed
precision, so the same events render the same bytes. Goals, summaries, reasons, directions and
answers are untrusted text; they are escaped for markdown here (`escape_markdown`) and never
reach the template raw. `trajectory_rows` holds plain, unescaped text for other renderers.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import jinja2

from freemad.core.evolve.fold import fold
from freemad.core.evolve.judge import Direction
from freemad.evolve.chart import (
    ChartData,
    Marker,
    Point,
    Scale,
    draw_score_chart,
)
from freemad.evolve.worker_protocol import objective
from freemad.markdown import code_span, escape_markdown, escape_markdown_block, one_line
from freemad.svg_chart import format_number

Events = Sequence[tuple[str, Mapping[str, Any]]]

REASON_CHARS = 100


def _number(value: float | None) -> str:
    return "-" if value is None else format_number(value)


# --- reading the events ---------------------------------------------------------------------


def _created(events: Events) -> Mapping[str, Any]:
    return next((data for kind, data in events if kind == "run_created"), {})


def _comparator(events: Events) -> list[Mapping[str, Any]]:
    entries = _created(events).get("comparator") or []
    return [e for e in entries if isinstance(e, Mapping) and e.get("component")]


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def trajectory_rows(events: Events) -> list[dict[str, Any]]:
    """One row per judged candidate, in order: iteration, agent, status ("admitted", "rejected",
    "failed"), verdict ("admitted v3", "rejected", "failed: stage bench"), value (the first
    comparator component; None for a failed measurement), reason (one line, shortened), version
    (None unless admitted) and summary (the proposal's, one line, shortened). Plain text."""
    comparator = _comparator(events)
    component = str(comparator[0]["component"]) if comparator else None
    summaries: dict[tuple[int, str, int | None], str] = {}
    rows: list[dict[str, Any]] = []
    for kind, data in events:
        if kind == "candidate_proposed":
            # a generation's candidates share an iteration (and often an agent): its index tells
            key = (int(data["iteration"]), str(data.get("agent", "")), _int(data.get("candidate")))
            summaries[key] = str(data.get("summary") or data.get("cause") or "")
        elif kind == "candidate_judged":
            rows.append(_row(data, component, summaries))
    return rows


def _row(
    data: Mapping[str, Any],
    component: str | None,
    summaries: Mapping[tuple[int, str, int | None], str],
) -> dict[str, Any]:
    iteration, agent = int(data["iteration"]), str(data.get("agent") or "")
    candidate = _int(data.get("candidate")) if "generation" in data else None
    verdict = data.get("verdict") or {}
    measurement = data.get("measurement") or {}
    admitted, measured = bool(verdict.get("admitted")), bool(measurement.get("ok"))
    version = _int(data.get("version")) if admitted else None
    if admitted:
        status, label = "admitted", "admitted" if version is None else f"admitted v{version}"
    elif not measured:
        stage = one_line(measurement.get("failed_stage") or "")
        status, label = "failed", f"failed: stage {stage}" if stage else "failed"
    else:
        status, label = "rejected", "rejected"
    components = measurement.get("components") or {}
    value = _finite(components.get(component)) if measured and component else None
    summary = summaries.get((iteration, agent, candidate), "the seed" if iteration == 0 else "")
    return {
        "iteration": iteration,
        "agent": agent,
        "status": status,
        "verdict": label,
        "value": value,
        "reason": one_line(verdict.get("reason", ""), REASON_CHARS),
        "version": version,
        "summary": one_line(summary, REASON_CHARS),
    }


def generation_rows(events: Events) -> list[dict[str, Any]]:
    """One row per candidate of every generation (evolve.population), in order: iteration,
    candidate, agent, outcome ("admitted", "beaten", "unconfirmed", "rejected", "failed"), value
    (the first comparator component, None when not measured), seconds and reason. Plain text."""
    comparator = _comparator(events)
    component = str(comparator[0]["component"]) if comparator else None
    rows: list[dict[str, Any]] = []
    for kind, data in events:
        generation = data.get("generation") if kind == "candidate_judged" else None
        if not isinstance(generation, Mapping):
            continue
        for item in generation.get("candidates") or []:
            components = item.get("components") or {}
            measured = bool(item.get("ok"))
            rows.append(
                {
                    "iteration": int(data["iteration"]),
                    "candidate": _int(item.get("candidate")) or 0,
                    "agent": one_line(str(item.get("agent") or "")),
                    "outcome": one_line(str(item.get("outcome") or "")),
                    "value": _finite(components.get(component)) if component and measured else None,
                    "seconds": _finite(item.get("seconds")),
                    "reason": one_line(str(item.get("reason") or ""), REASON_CHARS),
                    "version": _int(data.get("version"))
                    if item.get("outcome") == "admitted"
                    else None,
                }
            )
    return rows


def throughput(events: Events) -> dict[str, Any] | None:
    """Generations, candidates, candidates judged per hour of the generations' own time, and
    the parallel speed-up (the candidates' seconds over the generations'); None without any."""
    generations = candidates = 0
    spent = worked = 0.0
    for kind, data in events:
        generation = data.get("generation") if kind == "candidate_judged" else None
        if not isinstance(generation, Mapping):
            continue
        items = generation.get("candidates") or []
        generations += 1
        candidates += len(items)
        spent += _finite(data.get("seconds")) or 0.0
        worked += sum(_finite(item.get("seconds")) or 0.0 for item in items)
    if not generations:
        return None
    return {
        "generations": generations,
        "candidates": candidates,
        "per_hour": None if spent <= 0 else round(candidates * 3600 / spent),
        "speedup": None if spent <= 0 else round(worked / spent, 2),
    }


def _points(events: Events, component: str | None) -> list[Point]:
    """A point per judged candidate: a generation's every candidate at its iteration."""
    by_generation: dict[int, list[dict[str, Any]]] = {}
    for row in generation_rows(events):
        by_generation.setdefault(row["iteration"], []).append(row)
    points = []
    for row in trajectory_rows(events):
        members = by_generation.get(row["iteration"])
        if not members:
            value = "" if row["value"] is None else f", {component} {_number(row['value'])}"
            label = f"iteration {row['iteration']} ({row['agent'] or '-'}): {row['verdict']}{value}"
            points.append(
                Point(row["iteration"], row["value"], row["status"], row["version"], label)
            )
            continue
        for m in members:
            value = "" if m["value"] is None else f", {component} {_number(m['value'])}"
            outcome = m["outcome"] if m["version"] is None else f"admitted v{m['version']}"
            label = f"iteration {m['iteration']} candidate {m['candidate']}: {outcome}{value}"
            status: Literal["admitted", "rejected", "failed"] = (
                "admitted"
                if m["version"] is not None
                else "failed"
                if m["outcome"] == "failed"
                else "rejected"
            )
            points.append(Point(m["iteration"], m["value"], status, m["version"], label))
    return points


def _markers(events: Events) -> list[Marker]:
    markers = []
    for kind, data in events:
        if kind in ("intervention", "waiting_for_human"):
            detection = one_line(data.get("detection") or "", 20)
            after = int(data["after_iteration"])
            which: Literal["intervention", "escalation"] = (
                "intervention" if kind == "intervention" else "escalation"
            )
            markers.append(Marker(after, which, detection))
    return markers


def score_chart_svg(
    events: Events, *, width: int = 720, height: int = 320, scale: Scale = "linear"
) -> str:
    """The first comparator component by iteration: versions, rejected and failed candidates,
    interventions and questions to a person (on a log scale where `scale="auto"` finds one
    fits: the dashboards' pages)."""
    comparator = _comparator(events)
    first = comparator[0] if comparator else {}
    component = str(first["component"]) if first else None
    points = _points(events, component)
    direction = str(first.get("direction")) if first else None
    data = ChartData(component, direction, points, _markers(events))
    return draw_score_chart(data, width=width, height=height, scale=scale)


# --- the report -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    """A comparator entry as `run_created` stored it (fits ComparatorSpec)."""

    component: str
    direction: Direction
    epsilon: float
    max_regress: float | None


def _admission_rule(created: Mapping[str, Any]) -> str:
    entries = [
        _Entry(
            one_line(e["component"]),
            "maximize" if e.get("direction") == "maximize" else "minimize",
            _finite(e.get("epsilon")) or 0.0,
            _finite(e.get("max_regress")),
        )
        for e in created.get("comparator") or []
        if isinstance(e, Mapping) and e.get("component")
    ]
    if not entries:
        return "no comparator was recorded for this run"
    rule = objective([one_line(g) for g in created.get("gate") or []], entries)
    limits = [
        f"{e.component} may not regress more than {_number(e.max_regress)} from its best ever"
        for e in entries
        if e.max_regress is not None
    ]
    return (
        f"a candidate is admitted when {rule}; the first component that differs beyond its "
        f"epsilon decides{''.join('; ' + limit for limit in limits)}. The baseline (iteration 0, "
        "the seed) needs only the stages and the gate."
    )


def _escalations(events: Events) -> list[dict[str, Any]]:
    """Each question to a person with what became of it: the next answer or decline is its."""
    asked: list[dict[str, Any]] = []
    for kind, data in events:
        if kind == "waiting_for_human":
            asked.append(
                {
                    "after_iteration": int(data["after_iteration"]),
                    "detection": str(data.get("detection") or ""),
                    "question": str(data.get("question") or ""),
                    "answer": None,
                    "outcome": None,
                }
            )
        elif kind in ("human_answer", "human_declined") and asked and not asked[-1]["outcome"]:
            answered = kind == "human_answer"
            asked[-1]["outcome"] = "answered" if answered else "declined; the run stopped"
            asked[-1]["answer"] = str(data.get("text") or "") if answered else None
    for question in asked:
        question["outcome"] = question["outcome"] or "waiting for an answer"
    return asked


def _report_data(run_id: str, events: Events, svg_name: str) -> dict[str, Any]:
    state = fold(run_id, events)
    created = _created(events)
    components = [str(e["component"]) for e in _comparator(events)]
    versions = [
        {
            "version": v.version,
            "iteration": v.iteration,
            "commit": v.commit[:12],
            "sha": v.commit,
            "values": [_number(v.components.get(c)) for c in components],
        }
        for v in state.versions
    ]
    rows = trajectory_rows(events)
    for row in rows:
        row["value_text"] = _number(row["value"])
    incumbent = state.incumbent
    return {
        "run_id": run_id,
        "goal": state.goal,
        "status": state.status.value,
        "stop_reason": state.stop_reason,
        "iterations": state.iterations,
        "seed_commit": state.seed_commit[:12],
        "seed_ref": str(created.get("seed_ref") or ""),
        "branch": state.branch,
        "variation": str(created.get("variation") or ""),
        "rule": _admission_rule(created),
        "components": components,
        "primary": components[0] if components else "value",
        "versions": versions,
        "incumbent": None if incumbent is None else f"v{incumbent.version}",
        "rows": rows,
        "svg": quote(svg_name),
        "interventions": [
            {
                "after_iteration": int(d["after_iteration"]),
                "detection": str(d.get("detection") or ""),
                "directions": [str(t) for t in d.get("directions") or []],
                "error": None if d.get("error") is None else str(d["error"]),
            }
            for d in state.interventions
        ],
        "escalations": _escalations(events),
        "generations": [
            {**row, "value_text": _number(row["value"])} for row in generation_rows(events)
        ],
        "throughput": throughput(events),
        "abandoned": [
            {"iteration": int(d["iteration"]), "reason": str(d.get("reason") or "")}
            for kind, d in events
            if kind == "iteration_abandoned"
        ],
    }


def report_data(run_id: str, events: Events) -> dict[str, Any]:
    """The report's data as plain, unescaped values (the dashboards render it as HTML)."""
    return _report_data(run_id, events, "score.svg")


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("freemad", "templates"),
        autoescape=False,  # noqa: S701 - markdown, not HTML; untrusted text goes through `md`
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["md"] = escape_markdown
    env.filters["mdblock"] = escape_markdown_block
    env.filters["code"] = code_span
    return env


def render_report(run_id: str, events: Events, *, svg_name: str = "score.svg") -> tuple[str, str]:
    """The run's markdown report and its score chart (the markdown shows it as `svg_name`)."""
    markdown = (
        _environment()
        .get_template("evolve_report.md.j2")
        .render(r=_report_data(run_id, events, svg_name))
    )
    return markdown, score_chart_svg(events)
