"""`freemad eval` with `debate.finalizer`: the report grades the finalizer's text as
`freemad_finalized`, beside `freemad` (which stays the winner's); run and rescore alike, with
scripted agents run as processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.dashboard.views.eval_views import ReportShapeError, check_report, eval_view
from freemad.eval.accuracy_report import table
from tests.cli.helpers import freemad
from tests.eval.agents import calls, write_items, write_setup

# Two agents say Paris and keep it, one says Lyon: Free-MAD picks Paris every time. The
# finalizer (a3) then writes the table's "final" text.
TABLE = [
    {
        "match": "Q-kept",
        "answers": {"a1": ["Paris"], "a2": ["Paris"], "a3": ["Lyon"]},
        "final": "Paris",
    },
    {
        "match": "Q-fixed",
        "answers": {"a1": ["Paris"], "a2": ["Paris"], "a3": ["Lyon"]},
        "final": "Lyon",
    },
    {
        "match": "Q-broken",
        "answers": {"a1": ["Paris"], "a2": ["Paris"], "a3": ["Lyon"]},
        "final": "Lyon",
    },
]
ITEMS = [
    {"id": "kept", "question": "Q-kept: the capital of France?", "answer": "Paris"},
    {"id": "fixed", "question": "Q-fixed: not the capital?", "answer": "Lyon"},
    {"id": "broken", "question": "Q-broken: not the capital?", "answer": "Paris"},
]


def setup(tmp_path: Path, **debate: Any) -> Path:
    config = write_setup(tmp_path / "agents", TABLE, debate={"rounds": 1, **debate})
    write_items(tmp_path / "items.jsonl", [{**i, "checker": "exact"} for i in ITEMS])
    (tmp_path / "home").mkdir(exist_ok=True)
    return config


def evaluate(tmp_path: Path, config: Path, *how: str) -> dict[str, Any]:
    out = tmp_path / how[-1]
    freemad(
        "eval",
        *how[:-1],
        "--dataset",
        str(tmp_path / "items.jsonl"),
        "--config",
        str(config),
        "--out",
        str(out),
        cwd=tmp_path,
        home=tmp_path / "home",
    )
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def test_the_report_grades_the_finalized_text_beside_the_winner(tmp_path: Path) -> None:
    config = setup(tmp_path, finalizer="a3")
    report = evaluate(tmp_path, config, "run", "out")
    methods = report["methods"]
    assert (methods["freemad"]["correct"], methods["freemad"]["total"]) == (2, 3)
    # Right on "kept" and "fixed", wrong on "broken": the same count, other items.
    finalized = methods["freemad_finalized"]
    assert (finalized["correct"], finalized["total"]) == (2, 3)
    rows = {row["id"]: row["methods"] for row in report["rows"]}
    assert rows["fixed"]["freemad"] == {"answer": "Paris", "correct": False}
    assert rows["fixed"]["freemad_finalized"] == {"answer": "Lyon", "correct": True}
    assert rows["broken"]["freemad_finalized"] == {"answer": "Lyon", "correct": False}
    assert rows["kept"]["freemad_finalized"] == {"answer": "Paris", "correct": True}
    # One finalizer call per item, by a3, after its two debate turns.
    finals = [c for c in calls(tmp_path / "agents") if c[1] == "final"]
    assert sorted(c[2] for c in finals) == ["Q-broken", "Q-fixed", "Q-kept"]
    assert {c[0] for c in finals} == {"a3"}

    assert "freemad_finalized" in table(report)
    # The evaluation's page shows it too, a column in the items' table.
    check_report(report)
    page = eval_view("e", report, set())
    assert [m["key"] for m in page["methods"]][-3:] == [
        "freemad",
        "freemad_debate",
        "freemad_finalized",
    ]
    assert page["votes"][-1] == "freemad_finalized"
    assert [row["methods"][-1]["answer"] for row in page["rows"]] == ["Paris", "Lyon", "Lyon"]
    garbled = {**report, "methods": {**methods, "freemad_finalized": {"correct": -1}}}
    with pytest.raises(ReportShapeError, match=r"methods\.freemad_finalized\.correct"):
        check_report(garbled)

    # Rescoring the kept transcripts under the same config gives the same methods, no call.
    before = len(calls(tmp_path / "agents"))
    again = evaluate(
        tmp_path, config, "rescore", "--transcripts", str(tmp_path / "out" / "transcripts"), "re"
    )
    assert again["methods"] == methods
    assert len(calls(tmp_path / "agents")) == before


def test_without_a_finalizer_the_report_has_no_such_method(tmp_path: Path) -> None:
    config = setup(tmp_path)
    report = evaluate(tmp_path, config, "run", "out")
    assert set(report["methods"]) == {
        "single",
        "majority_initial",
        "majority_final",
        "freemad",
        "freemad_debate",
    }
    assert not [c for c in calls(tmp_path / "agents") if c[1] == "final"]


def test_a_failed_finalizer_is_graded_as_no_answer(tmp_path: Path) -> None:
    config = setup(tmp_path, finalizer="a3")
    table = json.loads((tmp_path / "agents" / "table.json").read_text())
    for entry in table:
        del entry["final"]  # the agent crashes (KeyError) when asked to finalize
    (tmp_path / "agents" / "table.json").write_text(json.dumps(table))
    report = evaluate(tmp_path, config, "run", "out")
    assert report["failed_items"] == 0
    assert report["methods"]["freemad"]["correct"] == 2
    assert report["methods"]["freemad_finalized"]["correct"] == 0
    for row in report["rows"]:
        assert row["methods"]["freemad_finalized"] == {"answer": None, "correct": False}
    data = yaml.safe_load(config.read_text())
    assert data["debate"]["finalizer"] == "a3"
