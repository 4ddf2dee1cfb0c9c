"""`freemad eval run` end to end on benchmark formats (GSM8K, MATH, multiple-choice CSV, yes/no)
with scripted agents, so each method's accuracy is known; and a checker that crashes makes its
item unscorable without losing the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from freemad.debate.debate_record import DebateResult
from freemad.eval.grading import grade
from freemad.eval.items import Item
from freemad.sandbox.sandbox_port import Sandbox
from tests.eval.agents import evaluate, write_items, write_setup

pytest.importorskip("sympy", reason="the math checker needs sympy (freemad[eval])")

# One critique round; the agents keep their first answers unless the table says otherwise.
TABLE = [
    {"match": "Natalia", "answers": {"a1": ["72"], "a2": ["The total is 72."], "a3": ["70"]}},
    {
        "match": "Half of one",
        "answers": {"a1": ["\\boxed{0.5}"], "a2": ["\\boxed{\\frac{1}{2}}"], "a3": ["\\boxed{1}"]},
    },
    {"match": "Sky colour", "answers": {"a1": ["blue"], "a2": ["B"], "a3": ["A"]}},
    {"match": "Is fire cold", "answers": {"a1": ["No."], "a2": ["Yes"], "a3": ["no, it is hot"]}},
]


def _eval(tmp_path: Path, name: str, dataset: Path) -> dict[str, object]:
    config = tmp_path / "agents" / "freemad.yaml"
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    out = tmp_path / f"out-{name}"
    evaluate(
        str(dataset),
        str(config),
        str(out),
        cwd=tmp_path,
        home=home,
    )
    report: dict[str, object] = json.loads((out / "report.json").read_text())
    return report


def _accuracies(report: dict[str, object]) -> dict[str, object]:
    methods = report["methods"]
    assert isinstance(methods, dict)
    agents = methods["single"]["agents"]
    found = {agent: agents[agent]["correct"] for agent in agents}
    for name in ("majority_initial", "majority_final", "freemad"):
        found[name] = methods[name]["correct"]
    return found


def test_each_benchmark_format_is_graded_by_its_checker(tmp_path: Path) -> None:
    write_setup(tmp_path / "agents", TABLE, debate={"rounds": 1})
    gsm8k = write_items(
        tmp_path / "gsm8k.jsonl",
        [{"question": "Natalia sold 48 clips in April", "answer": "She sold 48+24\n#### 72"}],
    )
    report = _eval(tmp_path, "gsm8k", gsm8k)
    assert report["answer_identity"].startswith("the item's checker's normal form")
    # a1 and a2 say 72 (two texts, one number): the majorities and the debate say 72.
    assert _accuracies(report) == {
        "a1": 1,
        "a2": 1,
        "a3": 0,
        "majority_initial": 1,
        "majority_final": 1,
        "freemad": 1,
    }
    math = write_items(
        tmp_path / "math.jsonl",
        [{"problem": "Half of one?", "solution": "It is $\\boxed{\\frac{1}{2}}$."}],
    )
    report = _eval(tmp_path, "math", math)
    # 0.5 is 1/2 by sympy, not by text: a1 right only through the equivalence.
    assert _accuracies(report)["a1"] == 1 and _accuracies(report)["a3"] == 0
    mcq = tmp_path / "mcq.csv"
    mcq.write_text("Sky colour?,red,blue,green,B\n")
    report = _eval(tmp_path, "mcq", mcq)
    # a1 names the option by its text, a2 by its letter: both B.
    assert _accuracies(report) == {
        "a1": 1,
        "a2": 1,
        "a3": 0,
        "majority_initial": 1,
        "majority_final": 1,
        "freemad": 1,
    }
    yesno = write_items(
        tmp_path / "strategyqa.jsonl", [{"qid": "f", "question": "Is fire cold?", "answer": False}]
    )
    report = _eval(tmp_path, "yesno", yesno)
    assert _accuracies(report) == {
        "a1": 1,
        "a2": 0,
        "a3": 1,
        "majority_initial": 1,
        "majority_final": 1,
        "freemad": 1,  # three texts, each kept: the debate's tie goes to a1's, proposed first
    }


class _CrashingSandbox:
    """A sandbox whose run raises: fault injection for a checker that crashes."""

    def problem(self) -> str | None:
        return None

    def run(self, *_args: object, **_kw: object) -> object:
        raise RuntimeError("the sandbox fell over")


def test_a_checker_that_crashes_makes_its_item_unscorable(tmp_path: Path) -> None:
    from freemad.eval.accuracy_report import build_report

    write_setup(tmp_path / "agents", TABLE, debate={"rounds": 1})
    gsm8k = write_items(
        tmp_path / "gsm8k.jsonl", [{"question": "Natalia sold 48", "answer": "#### 72"}]
    )
    _eval(tmp_path, "gsm8k", gsm8k)
    (transcript,) = (tmp_path / "out-gsm8k" / "transcripts").glob("*.json")
    result = DebateResult.model_validate_json(transcript.read_text())
    item = Item("c", "q", "code", test="def check(c):\n    pass\n", entry_point="f")
    sandbox: Sandbox = _CrashingSandbox()  # type: ignore[assignment]
    row = grade(item, result, sandbox)
    assert row["unscorable"] == "the code checker failed: RuntimeError: the sandbox fell over"
    report = build_report([row], {})
    assert report["unscorable"] == [{"id": "c", "reason": row["unscorable"]}]
    assert report["methods"]["freemad"]["total"] == 0
