"""A report rendered for people: a standalone HTML page (the methods' table, the comparisons, and
a plot of accuracy against cost with each method's interval) and markdown for a pull request's
comment. Every label (agent ids, dataset names, reasons) comes from the user's files and is
escaped: Jinja2's autoescape in HTML, the shared chart kit's `xml_text` in the plot's SVG
(`freemad.svg_chart`), `freemad.markdown` in markdown."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
from markupsafe import Markup

from freemad.eval.methods import EXTRA_METHODS, FINALIZED, FREEMAD_DEBATE, METHODS
from freemad.markdown import escape_markdown
from freemad.svg_chart import svg_document, svg_head, xml_text

_WIDTH, _HEIGHT = 640, 360
_LEFT, _RIGHT, _TOP, _BOTTOM = 60, 20, 20, 50


def method_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per method, each single agent after `single`, in the table's order."""
    methods = report.get("methods", {})
    graded = max(int(report.get("graded") or report.get("items") or 0), 1)
    keys: list[tuple[str, Mapping[str, Any]]] = []
    if "single" in methods:
        keys.append(("single (mean)", methods["single"]))
        keys += [(f"single: {a}", s) for a, s in methods["single"].get("agents", {}).items()]
    order = (*METHODS[1:], FREEMAD_DEBATE, FINALIZED, *EXTRA_METHODS)
    keys += [(name, methods[name]) for name in order if name in methods]
    rows = []
    for name, entry in keys:
        cost = entry.get("cost") or {}
        per = cost.get("per_correct") or {}
        low, high = entry.get("interval", [0.0, 1.0])
        rows.append(
            {
                "name": name,
                "accuracy": float(entry.get("accuracy", 0.0)),
                "correct": entry.get("correct", 0),
                "total": entry.get("total", 0),
                "low": float(low),
                "high": float(high),
                "tokens_per_item": (cost.get("tokens") or 0) / graded,
                "tokens_per_correct": per.get("tokens"),
                "seconds_per_correct": per.get("seconds"),
                "usd_per_correct": per.get("usd"),
                "calls": entry.get("calls", ""),
            }
        )
    return rows


def plot_svg(rows: list[dict[str, Any]]) -> Markup:
    """Accuracy (y, with its interval as a whisker) against tokens per item (x), one labelled
    point per method."""
    most = max((row["tokens_per_item"] for row in rows), default=0) or 1.0
    span_x = _WIDTH - _LEFT - _RIGHT
    span_y = _HEIGHT - _TOP - _BOTTOM

    def x(tokens: float) -> float:
        return round(_LEFT + span_x * tokens / (most * 1.1), 1)

    def y(share: float) -> float:
        return round(_TOP + span_y * (1 - share), 1)

    parts = svg_head(
        _WIDTH,
        _HEIGHT,
        name="plot",
        title="Accuracy against tokens per item, with 95% intervals",
        desc=_describe(rows),
        sized=False,
    )
    parts += [
        f'<line x1="{_LEFT}" y1="{y(0)}" x2="{_WIDTH - _RIGHT}" y2="{y(0)}" stroke="#555"/>',
        f'<line x1="{_LEFT}" y1="{y(0)}" x2="{_LEFT}" y2="{y(1)}" stroke="#555"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<text x="{_LEFT - 6}" y="{y(tick) + 4}" text-anchor="end" font-size="11">'
            f"{tick:.0%}</text>"
        )
    parts.append(
        f'<text x="{_LEFT + span_x / 2}" y="{_HEIGHT - 10}" text-anchor="middle" '
        'font-size="12">tokens per item</text>'
    )
    for tick in (0.0, 0.5, 1.0):
        parts.append(
            f'<text x="{x(most * 1.1 * tick)}" y="{y(0) + 16}" text-anchor="middle" '
            f'font-size="11">{most * 1.1 * tick:,.0f}</text>'
        )
    for (cx, cy), group in _points(rows, x, y).items():
        names = ", ".join(row["name"] for row in group)
        parts.append(f"<g><title>{xml_text(names)}</title>")
        for row in group:
            parts.append(
                f'<line x1="{cx}" y1="{y(row["low"])}" x2="{cx}" y2="{y(row["high"])}" '
                'stroke="#36c"/>'
            )
        parts.append(f'<circle cx="{cx}" cy="{cy}" r="4" fill="#36c"/></g>')
    for (lx, ly), label, anchor in _labels(rows, x, y):
        parts.append(
            f'<text x="{lx}" y="{ly}" text-anchor="{anchor}" font-size="11">{xml_text(label)}</text>'
        )
    return Markup(svg_document(parts, []))  # noqa: S704 - every label above went through xml_text()


def _describe(rows: list[dict[str, Any]]) -> str:
    """The plot's text alternative: each method's accuracy, interval and tokens per item."""
    if not rows:
        return "No methods."
    parts = [
        f"{row['name']}: {row['accuracy']:.1%} ({row['low']:.1%} to {row['high']:.1%}) at "
        f"{row['tokens_per_item']:,.0f} tokens per item"
        for row in rows
    ]
    return "Accuracy of each method. " + "; ".join(parts) + "."


Scale = Callable[[float], float]


def _points(
    rows: list[dict[str, Any]], x: Scale, y: Scale
) -> dict[tuple[float, float], list[dict[str, Any]]]:
    """Methods by where their point falls: methods at one spot share it."""
    points: dict[tuple[float, float], list[dict[str, Any]]] = {}
    for row in rows:
        points.setdefault((x(row["tokens_per_item"]), y(row["accuracy"])), []).append(row)
    return points


def _labels(
    rows: list[dict[str, Any]], x: Scale, y: Scale
) -> list[tuple[tuple[float, float], str, str]]:
    """One label per point (its methods' names), right of it (left where it would run past the
    plot's edge), moved down a line at a time until it overlaps no label placed before it."""
    placed: list[tuple[float, float, float]] = []  # left, right, baseline
    labels = []
    for (cx, cy), group in sorted(_points(rows, x, y).items()):
        text = ", ".join(row["name"] for row in group)
        width = 6.2 * len(text)
        anchor = "end" if cx + 6 + width > _WIDTH - 2 else "start"
        left = cx - 6 - width if anchor == "end" else cx + 6
        right, line = left + width, cy - 6
        for _ in range(12):
            if not any(a < right and left < b and abs(base - line) < 13 for a, b, base in placed):
                break
            line += 13
        placed.append((left, right, line))
        at = cx - 6 if anchor == "end" else left
        labels.append(((round(at, 1), round(line, 1)), text, anchor))
    return labels


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("freemad", "templates/eval"),
        undefined=jinja2.StrictUndefined,
        # HTML escaped by Jinja2; markdown's untrusted text goes through the `md` filter.
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default=False),
        keep_trailing_newline=True,
    )
    env.filters["md"] = lambda value: escape_markdown(value, 200)
    env.filters["pct"] = lambda value: f"{value:.1%}"
    env.filters["num"] = lambda value, digits=0: "-" if value is None else f"{value:,.{digits}f}"
    return env


def render_html(report: Mapping[str, Any]) -> str:
    rows = method_rows(report)
    template = _environment().get_template("report.html.j2")
    return template.render(report=report, rows=rows, plot=plot_svg(rows))


def render_markdown(report: Mapping[str, Any]) -> str:
    template = _environment().get_template("report.md.j2")
    return template.render(report=report, rows=method_rows(report))
