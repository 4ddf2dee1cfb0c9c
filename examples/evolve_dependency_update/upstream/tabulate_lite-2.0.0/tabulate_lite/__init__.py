"""tabulate_lite 2.0: plain-text tables from rows of values.

>>> print(format_table([("north", 12), ("south", 8)], header=("region", "units")))
region | units
-------+------
north  |    12
south  |     8
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

__version__ = "2.0.0"
__all__ = ["format_table", "tabulate"]

_ALIGN = {"left": str.ljust, "right": str.rjust, "center": str.center}


def format_table(
    rows: Iterable[Sequence[object]],
    header: Sequence[str] | None = None,
    *,
    align: str | Sequence[str] = "auto",
    column_sep: str = " | ",
    float_format: str = ".2f",
) -> str:
    """Format `rows` as a table, one line per row.

    align: "auto" (the default: columns of numbers to the right, others to the left), "left",
    "right" or "center", or a sequence with one of those per column. header: a first line,
    underlined with dashes. Floats are formatted with `float_format`, anything else with
    str(). Lines carry no trailing spaces.
    """
    raw = [list(row) for row in rows]
    lines = [list(header)] if header else []
    lines += [[_cell(value, float_format) for value in row] for row in raw]
    if not lines:
        return ""
    columns = max(len(line) for line in lines)
    widths = [
        max((len(line[i]) for line in lines if i < len(line)), default=0) for i in range(columns)
    ]
    pads = [_ALIGN[_column_align(align, i, raw)] for i in range(columns)]
    out = [
        column_sep.join(pads[i](cell, widths[i]) for i, cell in enumerate(line)).rstrip()
        for line in lines
    ]
    if header:
        rule = column_sep.replace(" ", "-").replace("|", "+")
        out.insert(1, rule.join("-" * width for width in widths))
    return "\n".join(out)


def tabulate(
    rows: Iterable[Sequence[object]],
    headers: Sequence[str] = (),
    align: str = "auto",
    sep: str = " | ",
    floatfmt: str = ".2f",
) -> str:
    """Deprecated since 2.0, removed in 3.0: use format_table() (see CHANGELOG.md)."""
    warnings.warn("tabulate() is deprecated; use format_table()", DeprecationWarning, stacklevel=2)
    return format_table(
        rows, header=headers or None, align=align, column_sep=sep, float_format=floatfmt
    )


def _column_align(align: str | Sequence[str], index: int, rows: list[list[object]]) -> str:
    chosen = align if isinstance(align, str) else align[index]
    if chosen == "auto":
        values = [row[index] for row in rows if index < len(row)]
        numeric = values and all(_is_number(value) for value in values)
        return "right" if numeric else "left"
    if chosen not in _ALIGN:
        raise ValueError(f"align must be auto, left, right or center, not {chosen!r}")
    return chosen


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell(value: object, float_format: str) -> str:
    if isinstance(value, float):
        return format(value, float_format)
    return str(value)
