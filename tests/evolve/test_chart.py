"""The evolve score chart's value axis: linear, or logarithmic where values span decades."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import pytest

from freemad.evolve.chart import ChartData, Point, draw_score_chart
from freemad.evolve.run_report import render_report
from freemad.svg_chart import log_ticks, uses_log_scale

SVG = "{http://www.w3.org/2000/svg}"


def chart(values: list[float | None]) -> ChartData:
    points = [
        Point(i, v, "admitted" if v is not None else "failed", i, f"iteration {i}")
        for i, v in enumerate(values)
    ]
    return ChartData("runtime_ms", "minimize", points, [])


def admitted_ys(svg: str) -> list[float]:
    root = ET.fromstring(svg)
    return [
        float(c.get("cy") or 0)
        for g in root.iter(f"{SVG}g")
        if (g.get("class") or "") == "point admitted"
        for c in g.iter(f"{SVG}circle")
    ]


def y_labels(svg: str) -> list[str]:
    group = next(g for g in ET.fromstring(svg).iter(f"{SVG}g") if g.get("class") == "y-axis")
    return [t.text or "" for t in group.iter(f"{SVG}text")]


def test_improvements_over_decades_are_drawn_apart_on_a_log_scale() -> None:
    """45 ms -> 0.28 -> 0.007: on a linear axis the last two sit at zero, a pixel apart."""
    data = chart([45.025, 0.282, 0.139, 0.007])
    linear, auto = draw_score_chart(data), draw_score_chart(data, scale="auto")
    flat = admitted_ys(linear)
    assert abs(flat[1] - flat[3]) < 3  # the bug: indistinguishable
    ys = admitted_ys(auto)
    assert abs(ys[1] - ys[3]) > 50 and ys == sorted(ys)  # lower is lower, each step visible
    labels = y_labels(auto)
    assert labels[:6] == ["0.001", "0.01", "0.1", "1", "10", "100"]
    assert labels[-1] == "runtime_ms (lower is better) (log scale)"
    assert "(on a log scale)" in auto and "log scale" not in linear
    # Decades are evenly spaced.
    group = next(g for g in ET.fromstring(auto).iter(f"{SVG}g") if g.get("class") == "y-axis")
    grid = [float(line.get("y1") or 0) for line in group.iter(f"{SVG}line")]
    gaps = {round(a - b, 1) for a, b in itertools.pairwise(grid[:6])}
    assert len(gaps) == 1


@pytest.mark.parametrize(
    "values",
    [
        [45.0, 30.0, 1.0],  # within two decades
        [5.0, 0.0, 0.001],  # a zero cannot be placed on a log axis
        [-3.0, 400.0],
        [None, None],  # nothing measured
    ],
)
def test_otherwise_the_axis_stays_linear(values: list[float | None]) -> None:
    svg = draw_score_chart(chart(values), scale="auto")
    assert "log scale" not in svg
    assert not uses_log_scale([v for v in values if v is not None])


def test_log_ticks_cover_the_values_with_at_most_a_few_labels() -> None:
    assert log_ticks(0.007, 45.0) == [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]
    wide = log_ticks(1e-12, 1e6)
    assert wide[0] <= 1e-12 and wide[-1] >= 1e6 and len(wide) <= 10


def test_the_cli_report_keeps_its_linear_chart() -> None:
    """Only the dashboards' pages choose the scale (`freemad evolve report` is unchanged)."""
    from tests.evolve.test_run_report import RunBuilder

    run = RunBuilder(comparator=[{"component": "runtime_ms", "direction": "minimize"}])
    for iteration, runtime in enumerate((45.025, 0.282, 0.007)):
        run.judged(iteration, admitted=True, runtime=runtime)
    _, svg = render_report("r1", run.events)
    assert "log scale" not in svg
