"""The one chart kit: what every SVG chart of FREE-MAD is drawn with. Pure: numbers in, text out.

Every chart (the debate's scores, the evolve score chart, an evaluation's accuracy, the eval
report's plot, a simulated sweep) is a self-contained, accessible SVG document built here:
`svg_head` opens it with a title and a text alternative, `svg_document` closes it, and every text
that reaches it goes through `xml_text`. Numbers are formatted at a fixed precision (`px`,
`format_number`), so the same data draws the same bytes, and ticks are chosen by `nice_ticks`,
`tick_labels` and `log_ticks`.

Why not a charting library (measured for issue 43, docs/dashboards.md "Charts"): pygal 3.1.3 adds
1.9 MB installed, draws a comparable chart in 29.9 KB against 8.8 KB here, gives each chart random
ids (so the same data never draws the same bytes) and by default loads its tooltips from a CDN at
view time; matplotlib 3.11.2 adds 183 MB installed (numpy, fontTools, Pillow) for a 14.5 KB chart;
a JavaScript library (uPlot 1.6.32: 51 KB minified, plus the data) draws nothing in a markdown
report, an `.svg` file or a page without scripts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

LOG_SPAN = 100.0  # max/min beyond which an "auto" scale is logarithmic
AXIS = "#333333"
GRID = "#E3E3E3"
BACKGROUND = "#FFFFFF"
# Okabe-Ito: told apart by people with colour-blindness.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999")

# Characters XML 1.0 forbids even as references: C0 controls but tab and newlines, lone
# surrogates and the two non-characters.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """Text safe in XML content and in double-quoted attributes: `&`, `<`, `>` and `"` as
    references (so no tag, attribute or `]]>` can be formed), and characters XML forbids as U+FFFD."""
    text = _NOT_XML.sub("\ufffd", text)
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def px(value: float) -> str:
    """A coordinate, to a tenth of a pixel."""
    return f"{value:.1f}"


def format_number(value: float) -> str:
    """Six significant digits, the same on every platform: 52.1, 0.000123, 1.23457e+06."""
    text = f"{value:.6g}"
    return "0" if text == "-0" else text


def svg_head(
    width: int,
    height: int,
    *,
    name: str,
    title: str,
    desc: str,
    sized: bool = True,
) -> list[str]:
    """The opening lines of a chart: the `<svg>` element labelled by its title and its text
    alternative (ids `NAME-title` and `NAME-desc`), and a white background. `sized=False` leaves
    out width and height, so the chart takes its container's width."""
    size = f'width="{width}" height="{height}" ' if sized else ""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" {size}viewBox="0 0 {width} {height}" '
        f'role="img" aria-labelledby="{name}-title {name}-desc" '
        'font-family="sans-serif" font-size="12">',
        f'<title id="{name}-title">{xml_text(title)}</title>',
        f'<desc id="{name}-desc">{xml_text(desc)}</desc>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="{BACKGROUND}"/>',
    ]


def svg_document(head: Sequence[str], body: Sequence[str]) -> str:
    """The chart as one document: one element a line, ending in a newline."""
    return "\n".join([*head, *body, "</svg>"]) + "\n"


def nice_ticks(low: float, high: float, count: int = 6) -> tuple[list[float], float]:
    """Round tick values covering [low, high] (Heckbert's nice numbers), and their step. A flat
    range is widened around its value; a range too wide for floats gets its two ends only."""
    low, high = min(low, high), max(low, high)
    if low == high:
        pad = abs(low) * 0.1 or 1.0
        low, high = low - pad, high + pad
    span = high - low
    if not math.isfinite(span):
        return [low, high], high / 2 - low / 2
    step = nice_number(nice_number(span, rounded=False) / max(count - 1, 1), rounded=True)
    first, last = math.floor(low / step) * step, math.ceil(high / step) * step
    first -= step if first > low else 0.0  # the division can round past the value
    last += step if last < high else 0.0
    if not (math.isfinite(first) and math.isfinite(last)):
        return [low, high], high / 2 - low / 2
    steps = round((last - first) / step)
    return [first + i * step for i in range(steps + 1)], step


def nice_number(value: float, *, rounded: bool) -> float:
    """1, 2 or 5 times a power of ten near `value` (rounded to the nearest, else the next up)."""
    exponent = math.floor(math.log10(value))
    fraction = value / 10.0**exponent
    if rounded:
        limits = ((1.5, 1.0), (3.0, 2.0), (7.0, 5.0))
        nice = next((n for limit, n in limits if fraction < limit), 10.0)
    else:
        nice = next((n for n in (1.0, 2.0, 5.0) if fraction <= n), 10.0)
    return nice * 10.0**exponent


def tick_labels(ticks: Sequence[float], step: float) -> list[str]:
    """Labels with just enough digits to tell the ticks apart: 0.25, 40, 1.2e+06."""
    power = math.floor(math.log10(step)) if step > 0 else 0
    biggest = max((abs(t) for t in ticks), default=0.0)
    if biggest < 1e6 and power >= -4:
        decimals = max(0, -power)
        labels = [f"{t:.{decimals}f}" for t in ticks]
    else:
        magnitude = math.floor(math.log10(biggest)) if biggest > 0 else 0
        digits = min(15, max(0, magnitude - power))
        labels = [f"{t:.{digits}e}" if t else "0" for t in ticks]
    return [label[1:] if label.startswith("-") and float(label) == 0 else label for label in labels]


def uses_log_scale(values: Sequence[float]) -> bool:
    """Whether `values` are all positive and span more than two decades (max/min > 100)."""
    return bool(values) and min(values) > 0 and max(values) / min(values) > LOG_SPAN


def log_ticks(low: float, high: float, count: int = 8) -> list[float]:
    """Powers of ten covering [low, high] (both positive), every decade or every few."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    step = max(1, math.ceil((last - first) / count))
    return [10.0**k for k in range(first, last + step, step)]
