"""Every text from agents, issues and configs renders as text; and the pages are accessible."""

from __future__ import annotations

import copy
import itertools
import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest
from pydantic import BaseModel

from freemad.dashboard.reading.sources import Artifact, RunData
from freemad.dashboard.views.fenced_code import parts
from freemad.dashboard.views.html_pages import render_index, render_run
from freemad.debate import debate_record as records
from tests.dashboard.runs import Runs, transcript_of
from tests.dashboard.test_views import every_agent_failed, task_events
from tests.evolve.test_run_report import realistic_run

PAYLOAD = (
    "<script>alert(1)</script><img src=x onerror=alert(2)>\"'><svg onload=alert(3)>"
    "</textarea></pre></code>{{ 7*7 }}javascript:alert(4)"
)


def field_names() -> set[str]:
    """The transcript's own field names (the rest of its keys are data: agent and answer ids)."""
    names = {"input", "output", "estimated"}
    for model in vars(records).values():
        if isinstance(model, type) and issubclass(model, BaseModel):
            names |= set(model.model_fields)
    return names


FIELDS = field_names()


def hostile(value: Any, fields: frozenset[str] = frozenset()) -> Any:
    """Every string value, and every key that is data, with the payload appended: ids stay
    consistent, field names stay the schema's."""
    if isinstance(value, str):
        return value + PAYLOAD
    if isinstance(value, list):
        return [hostile(v, fields) for v in value]
    if isinstance(value, dict):
        return {(k if k in fields else hostile(k)): hostile(v, fields) for k, v in value.items()}
    return value


def hostile_transcript(transcript: dict[str, Any]) -> dict[str, Any]:
    settings = json.dumps(transcript["settings"]) + json.dumps(transcript["metrics"])
    fields = frozenset(FIELDS | set(re.findall(r'"([a-z_]+)":', settings)))
    data: dict[str, Any] = hostile(transcript, fields)
    return data


class Page(HTMLParser):
    """What a browser would build: elements, attributes, script bodies, text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self.headings: list[int] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if re.fullmatch(r"h[1-6]", tag):
            self.headings.append(int(tag[1]))

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def assert_inert(html: str) -> Page:
    page = parse(html)
    allowed_scripts = {re.sub(r"\s+", "", s) for s in page.scripts}
    for tag, attrs in page.elements:
        assert tag not in ("img", "iframe", "object", "embed", "textarea", "base"), tag
        assert tag != "form" or attrs.get("id") == "filters"  # the index's own, submits nothing
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("href", "src", "action", "formaction"):
                assert not (value or "").strip().lower().startswith("javascript:"), value
    # Our scripts only: never one the payload opened.
    assert not any("alert(" in s for s in allowed_scripts)
    text = "".join(page.text)
    assert "<script>alert(1)</script>" in text  # shown, as text
    assert "{{ 7*7 }}" in text  # and no template evaluated it
    return page


def test_a_hostile_debate_renders_as_text(real_runs: Runs) -> None:
    transcript = hostile_transcript(transcript_of(real_runs))
    assert transcript["final_answer_id"] in transcript["scores"]  # ids still line up
    page = assert_inert(render_run(RunData("debate", real_runs.debate_id, transcript=transcript)))
    text = "".join(page.text)
    # Requirement, winner, agent names, reasoning and solutions all came through as text.
    assert transcript["requirement"].split("<script>")[0] in text
    for part in parts(transcript["final_solution"]):  # its code highlighted, its fences gone
        assert part.text.split("<script>")[0] in text
    # The winner is named by its id, hostile here too, and shown as text.
    assert f"Winner: {transcript['final_answer_id']}" in text


HOSTILE_FENCES = (
    "Here it is:\n"
    "```</code></pre><script>alert(1)</script>\n"
    "</code></pre><script>alert(1)</script>{{ 7*7 }}\n"
    "```\n"
    '~~~ "><img src=x onerror=alert(2)>\n<svg onload=alert(3)>\n~~~\n'
    "```python\n"
    "x = '</code></pre><script>alert(1)</script>'  # </span><script>alert(1)</script>\n"
    "```\n"
)


def test_hostile_fenced_code_renders_as_text(real_runs: Runs) -> None:
    """A fence's language tag and body are an agent's: highlighted or not, they stay text."""
    transcript = copy.deepcopy(transcript_of(real_runs))
    transcript["final_solution"] = HOSTILE_FENCES
    for answer in transcript["answers"].values():
        answer["canonical"] = HOSTILE_FENCES
    for round_ in transcript["transcript"]:
        for turn in round_["agents"].values():
            turn["response"]["solution"] = HOSTILE_FENCES
    html = render_run(RunData("debate", real_runs.debate_id, transcript=transcript))
    page = assert_inert(html)
    assert '<pre class="code"><code><span class="n">x</span>' in html  # python: highlighted
    assert [tag for tag, _ in page.elements].count("script") == 0


def test_a_hostile_evolve_run_renders_as_text() -> None:
    html = render_run(
        RunData("evolve", "e1", events=realistic_run(PAYLOAD)),
        commit_url="https://forge/c/{commit}",
    )
    assert_inert(html)


def test_a_hostile_task_renders_as_text() -> None:
    names = frozenset(k for _, data in task_events() for k in json.loads(json.dumps(data)))
    events = [
        (kind, hostile(data, names | {"content", "findings"})) for kind, data in task_events()
    ]
    artifacts = [Artifact(f"notes{PAYLOAD}.md", 9, PAYLOAD.encode)]
    assert_inert(
        render_run(
            RunData(
                "task",
                "t1",
                events=events,
                times=[1.0] * 4,
                status="waiting_for_human",
                artifacts=artifacts,
            )
        )
    )


def test_a_hostile_index_renders_as_text() -> None:
    entries = [
        {
            "kind": "debate",
            "run_id": "r1",
            "status": f"completed{PAYLOAD}",
            "title": PAYLOAD,
            "started": 1.0,
            "updated": 1.0,
        }
    ]
    assert_inert(render_index(entries))


# --- accessibility --------------------------------------------------------------------------


def pages(real_runs: Runs) -> list[str]:
    return [
        render_index(
            [
                {
                    "kind": "debate",
                    "run_id": "r",
                    "status": "completed",
                    "title": "t",
                    "started": 1.0,
                    "updated": 1.0,
                }
            ]
        ),
        render_run(RunData("debate", "d", transcript=transcript_of(real_runs))),
        render_run(RunData("evolve", "e", events=realistic_run())),
        render_run(
            RunData("task", "t", events=task_events(), times=[1.0] * 4, status="waiting_for_human")
        ),
        render_run(RunData("debate", "f", transcript=every_agent_failed())),
    ]


def test_pages_have_a_language_a_viewport_and_headings_in_order(real_runs: Runs) -> None:
    for html in pages(real_runs):
        page = parse(html)
        assert html.startswith('<!doctype html>\n<html lang="en">')
        assert (
            "meta",
            {"name": "viewport", "content": "width=device-width, initial-scale=1"},
        ) in page.elements
        levels = page.headings
        assert levels[0] == 1 and levels.count(1) == 1, levels
        assert all(b - a <= 1 for a, b in itertools.pairwise(levels)), levels
        assert all(
            attrs.get("scope") in ("col", "row") for tag, attrs in page.elements if tag == "th"
        )


def test_charts_have_text_alternatives(real_runs: Runs) -> None:
    for html in pages(real_runs)[1:3]:
        page = parse(html)
        svgs = [attrs for tag, attrs in page.elements if tag == "svg"]
        assert len(svgs) == 1 and svgs[0]["role"] == "img"
        title_id, desc_id = str(svgs[0]["aria-labelledby"]).split()
        ids = {attrs.get("id") for _, attrs in page.elements}
        assert {title_id, desc_id} <= ids
        assert "figcaption" in [tag for tag, _ in page.elements]


def luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize(
    ("foreground", "background"),
    [
        ("fg", "bg"),
        ("muted", "bg"),
        ("link", "bg"),
        ("ok", "bg"),
        ("bad", "bg"),
        ("warn", "bg"),
        ("violet", "bg"),
        ("fg", "soft"),
        ("link", "soft"),
        ("muted", "soft"),
    ],
)
def test_text_colours_meet_wcag_aa_contrast(foreground: str, background: str) -> None:
    css = render_index([])
    colours = dict(re.findall(r"--([a-z]+):(#[0-9a-fA-F]{6})", css))
    assert contrast(colours[foreground], colours[background]) >= 4.5


@pytest.mark.parametrize(
    ("foreground", "background"),
    [
        ("#0f4d1f", "#e6f4ea"),
        ("#8c1d18", "#fde8e7"),
        ("#3b4a6b", "#e8eef8"),
        ("#ffffff", "#1f2933"),
        ("#1b1b1b", "#fff4d6"),
    ],
)
def test_diff_header_and_stage_colours_meet_wcag_aa_contrast(
    foreground: str, background: str
) -> None:
    css = render_index([])
    assert foreground in css.lower() and background in css.lower()
    assert contrast(foreground, background) >= 4.5


def test_highlighted_code_colours_meet_wcag_aa_contrast_on_the_code_background() -> None:
    css = render_index([])
    soft = dict(re.findall(r"--([a-z]+):(#[0-9a-fA-F]{6})", css))["soft"]
    rules = re.findall(r"\.code [^{]*\{[^}]*color:(#[0-9a-fA-F]{6})", css)
    assert len(rules) >= 5  # keywords, strings, comments, numbers, names, builtins
    for colour in rules:
        assert contrast(colour, soft) >= 4.5, colour
