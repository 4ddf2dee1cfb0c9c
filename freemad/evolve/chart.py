"""The evolve score chart as a self-contained, accessible SVG, drawn from plain chart data. No I/O.

Deterministic: every coordinate and number is formatted with a fixed precision, so the same
data draws the same bytes. Drawn with the shared chart kit (`freemad.svg_chart`): every text goes
through its `xml_text`; the goal never reaches the chart.
With `scale="auto"` (the dashboards' pages) the value axis is logarithmic when the plotted values
are all positive and span more than two decades (a runtime going 45 -> 0.28 -> 0.007 would
otherwise draw every improvement after the first at zero); the axis says so. Shapes carry the
meaning as well as colours do (circles, crosses, dashed and solid lines).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from freemad.svg_chart import (
    AXIS,
    GRID,
    format_number,
    log_ticks,
    nice_number,
    nice_ticks,
    px,
    svg_document,
    svg_head,
    tick_labels,
    uses_log_scale,
    xml_text,
)

Status = Literal["admitted", "rejected", "failed"]
Scale = Literal["linear", "auto"]

# Okabe-Ito blue for the incumbent, greys and black for the rest; red only for people.
INCUMBENT = "#0072B2"
REJECTED_FILL = "#9E9E9E"
REJECTED_STROKE = "#555555"
FAILED = "#222222"
INTERVENTION = "#6A3D9A"
ESCALATION = "#D62728"

_LEFT, _RIGHT, _TOP, _BOTTOM = 84, 24, 44, 48
_CHAR_WIDTH = 6.6  # an estimate at font-size 12, for the legend's layout only


@dataclass(frozen=True, slots=True)
class Point:
    """One judged candidate. `value` is None when it has no measurement of the component."""

    iteration: int
    value: float | None
    status: Status
    version: int | None
    label: str  # its tooltip


@dataclass(frozen=True, slots=True)
class Marker:
    """A vertical line after an iteration: a supervisor intervention or a question to a person."""

    after_iteration: int
    kind: Literal["intervention", "escalation"]
    label: str  # what the supervisor detected: "stall" or "loop"


@dataclass(frozen=True, slots=True)
class ChartData:
    component: str | None
    direction: str | None  # "maximize", "minimize" or None when unknown
    points: Sequence[Point]
    markers: Sequence[Marker]


class _Frame:
    """Data space to pixels: x is the iteration, y the component (its log10 on a log scale)."""

    def __init__(
        self,
        width: int,
        height: int,
        xs: tuple[float, float],
        ys: tuple[float, float],
        log: bool = False,
    ):
        self.left, self.top = float(_LEFT), float(_TOP)
        self.right = max(float(width - _RIGHT), self.left + 10)
        self.bottom = max(float(height - _BOTTOM), self.top + 10)
        self.xs, self.log = xs, log
        self.ys = (math.log10(ys[0]), math.log10(ys[1])) if log else ys

    def x(self, iteration: float) -> float:
        low, high = self.xs
        return self.left + (iteration - low) / (high - low) * (self.right - self.left)

    def y(self, value: float) -> float:
        low, high = self.ys
        value = math.log10(value) if self.log else value
        share = (value - low) / (high - low) if high > low else 0.5
        if not math.isfinite(share):  # a range wider than floats: halve before subtracting
            share = (value / 2 - low / 2) / (high / 2 - low / 2)
        return self.bottom - share * (self.bottom - self.top)


def draw_score_chart(
    data: ChartData, *, width: int = 720, height: int = 320, scale: Scale = "linear"
) -> str:
    """The chart as an SVG document (one line per element, ending in a newline)."""
    title = f"{data.component or 'score'} by iteration"
    values = [p.value for p in data.points if p.value is not None]
    log = scale == "auto" and uses_log_scale(values)
    head = svg_head(width, height, name="evolve-chart", title=title, desc=describe(data, log=log))
    if not data.points:
        body = [
            f'<text x="{px(width / 2)}" y="{px(height / 2)}" text-anchor="middle" '
            f'fill="{AXIS}" font-size="14">no measurements yet</text>'
        ]
    else:
        body = _plot(data, width, height, log)
    return svg_document(head, body)


def describe(data: ChartData, *, log: bool = False) -> str:
    """The chart's text alternative."""
    if not data.points:
        return "No measurements yet."
    name = data.component or "score"
    admitted = [p for p in data.points if p.status == "admitted" and p.value is not None]
    versions = ", ".join(
        f"v{p.version} {format_number(p.value)} at {p.iteration}"
        for p in admitted
        if p.value is not None
    )
    scale = " (on a log scale)" if log else ""
    parts = [
        f"{name} by iteration{_better(data.direction)}{scale}: {versions or 'no admitted version'}"
    ]
    rejected = sum(1 for p in data.points if p.status == "rejected")
    failed = sum(1 for p in data.points if p.status == "failed")
    parts.append(f"{rejected} rejected, {failed} failed")
    for kind, words in (("intervention", "interventions"), ("escalation", "questions to a person")):
        found = [m for m in data.markers if m.kind == kind]
        if found:
            after = ", ".join(f"{m.after_iteration} ({m.label})" for m in found)
            parts.append(f"{words} after iteration {after}")
    return "; ".join(parts) + "."


def _better(direction: str | None) -> str:
    return {"minimize": " (lower is better)", "maximize": " (higher is better)"}.get(
        direction or "", ""
    )


def _plot(data: ChartData, width: int, height: int, log: bool) -> list[str]:
    values = [p.value for p in data.points if p.value is not None]
    if log:
        yticks = log_ticks(min(values), max(values))
        labels = [format_number(t) for t in yticks]
    else:
        yticks, ystep = nice_ticks(min(values), max(values)) if values else nice_ticks(0.0, 1.0)
        labels = tick_labels(yticks, ystep)
    last = max(p.iteration for p in data.points)
    last = max([last, *(m.after_iteration + 1 for m in data.markers)])
    frame = _Frame(width, height, (-0.5, last + 0.5), (yticks[0], yticks[-1]), log)
    out = _legend(width)
    out += _y_axis(frame, yticks, labels, data)
    out += _x_axis(frame, last)
    out += _markers(frame, data.markers)
    out += _incumbent_line(frame, data.points)
    out += [_point(frame, p) for p in data.points]
    if not values:
        missing = (
            f"no successful measurement of {data.component} yet"
            if data.component
            else "no comparator component to plot"
        )
        out.append(
            f'<text x="{px((frame.left + frame.right) / 2)}" y="{px((frame.top + frame.bottom) / 2)}" '
            f'text-anchor="middle" fill="{AXIS}">{xml_text(missing)}</text>'
        )
    return out


def _legend(width: int) -> list[str]:
    items = [
        ("admitted version", f'<circle cx="{{x}}" cy="16" r="5" fill="{INCUMBENT}"/>'),
        (
            "rejected",
            f'<circle cx="{{x}}" cy="16" r="3.5" fill="{REJECTED_FILL}" stroke="{REJECTED_STROKE}"/>',
        ),
        ("failed", _cross_path("{x}", "16", FAILED)),
        (
            "intervention",
            f'<line x1="{{x}}" y1="9" x2="{{x}}" y2="23" stroke="{INTERVENTION}" '
            'stroke-width="2" stroke-dasharray="4 3"/>',
        ),
        (
            "question to a person",
            f'<line x1="{{x}}" y1="9" x2="{{x}}" y2="23" stroke="{ESCALATION}" stroke-width="2"/>',
        ),
    ]
    out = ['<g class="legend">']
    x = float(_LEFT)
    for text, shape in items:
        out.append(shape.replace("{x}", px(x)))
        out.append(f'<text x="{px(x + 10)}" y="20" fill="{AXIS}">{text}</text>')
        x += 26 + len(text) * _CHAR_WIDTH
    out.append("</g>")
    return out if x - 16 <= width else []  # too narrow for a legend: leave it out


def _y_axis(frame: _Frame, ticks: list[float], labels: list[str], data: ChartData) -> list[str]:
    out = ['<g class="y-axis">']
    for tick, label in zip(ticks, labels, strict=True):
        y = px(frame.y(tick))
        out.append(
            f'<line x1="{px(frame.left)}" y1="{y}" x2="{px(frame.right)}" y2="{y}" stroke="{GRID}"/>'
        )
        out.append(
            f'<text x="{px(frame.left - 6)}" y="{y}" dy="4" text-anchor="end" '
            f'fill="{AXIS}">{xml_text(label)}</text>'
        )
    out.append(
        f'<line x1="{px(frame.left)}" y1="{px(frame.top)}" x2="{px(frame.left)}" '
        f'y2="{px(frame.bottom)}" stroke="{AXIS}"/>'
    )
    name = f"{data.component or 'score'}{_better(data.direction)}"
    name += " (log scale)" if frame.log else ""
    middle = px((frame.top + frame.bottom) / 2)
    out.append(
        f'<text x="16" y="{middle}" text-anchor="middle" fill="{AXIS}" '
        f'transform="rotate(-90 16 {middle})">{xml_text(name)}</text>'
    )
    out.append("</g>")
    return out


def _x_axis(frame: _Frame, last: int) -> list[str]:
    step = max(1, math.ceil(nice_number(max(last, 1) / 8, rounded=True)))
    bottom = px(frame.bottom)
    out = [
        '<g class="x-axis">',
        f'<line x1="{px(frame.left)}" y1="{bottom}" x2="{px(frame.right)}" y2="{bottom}" '
        f'stroke="{AXIS}"/>',
    ]
    for iteration in range(0, last + 1, step):
        x = px(frame.x(iteration))
        out.append(
            f'<line x1="{x}" y1="{bottom}" x2="{x}" y2="{px(frame.bottom + 5)}" stroke="{AXIS}"/>'
        )
        out.append(
            f'<text x="{x}" y="{px(frame.bottom + 18)}" text-anchor="middle" '
            f'fill="{AXIS}">{iteration}</text>'
        )
    out.append(
        f'<text x="{px((frame.left + frame.right) / 2)}" y="{px(frame.bottom + 38)}" '
        f'text-anchor="middle" fill="{AXIS}">iteration</text>'
    )
    out.append("</g>")
    return out


def _markers(frame: _Frame, markers: Sequence[Marker]) -> list[str]:
    out: list[str] = []
    for marker in markers:
        x = px(frame.x(marker.after_iteration + 0.5))
        human = marker.kind == "escalation"
        colour, dash = (ESCALATION, "") if human else (INTERVENTION, ' stroke-dasharray="6 4"')
        label_y = px(frame.top + (26 if human else 12))
        text = f"asked ({marker.label})" if human else marker.label
        out += [
            f'<g class="marker {marker.kind}">',
            f"<title>{xml_text(f'after iteration {marker.after_iteration}: {text}')}</title>",
            f'<line x1="{x}" y1="{px(frame.top)}" x2="{x}" y2="{px(frame.bottom)}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>',
            f'<text x="{x}" y="{label_y}" dx="4" fill="{colour}" font-size="11">'
            f"{xml_text(text)}</text>",
            "</g>",
        ]
    return out


def _incumbent_line(frame: _Frame, points: Sequence[Point]) -> list[str]:
    """A step line: each version holds until the next one replaces it, up to the last point."""
    versions = [p for p in points if p.status == "admitted" and p.value is not None]
    if not versions:
        return []
    steps: list[str] = []
    for point in versions:
        assert point.value is not None  # filtered above; for the type checker
        if steps:
            steps.append(f"H{px(frame.x(point.iteration))} V{px(frame.y(point.value))}")
        else:
            steps.append(f"M{px(frame.x(point.iteration))} {px(frame.y(point.value))}")
    steps.append(f"H{px(frame.x(max(p.iteration for p in points)))}")
    return [
        f'<path class="incumbent" d="{" ".join(steps)}" fill="none" stroke="{INCUMBENT}" '
        'stroke-width="2"/>'
    ]


def _cross_path(x: str, y: str, colour: str) -> str:
    return (
        f'<path d="M{x} {y} m-4 -4 l8 8 m0 -8 l-8 8" stroke="{colour}" stroke-width="2" '
        'fill="none"/>'
    )


def _point(frame: _Frame, point: Point) -> str:
    x = frame.x(point.iteration)
    title = f"<title>{xml_text(point.label)}</title>"
    head = f'<g class="point {point.status}" data-iteration="{point.iteration}">{title}'
    if point.value is None:
        return f"{head}{_cross_path(px(x), px(frame.bottom - 8), FAILED)}</g>"
    y = frame.y(point.value)
    if point.status == "admitted":
        label = f"v{point.version}" if point.version is not None else "admitted"
        return (
            f'{head}<circle cx="{px(x)}" cy="{px(y)}" r="6" fill="{INCUMBENT}" '
            f'stroke="#FFFFFF" stroke-width="1.5"/>'
            f'<text x="{px(x + 8)}" y="{px(max(y - 7, frame.top + 10))}" '
            f'fill="{INCUMBENT}" font-weight="bold">{xml_text(label)}</text></g>'
        )
    return (
        f'{head}<circle cx="{px(x)}" cy="{px(y)}" r="3.5" fill="{REJECTED_FILL}" '
        f'stroke="{REJECTED_STROKE}"/></g>'
    )
