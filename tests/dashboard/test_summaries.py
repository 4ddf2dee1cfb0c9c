"""The transcript summaries (`summary.html`): per agent (won, kept and revised, time, tokens,
failures by kind) and per config, checked against the JSON of real mock debates, with their
charts, in the static site, the live server and headless Chromium; hostile agent ids escaped."""

from __future__ import annotations

import html
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.reading.sources import TranscriptDir
from freemad.dashboard.static_site import build_site
from freemad.dashboard.views.agent_views import debate_record
from freemad.dashboard.views.summary_views import summary_view
from tests.dashboard.browser import dom
from tests.dashboard.test_agents import HOSTILE, Made, made, quiet

__all__ = ["made"]  # the fixture of real mock debates, shared with test_agents


def counted(transcripts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each agent's summary, counted straight from the transcripts' JSON."""
    out: dict[str, dict[str, Any]] = {}
    for t in transcripts:
        winner = t["final_answer_id"]
        for name in t["settings"]["agents"]:
            row = out.setdefault(
                name, {"debates": 0, "won": 0, "kept": 0, "revised": 0, "ms": [], "tokens": []}
            )
            row.setdefault("causes", Counter())
            row["debates"] += 1
            proposed = name in t["origin_agents"].get(winner, [])
            held = t["holders_history"][-1].get(name) == winner
            row["won"] += bool(winner) and (proposed or held)
            for round_ in t["transcript"]:
                turn = round_["agents"].get(name)
                if turn is None:
                    continue
                if turn["status"] == "ok" and turn["action"] in ("keep", "revise"):
                    row["kept" if turn["action"] == "keep" else "revised"] += 1
                if turn["status"] != "ok":
                    row["causes"][turn["error"]["cause"]] += 1
                row["ms"].append(turn["duration_ms"])
                row["tokens"].append(turn["tokens"]["input"] + turn["tokens"]["output"])
    return out


def summary_of(made: Made) -> dict[str, Any]:
    records = [debate_record(t, t["run_id"], float(n)) for n, t in enumerate(made.transcripts)]
    return summary_view(records)


def test_the_summaries_match_the_transcripts(made: Made) -> None:
    summary = summary_of(made)
    want = counted(made.transcripts)
    rows = {row["name"]: row for row in summary["agents"]}
    assert set(rows) == set(want)
    assert sum(w["kept"] for w in want.values()) >= 1 and want["b"]["revised"] >= 1
    for name, row in rows.items():
        w = want[name]
        assert (row["debates"], row["won"], row["kept"], row["revised"]) == (
            w["debates"],
            w["won"],
            w["kept"],
            w["revised"],
        ), name
        assert dict(row["causes"]) == dict(w["causes"])
        assert float(row["mean_ms"]) == pytest.approx(statistics.fmean(w["ms"]), rel=1e-3)
        assert float(row["tokens_total"]) == pytest.approx(sum(w["tokens"]), rel=1e-3)

    configs = {c["digest"]: c for c in summary["configs"]}
    by_digest = Counter(t["config_digest"] for t in made.transcripts)
    assert {d: c["debates"] for d, c in configs.items()} == dict(by_digest)
    for t in made.transcripts:
        config = configs[t["config_digest"]]
        assert config["agents"] == t["settings"]["agents"]
        assert config["rounds"] == str(t["settings"]["rounds"])
        assert config["completed"] == sum(
            1
            for o in made.transcripts
            if o["config_digest"] == t["config_digest"] and o["status"] == "completed"
        )


def test_the_charts_draw_each_rate_and_escape_the_names(made: Made) -> None:
    summary = summary_of(made)
    charts = summary["charts"]
    assert set(charts) == {"won", "kept", "completed"}
    won = charts["won"]
    assert won.count('<g class="method">') == sum(1 for a in summary["agents"] if a["debates"])
    assert "<script>" not in won and html.escape(HOSTILE, quote=False) in won
    for row in summary["agents"]:
        if row["debates"]:
            assert f"({row['won']}/{row['debates']})" in won
    for config in summary["configs"]:
        assert f"({config['completed']}/{config['debates']})" in charts["completed"]
    assert summary_view([])["charts"] == {}


def test_the_site_and_the_live_server_show_the_summaries(made: Made, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site([TranscriptDir(made.folder, quiet)], out, warn=quiet)
    page = (out / "summary.html").read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'href="summary.html"' in (out / "index.html").read_text()
    assert page.count("<svg") == 3
    client = create_app(
        DashboardSettings([TranscriptDir(made.folder, quiet)], warn=quiet)
    ).test_client()
    live = client.get("/summary.html")
    assert live.status_code == 200
    table = re.compile(r'<table id="summary-agents">.*?</table>', re.S)
    found, served = table.search(page), table.search(live.text)
    assert found and served and found[0] == served[0]  # the same numbers from the same records

    rendered = dom((out / "summary.html").as_uri())
    assert len(re.findall(r'<tr data-agent="', rendered)) == len(counted(made.transcripts))
    assert len(re.findall(r'<tr data-config="', rendered)) == len(
        {t["config_digest"] for t in made.transcripts}
    )
    assert rendered.count("<svg") == 3 and "<script>alert" not in rendered


def test_the_summaries_of_no_debate_render() -> None:
    """A site of tasks alone: no debate to chart, and a page that says so."""
    from freemad.dashboard.views.html_pages import render_summary

    page = render_summary(summary_view([]))
    assert "No runs with agents yet." in page and "No debates yet." in page
    assert "<svg" not in page
    task = {"kind": "task", "run_id": "t1", "started": 1.0, "status": "completed"}
    task["agents"] = {"planner": {"calls": 2, "failures": {"timeout": 1}, "proposed": 1}}
    page = render_summary(summary_view([task]))
    assert 'data-agent="planner"' in page and "timeout: 1" in page and "<svg" not in page
