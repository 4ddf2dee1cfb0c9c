"""Self-consistency and the judge end to end on scripted agents: their answers, their extra calls
(counted in the agents' own log), and what the report says they cost."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tests.cli.helpers import freemad
from tests.eval.agents import calls, evaluate, write_items, write_setup

TABLE = [
    # a1's debate answer is 7 (wrong); its next two draws are 9: self-consistency over 3 says 9.
    # The judge (a2) is shown 7 (a1, a2) and 9 (a3) and answers "2": 9, right.
    {
        "match": "Q-sc",
        "answers": {"a1": ["7"], "a2": ["7"], "a3": ["9"]},
        "draws": {"a1": ["7", "9", "9"]},
        "judge": "2",
    },
    # Everyone says 5: the judge is not called; a1's draws are all 5.
    {"match": "Q-agree", "answers": {"a1": ["5"], "a2": ["5"], "a3": ["5"]}},
]
ITEMS = [
    {"id": "sc", "question": "Q-sc: how many?", "answer": 9, "checker": "numeric"},
    {"id": "agree", "question": "Q-agree: how many?", "answer": 5, "checker": "numeric"},
]


def test_self_consistency_and_judge_cost_only_their_own_calls(tmp_path: Path) -> None:
    config = write_setup(tmp_path / "agents", TABLE, debate={"rounds": 1})
    dataset = write_items(tmp_path / "items.jsonl", ITEMS)
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "out"
    evaluate(
        str(dataset),
        str(config),
        str(out),
        "--self-consistency",
        "3",
        "--judge",
        "a2",
        "--concurrency",
        "1",
        cwd=tmp_path,
        home=home,
    )
    report = json.loads((out / "report.json").read_text())
    methods = report["methods"]
    assert methods["single"]["agents"]["a1"]["correct"] == 1  # 7 is wrong, 5 right
    assert (methods["self_consistency"]["correct"], methods["self_consistency"]["total"]) == (2, 2)
    assert (methods["judge"]["correct"], methods["judge"]["total"]) == (2, 2)
    assert methods["majority_final"]["correct"] == 1  # 7, 7, 9 votes 7
    rows = {row["id"]: row for row in report["rows"]}
    assert rows["sc"]["methods"]["self_consistency"]["answer"] == "9"
    assert rows["sc"]["methods"]["judge"]["answer"] == "9"
    # The debate: 3 agents x 2 rounds per item. Self-consistency: 2 more calls of a1 per item.
    # The judge: one call, for the item whose agents disagree.
    logged = Counter((who, when, match) for who, when, match in calls(tmp_path / "agents"))
    assert logged[("a1", 0, "Q-sc")] == 3 and logged[("a1", 0, "Q-agree")] == 3
    assert logged[("a2", 0, "Q-sc")] == 2  # its debate answer, and its judging
    assert logged[("a2", 0, "Q-agree")] == 1
    assert sum(logged.values()) == 2 * 6 + 2 * 2 + 1
    assert rows["sc"]["extra_cost"]["self_consistency"]["calls"] == 2
    assert rows["sc"]["extra_cost"]["judge"]["calls"] == 1
    assert rows["agree"]["extra_cost"]["judge"]["calls"] == 0
    assert methods["judge"]["calls"].startswith("one call per item")
    assert methods["majority_final"]["calls"].startswith("none extra")


def test_baseline_agents_must_be_enabled_agents(tmp_path: Path) -> None:
    config = write_setup(tmp_path / "agents", TABLE)
    dataset = write_items(tmp_path / "items.jsonl", ITEMS)
    home = tmp_path / "home"
    home.mkdir()
    done = evaluate(
        str(dataset),
        str(config),
        str(tmp_path / "out"),
        "--judge",
        "nobody",
        cwd=tmp_path,
        home=home,
        code=2,
    )
    assert "--judge 'nobody' is not an enabled agent: a1, a2, a3" in done.stderr
    assert "Traceback" not in done.stderr and calls(tmp_path / "agents") == []


def test_the_site_shows_the_baselines(tmp_path: Path) -> None:
    config = write_setup(tmp_path / "agents", TABLE, debate={"rounds": 1})
    dataset = write_items(tmp_path / "items.jsonl", ITEMS)
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "out"
    evaluate(
        str(dataset),
        str(config),
        str(out),
        "--self-consistency",
        "2",
        "--judge",
        "a3",
        cwd=tmp_path,
        home=home,
    )
    site = tmp_path / "site"
    freemad("site", "build", "--eval", str(out), "--out", str(site), cwd=tmp_path, home=home)
    page = next((site / "evals").glob("*.html")).read_text()
    assert 'data-method="self_consistency"' in page and 'data-method="judge"' in page


def test_self_consistency_samples_count_against_the_process_budget(tmp_path: Path) -> None:
    config = write_setup(tmp_path / "agents", TABLE)
    dataset = write_items(tmp_path / "items.jsonl", ITEMS[1:])
    home = tmp_path / "home"
    home.mkdir()
    done = freemad(
        "eval", "run", "--dataset", str(dataset), "--config", str(config), "--out",
        str(tmp_path / "out"), "--self-consistency", "9", cwd=tmp_path, home=home,
    )  # fmt: skip
    # 16 processes (budget.max_concurrent_agents), 8 samples drawn at once: 2 items at a time.
    assert "up to 2 at a time" in done.stderr
    logged = calls(tmp_path / "agents")
    assert sum(1 for who, when, _ in logged if who == "a1" and when == 0) == 9
