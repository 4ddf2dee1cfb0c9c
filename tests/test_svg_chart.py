"""Every chart FREE-MAD draws, attacked with hostile labels: each comes out as text, escaped.

The labels are the ones a user or an agent controls (answer ids, agent ids, component names,
supervisor labels, method names, a sweep's caption). Each chart must stay well-formed XML with no
element or attribute the label tried to open, and show the label as text.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import pytest

from freemad.dashboard.views.debate_chart import debate_chart_svg
from freemad.dashboard.views.eval_views import eval_chart_svg
from freemad.eval.report_page import method_rows, plot_svg
from freemad.eval.simulate import Scenario, run, sweep_chart_svg
from freemad.evolve.chart import ChartData, Marker, Point, draw_score_chart
from freemad.svg_chart import svg_document, svg_head, xml_text

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(2)>'
CDATA_END = "]]>"
HOSTILE = f"{SCRIPT}{IMG}{CDATA_END}&amp;"
SVG = "{http://www.w3.org/2000/svg}"
ALLOWED = {
    "svg", "title", "desc", "rect", "g", "line", "text", "path", "circle", "polyline",
}  # fmt: skip


def evolve_chart() -> str:
    points = [
        Point(0, 3.0, "admitted", 0, HOSTILE),
        Point(1, 4.0, "rejected", None, HOSTILE),
        Point(2, None, "failed", None, HOSTILE),
        Point(3, 2.0, "admitted", 1, HOSTILE),
    ]
    markers = [Marker(1, "intervention", HOSTILE), Marker(2, "escalation", HOSTILE)]
    return draw_score_chart(ChartData(HOSTILE, "minimize", points, markers), scale="auto")


def debate_chart() -> str:
    rounds = [{"scores": {HOSTILE: 1.0, "b": 0.5}}, {"scores": {HOSTILE: 2.0, "b": 0.5}}]
    return debate_chart_svg(rounds, [HOSTILE, "b"], HOSTILE)


def eval_page_chart() -> str:
    row = {
        "label": HOSTILE,
        "shown": HOSTILE,
        "correct": 1,
        "total": 2,
        "accuracy": 0.5,
        "low": 0.1,
        "high": 0.9,
        "interval": HOSTILE,
    }
    return eval_chart_svg([row, {**row, "label": "short " + HOSTILE[:20]}])


def eval_report_plot() -> str:
    single = {"accuracy": 0.5, "interval": [0.1, 0.9], "cost": {"tokens": 100}}
    report: dict[str, Any] = {
        "items": 2,
        "methods": {"single": {**single, "agents": {HOSTILE: single, "b": single}}},
    }
    return str(plot_svg(method_rows(report)))


def sweep_chart() -> str:
    outcome = run(Scenario(agents=3, malicious=1), 20, 0)
    return sweep_chart_svg(HOSTILE, [(0.2, outcome), (0.8, outcome)], HOSTILE)


def shared_kit_chart() -> str:
    head = svg_head(100, 50, name="kit", title=HOSTILE, desc=HOSTILE)
    return svg_document(head, [f"<text>{xml_text(HOSTILE)}</text>"])


CHARTS: dict[str, Callable[[], str]] = {
    "evolve score chart": evolve_chart,
    "debate scores": debate_chart,
    "evaluation page": eval_page_chart,
    "eval report plot": eval_report_plot,
    "simulated sweep": sweep_chart,
    "the shared kit": shared_kit_chart,
}


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_a_hostile_label_comes_out_escaped(name: str) -> None:
    svg = CHARTS[name]()
    for raw in (SCRIPT, "<script", "<img", CDATA_END, HOSTILE):
        assert raw not in svg, f"{name}: {raw!r} reached the SVG unescaped"
    root = ET.fromstring(svg)  # well-formed: an unescaped label would break it or add elements
    for element in root.iter():
        assert element.tag.removeprefix(SVG) in ALLOWED, element.tag
        assert not [a for a in element.attrib if a.lower().startswith("on")], element.attrib
    shown = ["".join(element.itertext()) for element in root.iter()]
    assert any(HOSTILE in text for text in shown), f"{name}: the label is not shown as text"


def test_characters_xml_forbids_are_replaced_not_passed() -> None:
    svg = svg_document(svg_head(10, 10, name="k", title="a\x00b\x1bc\ufffe", desc="d"), [])
    ET.fromstring(svg)  # a raw NUL or ESC would make it unreadable
    assert "a\ufffdb\ufffdc\ufffd" in svg


def test_the_escape_is_the_one_every_chart_module_uses() -> None:
    """One escape for every chart: no module keeps a weaker copy of its own."""
    import freemad.dashboard.views.debate_chart
    import freemad.dashboard.views.eval_views
    import freemad.eval.report_page
    import freemad.eval.simulate
    import freemad.evolve.chart

    modules = (
        freemad.dashboard.views.debate_chart,
        freemad.dashboard.views.eval_views,
        freemad.eval.report_page,
        freemad.eval.simulate,
        freemad.evolve.chart,
    )
    for module in modules:
        assert getattr(module, "xml_text", xml_text) is xml_text, module.__name__
        assert not hasattr(module, "_xml"), module.__name__
