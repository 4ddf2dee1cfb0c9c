"""The quarterly sales report (`python -m app.report`): its output must stay the same, byte for byte."""

from __future__ import annotations

from vendor.tabulate_lite import tabulate

# region, units sold, growth against last quarter in percent, account manager
SALES = (
    ("north", 1204, 12.5, "Ada"),
    ("south", 817, -3.25, "Grace"),
    ("east", 96, 140.0, "Linus"),
    ("west", 2210, 0.75, "Barbara"),
)


def render_report(sales: tuple[tuple[str, int, float, str], ...] = SALES) -> str:
    """The whole report as text, ending in a newline."""
    by_units = sorted(sales, key=lambda row: row[1], reverse=True)
    table = tabulate(by_units, headers=("region", "units", "growth %", "manager"), floatfmt=".1f")
    total = sum(row[1] for row in sales)
    best = max(sales, key=lambda row: row[2])
    summary = tabulate([("total units", total), ("best growth", best[0])], align="right", sep="  ")
    return "\n".join(["Quarterly sales", "", table, "", summary]) + "\n"


def main() -> None:
    print(render_report(), end="")


if __name__ == "__main__":
    main()
