"""The debate's scores per round as a self-contained, accessible SVG. Pure and deterministic;
drawn with the shared chart kit (`freemad.svg_chart`).

One line per answer, its cumulative Free-MAD score after each round; the winner is drawn thick
and labelled. Answers are named by their ids, as everywhere else (the CLI, the comments). Colours are the Okabe-Ito palette (told apart by people with colour-blindness),
and every line is labelled at its end, so colour is never the only cue. The same numbers are
in the page's score table, the chart's text alternative.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from freemad.svg_chart import (
    AXIS,
    GRID,
    PALETTE,
    format_number,
    nice_ticks,
    px,
    svg_document,
    svg_head,
    tick_labels,
    xml_text,
)

_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 168, 20, 40  # the right margin fits "<16-hex id> 46.6667"


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
    head = svg_head(
        width,
        height,
        name="debate-chart",
        title="Score of each answer after each round",
        desc=_describe(series, order, winner),
    )
    if not series:
        body = [
            f'<text x="{px(width / 2)}" y="{px(height / 2)}" text-anchor="middle" '
            f'fill="{AXIS}">no scores recorded</text>'
        ]
        return svg_document(head, body)
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
            f'<line x1="{left}" y1="{px(y(tick))}" x2="{right}" y2="{px(y(tick))}" stroke="{GRID}"/>'
        )
        body.append(
            f'<text x="{left - 6}" y="{px(y(tick))}" dy="4" text-anchor="end" '
            f'fill="{AXIS}">{xml_text(label)}</text>'
        )
    for index in range(len(rounds)):
        body.append(
            f'<text x="{px(x(index))}" y="{bottom + 18}" text-anchor="middle" '
            f'fill="{AXIS}">{index}</text>'
        )
    body.append(
        f'<text x="{px((left + right) / 2)}" y="{height - 6}" text-anchor="middle" '
        f'fill="{AXIS}">round</text>'
    )
    taken: list[float] = []
    for n, answer in enumerate(order):
        colour = PALETTE[n % len(PALETTE)]
        points = series[answer]
        thick = "3.5" if answer == winner else "2"
        path = " ".join(f"{px(x(i))},{px(y(v))}" for i, v in points)
        name = answer + (" (winner)" if answer == winner else "")
        body.append(f'<g class="answer"><title>{xml_text(name)}</title>')
        body.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="{thick}"/>'
        )
        body += [
            f'<circle cx="{px(x(i))}" cy="{px(y(v))}" r="3.5" fill="{colour}"/>' for i, v in points
        ]
        end_i, end_v = points[-1]
        label_y = y(end_v) + 4
        while any(abs(label_y - used) < 13 for used in taken):  # answers that end level
            label_y += 13
        taken.append(label_y)
        body.append(
            f'<text x="{px(x(end_i) + 8)}" y="{px(label_y)}" '
            f'fill="{colour}" font-weight="{"bold" if answer == winner else "normal"}">'
            f"{xml_text(answer)} {xml_text(format_number(end_v))}</text>"
        )
        body.append("</g>")
    return svg_document(head, body)


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
