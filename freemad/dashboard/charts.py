"""The debate's scores per round as a self-contained, accessible SVG. Pure and deterministic.

One line per answer, its cumulative Free-MAD score after each round; the winner is drawn thick
and labelled. Answers are named by their ids, as everywhere else (the CLI, the comments). Colours are the Okabe-Ito palette (told apart by people with colour-blindness),
and every line is labelled at its end, so colour is never the only cue. The same numbers are
in the page's score table, the chart's text alternative.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from freemad.evolve.chart import format_number, nice_ticks, tick_labels, xml_text

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999")
AXIS, GRID = "#333333", "#E3E3E3"
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 168, 20, 40  # the right margin fits "<16-hex id> 46.6667"


def _f(value: float) -> str:
    return f"{value:.1f}"


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if abs(float(value)) < 1e300 else None


def debate_chart_svg(
    rounds: Sequence[Mapping[str, Any]],
    answers: Sequence[str],
    winner: str | None,
    *,
    width: int = 720,
    height: int = 280,
) -> str:
    """Scores by round of `answers` (their ids, in the order the page lists them)."""
    series: dict[str, list[tuple[int, float]]] = {}
    known = set(answers)
    for index, round_ in enumerate(rounds):
        found = round_.get("scores")
        scores: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        for answer, value in scores.items():
            score = _score(value)
            if answer in known and score is not None:
                series.setdefault(answer, []).append((index, score))
    order = [answer for answer in answers if answer in series]
    head = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        'aria-labelledby="debate-chart-title debate-chart-desc" '
        'font-family="sans-serif" font-size="12">',
        '<title id="debate-chart-title">Score of each answer after each round</title>',
        f'<desc id="debate-chart-desc">{xml_text(_describe(series, order, winner))}</desc>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#FFFFFF"/>',
    ]
    if not series:
        body = [
            f'<text x="{_f(width / 2)}" y="{_f(height / 2)}" text-anchor="middle" '
            f'fill="{AXIS}">no scores recorded</text>'
        ]
        return "\n".join([*head, *body, "</svg>"]) + "\n"
    values = [v for points in series.values() for _, v in points]
    ticks, step = nice_ticks(min(0.0, *values), max(values))
    last = max(1, len(rounds) - 1)
    left, right, top, bottom = _LEFT, width - _RIGHT, _TOP, height - _BOTTOM

    def x(index: float) -> float:
        return left + (right - left) * index / last

    def y(value: float) -> float:
        return bottom - (bottom - top) * (value - ticks[0]) / ((ticks[-1] - ticks[0]) or 1.0)

    body = []
    for tick, label in zip(ticks, tick_labels(ticks, step), strict=True):
        body.append(
            f'<line x1="{left}" y1="{_f(y(tick))}" x2="{right}" y2="{_f(y(tick))}" stroke="{GRID}"/>'
        )
        body.append(
            f'<text x="{left - 6}" y="{_f(y(tick))}" dy="4" text-anchor="end" '
            f'fill="{AXIS}">{xml_text(label)}</text>'
        )
    for index in range(len(rounds)):
        body.append(
            f'<text x="{_f(x(index))}" y="{bottom + 18}" text-anchor="middle" '
            f'fill="{AXIS}">{index}</text>'
        )
    body.append(
        f'<text x="{_f((left + right) / 2)}" y="{height - 6}" text-anchor="middle" '
        f'fill="{AXIS}">round</text>'
    )
    taken: list[float] = []
    for n, answer in enumerate(order):
        colour = PALETTE[n % len(PALETTE)]
        points = series[answer]
        thick = "3.5" if answer == winner else "2"
        path = " ".join(f"{_f(x(i))},{_f(y(v))}" for i, v in points)
        name = answer + (" (winner)" if answer == winner else "")
        body.append(f'<g class="answer"><title>{xml_text(name)}</title>')
        body.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="{thick}"/>'
        )
        body += [
            f'<circle cx="{_f(x(i))}" cy="{_f(y(v))}" r="3.5" fill="{colour}"/>' for i, v in points
        ]
        end_i, end_v = points[-1]
        label_y = y(end_v) + 4
        while any(abs(label_y - used) < 13 for used in taken):  # answers that end level
            label_y += 13
        taken.append(label_y)
        body.append(
            f'<text x="{_f(x(end_i) + 8)}" y="{_f(label_y)}" '
            f'fill="{colour}" font-weight="{"bold" if answer == winner else "normal"}">'
            f"{xml_text(answer)} {xml_text(format_number(end_v))}</text>"
        )
        body.append("</g>")
    return "\n".join([*head, *body, "</svg>"]) + "\n"


def _describe(
    series: Mapping[str, list[tuple[int, float]]],
    order: Sequence[str],
    winner: str | None,
) -> str:
    if not series:
        return "No scores were recorded."
    parts = []
    for answer in order:
        values = ", ".join(format_number(v) for _, v in series[answer])
        mark = " (winner)" if answer == winner else ""
        parts.append(f"{answer}{mark}: {values}")
    return "Score after each round. " + "; ".join(parts) + "."
