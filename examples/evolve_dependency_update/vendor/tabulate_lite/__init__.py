"""tabulate_lite 1.4: plain-text tables from rows of values.

>>> print(tabulate([("north", 12), ("south", 8)], headers=("region", "units")))
region | units
-------+------
north  | 12
south  | 8
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__version__ = "1.4.0"
__all__ = ["tabulate"]

_ALIGN = {"left": str.ljust, "right": str.rjust, "center": str.center}


def tabulate(
    rows: Iterable[Sequence[object]],
    headers: Sequence[str] = (),
    align: str = "left",
    sep: str = " | ",
    floatfmt: str = ".2f",
) -> str:
    """Format `rows` as a table, one line per row, every column aligned the same way.

    align: "left" (the default), "right" or "center". headers: a first line, underlined with
    dashes. Floats are formatted with `floatfmt`, anything else with str(). Lines carry no
    trailing spaces.
    """
    if align not in _ALIGN:
        raise ValueError(f"align must be left, right or center, not {align!r}")
    body = [[_cell(value, floatfmt) for value in row] for row in rows]
    lines = [list(headers)] if headers else []
    lines += body
    if not lines:
        return ""
    columns = max(len(line) for line in lines)
    widths = [
        max((len(line[i]) for line in lines if i < len(line)), default=0) for i in range(columns)
    ]
    pad = _ALIGN[align]
    out = [sep.join(pad(cell, widths[i]) for i, cell in enumerate(line)).rstrip() for line in lines]
    if headers:
        rule = sep.replace(" ", "-").replace("|", "+")
        out.insert(1, rule.join("-" * width for width in widths))
    return "\n".join(out)


def _cell(value: object, floatfmt: str) -> str:
    if isinstance(value, float):
        return format(value, floatfmt)
    return str(value)
