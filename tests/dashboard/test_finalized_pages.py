"""The finalizer's answer shown apart from the winner: the GitHub comment, the markdown
transcript, the debate page (live server's renderer and the static site); a failed finalizer
shown as failed; a transcript from before the finalizer renders as it did."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from freemad.agents.agent_port import CallResult, CallStatus
from freemad.dashboard.reading.sources import RunData, TranscriptDir
from freemad.dashboard.static_site import build_site
from freemad.dashboard.views.html_pages import render_run
from freemad.debate import run_debate
from freemad.debate.debate_record import DebateResult
from freemad.debate.transcript import render_markdown, transcript_data, write_transcript
from freemad.github.comments import render_debate
from freemad.redact import Redactor
from tests.conftest import ScriptedAgent, generation, keep, scripted_config

FINAL = "def total(xs):\n    return sum(xs)  # FINALIZED"


def debate(final: str | CallResult) -> DebateResult:
    ports = {
        "x": ScriptedAgent("x").script(generation("WINNER-TEXT"), keep("x keeps")),
        "y": ScriptedAgent("y").script(generation("WINNER-TEXT"), keep("y keeps")),
        "z": ScriptedAgent("z").script(generation("OTHER"), keep("misses []"), final),
    }
    config = scripted_config(ports, debate={"finalizer": "z"})
    return run_debate("sum a list", config, rounds=1, agents=ports)


@pytest.fixture(scope="module")
def finalized() -> DebateResult:
    return debate(generation(FINAL, "took the critique"))


@pytest.fixture(scope="module")
def failed() -> DebateResult:
    return debate(CallResult(CallStatus.TIMEOUT, detail="ran past 600s"))


def data(result: DebateResult) -> dict[str, Any]:
    return transcript_data(result, Redactor([]))


def old(result: DebateResult) -> dict[str, Any]:
    """The same transcript as written before the finalizer existed."""
    before = data(result)
    del before["finalized"]
    return before


def test_the_comment_shows_the_winner_and_the_finalized_answer_apart(
    finalized: DebateResult, failed: DebateResult
) -> None:
    comment = render_debate(finalized, None)
    winner_at = comment.index("**Winner:**")
    final_at = comment.index("**Finalized answer** by z, written from the winner and 1 critique")
    assert winner_at < comment.index("WINNER-TEXT") < final_at
    assert "return sum(xs)  # FINALIZED" in comment[final_at:]
    assert "not scored" in comment[final_at:]
    bad = render_debate(failed, None)
    assert "The finalizer z failed (timeout: ran past 600s); the winner above stands." in bad
    assert "**Finalized answer**" not in bad
    # Without the field, the comment is the one written before.
    before = render_debate(DebateResult.model_validate(old(finalized)), None)
    assert "inaliz" not in before
    assert before.startswith(comment[:final_at].rstrip("\n"))
    assert before.endswith(comment[comment.index("<details>") :])


def test_the_markdown_transcript_shows_it(finalized: DebateResult, failed: DebateResult) -> None:
    text = render_markdown(finalized.model_dump(mode="json"))
    assert "## Finalized answer (by z, not scored)" in text
    assert text.index("WINNER-TEXT") < text.index(FINAL)
    bad = render_markdown(failed.model_dump(mode="json"))
    assert "The finalizer failed (timeout: ran past 600s); the winner above stands." in bad
    assert "inaliz" not in render_markdown(old(finalized))


def test_the_debate_page_shows_both(finalized: DebateResult, failed: DebateResult) -> None:
    page = render_run(RunData("debate", finalized.run_id, transcript=data(finalized)))
    final_at = page.index("<h2>Finalized answer</h2>")
    assert page.index("<h2>Winner</h2>") < page.index("WINNER-TEXT") < final_at
    assert "Written by z after the decision, from the winning answer and 1 critique of it" in page
    assert "FINALIZED" in page[final_at:]
    assert "took the critique" in page[final_at:]
    bad = render_run(RunData("debate", failed.run_id, transcript=data(failed)))
    assert "The finalizer z failed: timeout: ran past 600s" in html.unescape(bad)
    assert "<h2>Finalized answer</h2>" in bad
    before = render_run(RunData("debate", finalized.run_id, transcript=old(finalized)))
    assert "inaliz" not in before and "WINNER-TEXT" in before


def test_a_hostile_finalized_text_is_escaped_on_the_page() -> None:
    result = debate(generation("<script>alert(1)</script>", "<img src=x onerror=alert(2)>"))
    page = render_run(RunData("debate", result.run_id, transcript=data(result)))
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)" in page


def test_the_static_site_shows_both(
    tmp_path: Path, finalized: DebateResult, failed: DebateResult
) -> None:
    transcripts = tmp_path / "transcripts"
    output = scripted_config(["x"]).output.model_copy(
        update={"transcript_dir": str(transcripts), "format": "json"}
    )
    for result in (finalized, failed):
        write_transcript(result, output, Redactor([]))
    (transcripts / "old.json").write_text(json.dumps({**old(finalized), "run_id": "old" * 8}))
    build_site([TranscriptDir(transcripts, lambda _: None)], tmp_path / "site")
    pages = tmp_path / "site" / "runs"
    good = (pages / f"{finalized.run_id}.html").read_text()
    assert "<h2>Finalized answer</h2>" in good and "FINALIZED" in good
    bad = html.unescape((pages / f"{failed.run_id}.html").read_text())
    assert "The finalizer z failed: timeout: ran past 600s" in bad
    before = (pages / f"{'old' * 8}.html").read_text()
    assert "WINNER-TEXT" in before and "inaliz" not in before
