"""Transcripts written by the reference implementation appear in `freemad site build` (and the
live dashboard, which reads the same folder), showing what they hold."""

from __future__ import annotations

import json
from pathlib import Path

from freemad.dashboard.reading.reference_transcripts import (
    from_reference,
    is_reference_transcript,
    started_at,
)
from freemad.dashboard.views.debate_views import debate_view
from tests.conftest import reference_file
from tests.dashboard.runs import site_build

NAME = "transcript-20261201-133830"


def reference_transcript() -> dict[str, object]:
    data: dict[str, object] = json.loads(
        reference_file("upstream-transcripts", f"{NAME}.json").read_text()
    )
    return data


def test_site_build_gives_a_reference_transcript_its_page(tmp_path: Path) -> None:
    folder = reference_file("upstream-transcripts")
    done = site_build("--transcripts", str(folder), "--out", str(tmp_path / "site"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", "nothing is skipped"
    assert "1 run(s)" in done.stdout
    page = (tmp_path / "site" / "runs" / f"{NAME}.html").read_text()
    for shown in ("ANSWER_b", "ANSWER_a", "good1", "good2", "scripted keep round 1", "boom"):
        assert shown in page, shown
    index = (tmp_path / "site" / "index.html").read_text()
    assert f"runs/{NAME}.html" in index


def test_what_a_reference_transcript_holds_is_shown_and_nothing_is_made_up() -> None:
    data = reference_transcript()
    assert is_reference_transcript(data)
    ours = from_reference(data, NAME, started_at(NAME))
    assert ours["run_id"] == NAME and ours["status"] == "completed"
    assert ours["started_at"] == "2026-12-01T13:38:30Z"
    assert ours["requirement"] == "" and ours["finished_at"] == ""
    view = debate_view(ours)
    assert view["winner_id"] == "22f304b2ceb9b7e2"
    assert view["final_solution"] == "ANSWER_b"
    assert view["winning_agents"] == ["good2"]
    winner = next(r for r in view["ranking"] if r["winner"])
    assert winner["score"] == "30" and winner["origin"] == ["good2"]
    assert winner["holders"] == ["good2"]
    assert [(d["round"], d["action"], d["amount"]) for d in winner["explainer"]] == [
        ("0", "initial", "+20"),
        ("1", "keep", "+10"),
    ]
    assert [row["cells"] for row in view["score_table"]["rows"]] == [["20"] * 3, ["30"] * 3]
    agents = {a["name"]: a for a in view["agents"]}
    # The reference scores a failed call's text as an answer: shown as scored, marked failed.
    assert [t["status"] for t in agents["bad"]["turns"]] == ["failed", "failed"]
    assert [t["status"] for t in agents["good1"]["turns"]] == ["ok", "ok"]
    assert agents["good1"]["calls"] == "2" and agents["good1"]["estimated"]
    assert [t["duration_ms"] for t in agents["good2"]["turns"]] == ["261", "208"]


def test_our_own_transcripts_are_not_taken_for_the_reference_s() -> None:
    assert not is_reference_transcript({"run_id": "abc", "final_answer_id": None, "transcript": []})
    assert not is_reference_transcript({"final_answer_id": "x", "transcript": "no"})
    assert started_at("transcript-no-time") is None
