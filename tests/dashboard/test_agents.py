"""The agents pages: each agent across the debates, checked against the transcripts of real
debates run with the bundled mock agents (the expected numbers are counted here, from the JSON).
Tasks and evolve runs: test_agents_every_kind.py."""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.reading.sources import TranscriptDir
from freemad.dashboard.static_site import build_site
from freemad.dashboard.views.agent_views import AGENT_SLUG, agent_slug, agents_table, debate_record
from freemad.debate import run_debate, write_transcript
from freemad.redact import Redactor
from freemad.wiring import ADAPTERS
from tests.conftest import make_config, mock_agent
from tests.dashboard.browser import dom

PRICE = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
HOSTILE = "<script>alert(1)</script>"
CLIMBER = "../x"
LONG = "a" * 5000


def quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class Made:
    folder: Path
    transcripts: list[dict[str, Any]]


def debate(folder: Path, *agents: dict[str, Any], rounds: int = 2) -> dict[str, Any]:
    config = make_config(agents, output={"transcript_dir": str(folder)})
    result = run_debate(
        "Write a function that returns Fibonacci(n).", config, rounds=rounds, adapters=ADAPTERS
    )
    path = write_transcript(result, config.output, Redactor([]))
    data = dict(json.loads(path.read_text()))
    data["path"] = str(path)
    return data


def renamed(value: Any, names: dict[str, str]) -> Any:
    """The transcript with agents renamed (keys and values), as a hand-edited file could be."""
    if isinstance(value, dict):
        return {names.get(k, k): renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [renamed(v, names) for v in value]
    return names.get(value, value) if isinstance(value, str) else value


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    folder = tmp_path_factory.mktemp("agents") / "transcripts"
    first = debate(
        folder,
        mock_agent("a", "--persona", "iterative", pricing=PRICE),
        mock_agent("b", "--persona", "recursive", "--revise", pricing=PRICE),
        mock_agent("c", "--fault", "crash", "--fault-in", "critique"),
    )
    second = debate(
        folder,
        mock_agent("a", "--persona", "recursive", pricing=PRICE),
        mock_agent("b", "--persona", "iterative", "--revise"),
        mock_agent("d", "--fault", "not-logged-in", "--fault-in", "critique"),
        rounds=1,
    )
    hostile = renamed(
        debate(
            folder,
            mock_agent("e"),
            mock_agent("f", "--persona", "recursive"),
            mock_agent("g"),
            rounds=1,
        ),
        {"e": HOSTILE, "f": CLIMBER, "g": LONG},
    )
    hostile["run_id"] = "hostile-agents"
    Path(hostile.pop("path")).write_text(json.dumps(hostile))  # in place of the real one
    return Made(folder, [first, second, hostile])


def expected(transcripts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each agent's numbers, counted straight from the transcripts' JSON."""
    out: dict[str, dict[str, Any]] = {}
    for t in transcripts:
        winner = t["final_answer_id"]
        for name in t["settings"]["agents"]:
            row = out.setdefault(
                name,
                {
                    "debates": 0,
                    "won": 0,
                    "switches": 0,
                    "to_winner": 0,
                    "causes": Counter(),
                    "ms": [],
                    "tokens": [],
                    "cost": 0.0,
                    "priced": 0,
                },
            )
            row["debates"] += 1
            proposed = name in t["origin_agents"].get(winner, [])
            held = t["holders_history"][-1].get(name) == winner
            row["won"] += bool(winner) and (proposed or held)
            for round_ in t["transcript"]:
                turn = round_["agents"].get(name)
                if turn is None:
                    continue
                if turn["status"] == "ok" and turn["action"] == "revise":
                    row["switches"] += 1
                    row["to_winner"] += turn["answer_id"] == winner
                if turn["status"] != "ok":
                    row["causes"][turn["error"]["cause"]] += 1
                row["ms"].append(turn["duration_ms"])
                row["tokens"].append(turn["tokens"]["input"] + turn["tokens"]["output"])
            cost = t["agents"][name]["cost_usd"]
            if cost is not None:
                row["cost"] += cost
                row["priced"] += 1
    return out


def test_the_agents_table_matches_the_transcripts(made: Made) -> None:
    records = [debate_record(t, t["run_id"], float(n)) for n, t in enumerate(made.transcripts)]
    table = {row["name"]: row for row in agents_table(records)}
    want = expected(made.transcripts)
    assert set(table) == set(want)
    # The mock debates did what the table should show: a switch to the winner, failures by cause.
    assert want["b"]["switches"] >= 1 and want["b"]["to_winner"] >= 1
    assert want["c"]["causes"] and want["d"]["causes"]
    assert want["a"]["priced"] == 2 and want["b"]["priced"] == 1
    for name, row in table.items():
        w, did = want[name], row["debate"]
        assert did["runs"] == w["debates"] == len(row["runs"])
        assert (did["won"], did["switches"], did["to_winner"]) == (
            w["won"],
            w["switches"],
            w["to_winner"],
        )
        assert dict(row["causes"]) == dict(w["causes"])
        assert row["failures"] == sum(w["causes"].values())
        assert row["calls"] == len(w["ms"])
        assert float(row["median_ms"]) == pytest.approx(statistics.median(w["ms"]), rel=1e-3)
        assert float(row["mean_ms"]) == pytest.approx(statistics.fmean(w["ms"]), rel=1e-3)
        assert float(row["mean_tokens"]) == pytest.approx(statistics.fmean(w["tokens"]), rel=1e-3)
        if w["priced"]:
            assert float(row["cost_usd"]) == pytest.approx(w["cost"], rel=1e-3)
        else:
            assert row["cost_usd"] == "-"
        assert row["priced"] == w["priced"]


def test_hostile_agent_ids_make_safe_slugs() -> None:
    slugs = {name: agent_slug(name) for name in (HOSTILE, CLIMBER, LONG, "A", "a", "", "é")}
    assert len(set(slugs.values())) == len(slugs)  # "A" and "a" included: no shared page
    for slug in slugs.values():
        assert (
            AGENT_SLUG.fullmatch(slug) and len(slug) <= 51 and "/" not in slug and ".." not in slug
        )


def test_the_site_writes_the_agents_pages_escaped(made: Made, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site([TranscriptDir(made.folder, quiet)], out, warn=quiet)
    index = (out / "agents.html").read_text()
    pages = sorted(p.name for p in (out / "agents").iterdir())
    names = {"a", "b", "c", "d", "e", "f", "g", HOSTILE, CLIMBER, LONG} - {"e", "f", "g"}
    assert pages == sorted(f"{agent_slug(n)}.html" for n in names)
    assert "<script>alert" not in index and "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    hostile = (out / "agents" / f"{agent_slug(HOSTILE)}.html").read_text()
    assert "<script>alert" not in hostile and "<h1>Agent: &lt;script&gt;" in hostile
    assert not (tmp_path / "x.html").exists() and not (out / "x.html").exists()
    assert 'href="agents.html"' in (out / "index.html").read_text()
    # Each debate page links its agents to their pages.
    first = made.transcripts[0]["run_id"]
    debate_page = (out / "runs" / f"{first}.html").read_text()
    assert f'href="../agents/{agent_slug("b")}.html"' in debate_page
    # An agent gone from every transcript loses its page on the next build.
    for path in [p for p in made.folder.glob("*.json") if "hostile-agents" in p.read_text()]:
        moved = tmp_path / path.name
        path.rename(moved)
        try:
            build_site([TranscriptDir(made.folder, quiet)], out, warn=quiet)
        finally:
            moved.rename(path)
    assert not (out / "agents" / f"{agent_slug(HOSTILE)}.html").exists()
    assert (out / "agents" / f"{agent_slug('a')}.html").exists()


def test_the_live_server_serves_the_agents_pages(made: Made) -> None:
    client = create_app(
        DashboardSettings([TranscriptDir(made.folder, quiet)], warn=quiet)
    ).test_client()
    listing = client.get("/agents.html")
    assert listing.status_code == 200 and "Agents across runs" in listing.text
    assert "<script>alert" not in listing.text
    page = client.get(f"/agents/{agent_slug('b')}.html")
    assert page.status_code == 200 and "<h1>Agent: b</h1>" in page.text
    assert "Content-Security-Policy" in page.headers or "Content-Security-Policy" in page.text
    assert client.get("/agents/..%2Fx.html").status_code == 404
    assert client.get(f"/agents/{agent_slug('nobody')}.html").status_code == 404


def test_the_agents_page_in_a_browser(made: Made, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site([TranscriptDir(made.folder, quiet)], out, warn=quiet)
    rendered = dom((out / "agents.html").as_uri())
    rows = re.findall(r"<tr data-agent=", rendered)
    assert len(rows) == 7 and "<script>alert" not in rendered
    page = dom((out / "agents" / f"{agent_slug('a')}.html").as_uri())
    assert "<h1>Agent: a</h1>" in page and page.count('href="../runs/') == 2
