"""Matching transcripts to items: by the index (a file name or a run id), else by question."""

from __future__ import annotations

import json
from pathlib import Path

from freemad.debate.debate_record import DebateResult
from freemad.eval.datasets import Item
from freemad.eval.rescore import match_transcripts, read_index


def _result(run_id: str, requirement: str, started_at: str) -> DebateResult:
    return DebateResult(
        run_id=run_id,
        status="completed",
        requirement=requirement,
        config_digest="d",
        started_at=started_at,
        finished_at=started_at,
    )


ITEMS = [
    Item(id="a", question="  What is A?\n", checker="exact", answer="A"),
    Item(id="b", question="What is B?", checker="exact", answer="B"),
    Item(id="c", question="What is C?", checker="exact", answer="C"),
]


def test_the_index_wins_then_the_latest_transcript_of_the_question() -> None:
    transcripts = [
        ("old.json", _result("r-old", "What is A?", "2026-01-01T00:00:00Z")),
        ("new.json", _result("r-new", "What is A?", "2026-02-01T00:00:00Z")),
        ("b.json", _result("r-b", "Something else", "2026-01-01T00:00:00Z")),
    ]
    found = match_transcripts(ITEMS, transcripts, {"b": "r-b"})
    assert {ident: name for ident, (name, _) in found.items()} == {"a": "new.json", "b": "b.json"}
    found = match_transcripts(ITEMS, transcripts, {"a": "old.json"})
    assert found["a"][0] == "old.json" and "c" not in found


def test_the_index_reads_later_lines_over_earlier_ones(tmp_path: Path) -> None:
    lines = [
        {"id": "a", "transcript": "one.json"},
        {"id": "b", "run_id": "r-b"},
        "not json",
        {"id": "a", "transcript": "two.json"},
    ]
    (tmp_path / "index.jsonl").write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    )
    assert read_index(tmp_path) == {"a": "two.json", "b": "r-b"}
    assert read_index(tmp_path / "none") == {}
