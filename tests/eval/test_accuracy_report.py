"""The report's numbers: Wilson intervals, `single`'s mean, the table."""

from __future__ import annotations

import pytest

from freemad.eval.accuracy_report import build_report, table, wilson
from freemad.eval.datasets import HUMANEVAL_QUESTION, load_dataset, parse_item


def test_wilson_matches_the_textbook_values() -> None:
    assert wilson(4, 5) == pytest.approx((0.3755, 0.9638), abs=1e-4)
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)


def _row(ident: str, single: dict[str, bool], **methods: bool) -> dict[str, object]:
    return {
        "id": ident,
        "status": "completed",
        "single": {a: {"answer": None, "correct": c} for a, c in single.items()},
        "methods": {m: {"answer": None, "correct": c} for m, c in methods.items()},
        "cost_usd": 0.01,
        "tokens": 10,
        "calls": 3,
        "wall_time_ms": 1000,
    }


def test_single_is_the_mean_of_the_agents() -> None:
    rows = [
        _row(
            "1", {"a": True, "b": False}, majority_initial=True, majority_final=True, freemad=True
        ),
        _row(
            "2", {"a": True, "b": True}, majority_initial=False, majority_final=True, freemad=False
        ),
    ]
    report = build_report(rows, {"dataset": "d"})
    single = report["methods"]["single"]
    assert (single["correct"], single["total"], single["accuracy"]) == (3, 4, 0.75)
    assert single["agents"]["a"]["accuracy"] == 1.0 and single["agents"]["b"]["accuracy"] == 0.5
    assert report["methods"]["majority_final"]["accuracy"] == 1.0
    assert report["cost"] == {"usd": 0.02, "tokens": 20, "calls": 6, "debate_time_ms": 2000}
    text = table(report)
    assert "single (mean)" in text and "$0.0200" in text and "2 item(s)" in text


def test_items_parse_strictly() -> None:
    item = parse_item({"id": 7, "question": "q", "answer": 42, "checker": "numeric"})
    assert (item.id, item.answer, item.expected) == ("7", "42", "42")
    for bad, message in [
        ([], "not a JSON object"),
        ({"id": "x", "question": "q", "checker": "code"}, "missing test, entry_point"),
        ({"id": "x", "question": " ", "answer": "a", "checker": "exact"}, "question"),
        ({"id": True, "question": "q", "answer": "a", "checker": "exact"}, "id must be"),
        ({"id": "x", "question": "q", "answer": "Z", "checker": "choice"}, "nothing a choice"),
        (
            {"id": "x", "question": "q", "test": "", "entry_point": "1f", "checker": "code"},
            "not a Python name",
        ),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_item(bad)


def test_humaneval_items_come_from_the_package() -> None:
    data = load_dataset("humaneval", limit=3)
    assert [item.id for item in data.items] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    first = data.items[0]
    assert first.checker == "code" and first.entry_point == "has_close_elements"
    assert first.question == HUMANEVAL_QUESTION.format(prompt=first.prompt)
    assert len(load_dataset("humaneval").items) == 164
