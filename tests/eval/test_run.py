"""`freemad eval run` end to end on scripted agents whose trajectories are known, so each method's
accuracy is worked out by hand below and asserted exactly; resuming; bad items."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import freemad
from tests.eval.agents import calls, evaluate, write_items, write_setup

# Three agents, two critique rounds; weights (20, 25, 30, 20), round k weighs 1/(k+1).
TABLE = [
    # Paris 40 after round 0, 60 after round 1 (two keeps at 10); in round 2 a1 keeps (+20/3),
    # a2 leaves Paris (-25/3) for Lyon (+10), a3 keeps Lyon (+20/3): Paris 58.3, Lyon 46.7.
    # Free-MAD says Paris, the final majority Lyon.
    {
        "match": "Q-win",
        "answers": {"a1": ["Paris"], "a2": ["Paris", "Paris", "Lyon"], "a3": ["Lyon"]},
    },
    {
        "match": "Q-lose",
        "answers": {"a1": ["Paris"], "a2": ["Paris", "Paris", "Lyon"], "a3": ["Lyon"]},
    },
    # Three answers, one agent each, all kept: every majority is a tie, broken towards a1's.
    {"match": "Q-tie", "answers": {"a1": ["Rome"], "a2": ["Milan"], "a3": ["Turin"]}},
    # The numeric checker sees 41, 42, 42; the debate sees three different texts, all kept, so
    # its tie goes to the first proposed, a1's 41.
    {
        "match": "Q-number",
        "answers": {"a1": ["The answer is 41"], "a2": ["42"], "a3": ["It is 42.0"]},
    },
    # Round 0: B, C, C (majority C); a3 moves to B in round 1: B 20+10+15+2*20/3 = 58.3 wins,
    # and the final majority is B too.
    {
        "match": "Q-choice",
        "answers": {"a1": ["B"], "a2": ["The answer is (C)"], "a3": ["C", "B"]},
    },
]
ITEMS = [
    {
        "id": "win",
        "question": "Q-win: the capital of France?",
        "answer": "Paris",
        "checker": "exact",
    },
    {"id": "lose", "question": "Q-lose: not the capital?", "answer": " Lyon ", "checker": "exact"},
    {"id": "tie", "question": "Q-tie: the capital of Italy?", "answer": "Rome", "checker": "exact"},
    {"id": "number", "question": "Q-number: six times seven?", "answer": 42, "checker": "numeric"},
    {"id": "choice", "question": "Q-choice: A, B, C, D or E?", "answer": "C", "checker": "choice"},
]
# Right (1) or wrong (0) per item, in ITEMS order, worked out from TABLE above.
EXPECTED = {
    "a1": [1, 0, 1, 0, 0],
    "a2": [1, 0, 0, 1, 1],
    "a3": [0, 1, 0, 1, 1],
    "majority_initial": [1, 0, 1, 1, 1],
    "majority_final": [0, 1, 1, 1, 0],
    # Free-MAD's rule counts "42" and "It is 42.0" as one answer, as the checker does: 42 wins.
    "freemad": [1, 0, 1, 1, 0],
    # The debate itself told the three texts apart and broke their tie to a1's 41.
    "freemad_debate": [1, 0, 1, 0, 0],
}


def _setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    config = write_setup(tmp_path / "agents", TABLE, debate={"rounds": 2})
    dataset = write_items(tmp_path / "items.jsonl", ITEMS)
    home = tmp_path / "home"
    home.mkdir()
    return config, dataset, home


def _run(tmp_path: Path, *extra: str, code: int = 0) -> Any:
    if (tmp_path / "home").exists():
        config, dataset, home = (
            tmp_path / "agents" / "freemad.yaml",
            tmp_path / "items.jsonl",
            tmp_path / "home",
        )
    else:
        config, dataset, home = _setup(tmp_path)
    return evaluate(dataset, config, tmp_path / "out", *extra, cwd=tmp_path, home=home, code=code)


def _scores(report: dict[str, Any]) -> dict[str, Any]:
    """Each method's verdict counts and interval, without what it cost."""

    def without_cost(entry: dict[str, Any]) -> dict[str, Any]:
        return {
            key: ({a: without_cost(s) for a, s in value.items()} if key == "agents" else value)
            for key, value in entry.items()
            if key != "cost"
        }

    return {name: without_cost(entry) for name, entry in report["methods"].items()}


def _report(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "out" / "report.json").read_text())


def test_every_method_scores_exactly_what_the_trajectories_give(tmp_path: Path) -> None:
    done = _run(tmp_path, "--concurrency", "2")
    report = _report(tmp_path)
    methods = report["methods"]
    for name in ("majority_initial", "majority_final", "freemad", "freemad_debate"):
        right = sum(EXPECTED[name])
        assert (methods[name]["correct"], methods[name]["total"]) == (right, 5), name
        assert methods[name]["accuracy"] == right / 5
    assert (methods["majority_initial"]["correct"], methods["majority_final"]["correct"]) == (4, 3)
    assert (methods["freemad"]["correct"], methods["freemad_debate"]["correct"]) == (3, 2)
    single = methods["single"]
    assert {a: s["correct"] for a, s in single["agents"].items()} == {"a1": 2, "a2": 3, "a3": 3}
    assert (single["correct"], single["total"]) == (8, 15)
    assert single["accuracy"] == pytest.approx(8 / 15)
    for index, row in enumerate(report["rows"]):
        assert row["status"] == "completed"
        for name in ("majority_initial", "majority_final", "freemad", "freemad_debate"):
            assert row["methods"][name]["correct"] == bool(EXPECTED[name][index]), (row["id"], name)
        for agent in ("a1", "a2", "a3"):
            assert row["single"][agent]["correct"] == bool(EXPECTED[agent][index])
    rows = {row["id"]: row for row in report["rows"]}
    # Free-MAD beats the final vote, and loses to it, on the same trajectory.
    assert rows["win"]["methods"]["freemad"]["answer"] == "Paris"
    assert rows["win"]["methods"]["majority_final"]["answer"] == "Lyon"
    assert rows["tie"]["methods"]["majority_final"]["answer"] == "Rome"
    assert rows["number"]["methods"]["majority_final"]["answer"] == "42"
    assert rows["number"]["methods"]["freemad"]["answer"] == "42"
    assert rows["number"]["methods"]["freemad_debate"]["answer"] == "41"
    assert rows["choice"]["methods"]["majority_initial"]["answer"] == "C"
    assert rows["choice"]["methods"]["freemad"]["answer"] == "B"
    assert methods["majority_initial"]["interval"] == pytest.approx([0.3755, 0.9638], abs=1e-4)
    assert report["interval"] == "95% Wilson score interval"
    assert report["cost"]["calls"] == 5 * 3 * 3
    # The table, the transcripts the report names, and progress on stderr.
    assert "majority_final" in done.stdout and "60.0%" in done.stdout
    assert "single: a1" in done.stdout
    assert "[5/5]" in done.stderr and "2 at a time" in done.stderr
    assert len(list((tmp_path / "out" / "transcripts").glob("*.json"))) == 5
    for row in report["rows"]:
        assert (tmp_path / "out" / row["transcript"]).is_file()


def test_a_rerun_skips_finished_items_and_a_partial_folder_runs_the_rest(tmp_path: Path) -> None:
    _run(tmp_path)
    first = _report(tmp_path)
    log = tmp_path / "agents"
    assert len(calls(log)) == 45
    # Without --resume, a folder with finished items is not run into.
    refused = _run(tmp_path, code=2)
    assert "holds 5 finished item(s) of this evaluation" in refused.stderr
    assert "--resume" in refused.stderr and len(calls(log)) == 45
    _run(tmp_path, "--resume")
    assert len(calls(log)) == 45  # nothing left to run
    assert _report(tmp_path)["methods"] == first["methods"]
    # An interrupted run: one item's row is gone; only that item is debated again.
    (next((tmp_path / "out" / "items").glob("tie-*.json"))).unlink()
    again = _run(tmp_path, "--resume")
    new = calls(log)[45:]
    assert len(new) == 9 and {match for _, _, match in new} == {"Q-tie"}
    assert "4 already done, 1 to run" in again.stderr
    assert _scores(_report(tmp_path)) == _scores(first)  # the time it took differs


def test_an_interrupted_run_keeps_its_finished_items_and_resumes(tmp_path: Path) -> None:
    import signal
    import subprocess

    from tests.cli.helpers import FREEMAD, user_env
    from tests.conftest import wait_for

    slow = [*TABLE[:2], {**TABLE[2], "delay": 60}]
    config = write_setup(tmp_path / "agents", slow, debate={"rounds": 2})
    dataset = write_items(tmp_path / "items.jsonl", ITEMS[:3])
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "out"
    args = [str(FREEMAD), "eval", "run", "--dataset", str(dataset), "--config", str(config)]
    args += ["--out", str(out), "--concurrency", "1"]
    running = subprocess.Popen(
        args, cwd=tmp_path, env=user_env(home), stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(lambda: len(list((out / "items").glob("*.json"))) == 2, "two items done")
        wait_for(lambda: any(m == "Q-tie" for _, _, m in calls(tmp_path / "agents")), "Q-tie")
        running.send_signal(signal.SIGINT)
        _, err = running.communicate(timeout=60)
    finally:
        running.kill()
    assert running.returncode == 130
    assert "finished items are kept" in err and "Traceback" not in err
    assert not (out / "report.json").exists()
    before = len(calls(tmp_path / "agents"))
    write_setup(tmp_path / "agents", TABLE, debate={"rounds": 2})
    again = freemad(*args[1:], "--resume", cwd=tmp_path, home=home)
    assert "2 already done, 1 to run" in again.stderr
    assert {m for _, _, m in calls(tmp_path / "agents")[before:]} == {"Q-tie"}
    report = json.loads((out / "report.json").read_text())
    assert [row["id"] for row in report["rows"]] == ["win", "lose", "tie"]
    assert report["methods"]["freemad"]["correct"] == 2


def test_a_folder_of_another_evaluation_is_refused(tmp_path: Path) -> None:
    # 16 agent processes at once (budget.max_concurrent_agents) is 5 debates of 3 agents.
    capped = _run(tmp_path, "--limit", "1", "--concurrency", "40")
    assert "--concurrency 40 is more than budget.max_concurrent_agents (16)" in capped.stderr
    assert "5 at a time" in capped.stderr
    done = _run(tmp_path, "--limit", "1", "--rounds", "1", code=2)
    assert done.stderr.count("\n") == 1
    assert (
        "holds an evaluation of another dataset, config, --rounds, --seed or baselines"
        in done.stderr
    )


def test_bad_items_are_one_line_each_and_refused_unless_skipped(tmp_path: Path) -> None:
    config, _, home = _setup(tmp_path)
    bad = write_items(
        tmp_path / "bad.jsonl",
        [
            ITEMS[0],
            "{not json",
            {"id": "x", "question": "Q-tie?", "checker": "exact"},
            {"id": "y", "question": "Q-tie?", "answer": "1", "checker": "fuzzy"},
            {"id": "z", "question": "Q-tie?", "answer": "no number", "checker": "numeric"},
            {"id": "win", "question": "Q-win again", "answer": "Paris", "checker": "exact"},
        ],
    )
    args = ["eval", "run", "--dataset", str(bad), "--config", str(config), "--rounds", "0"]
    done = freemad(*args, "--out", str(tmp_path / "o"), cwd=tmp_path, home=home, code=2)
    lines = done.stderr.splitlines()
    assert lines[:5] == [
        f"freemad: bad item: {bad}:2: not JSON (Expecting property name enclosed in double quotes)",
        f"freemad: bad item: {bad}:3: missing answer",
        f"freemad: bad item: {bad}:4: unknown checker 'fuzzy' "
        "(one of exact, normalized, numeric, math, choice, yesno, code)",
        f"freemad: bad item: {bad}:5: answer 'no number' has nothing a numeric checker can compare",
        f"freemad: bad item: {bad}:6: id 'win' again (ids must be unique)",
    ]
    assert lines[5].startswith("freemad: error: 5 bad item(s)") and "--skip-bad" in lines[5]
    assert len(lines) == 6 and "Traceback" not in done.stderr
    assert not (tmp_path / "o").exists()
    skipped = freemad(*args, "--skip-bad", "--out", str(tmp_path / "o"), cwd=tmp_path, home=home)
    assert json.loads((tmp_path / "o" / "report.json").read_text())["items"] == 1
    assert "1 item(s)" in skipped.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "missing.jsonl"], "no dataset file missing.jsonl"),
        (["--dataset", "items.jsonl", "--limit", "0"], "Invalid value for '--limit'"),
        (["--dataset", "items.jsonl", "--concurrency", "x"], "Invalid value for '--concurrency'"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    config, _, home = _setup(tmp_path)
    done = freemad(
        "eval",
        "run",
        *args,
        "--config",
        str(config),
        "--out",
        "o",
        cwd=tmp_path,
        home=home,
        code=2,
    )
    assert message in done.stderr and done.stderr.count("\n") == 1


def test_rescore_gives_the_same_methods_without_a_call(tmp_path: Path) -> None:
    _run(tmp_path)
    before = len(calls(tmp_path / "agents"))
    out = tmp_path / "out"
    freemad(
        "eval",
        "rescore",
        "--dataset",
        str(tmp_path / "items.jsonl"),
        "--transcripts",
        str(out / "transcripts"),
        "--out",
        str(tmp_path / "again"),
        "--config",
        str(tmp_path / "agents" / "freemad.yaml"),
        cwd=tmp_path,
        home=tmp_path / "home",
    )
    again = json.loads((tmp_path / "again" / "report.json").read_text())
    assert again["methods"] == _report(tmp_path)["methods"]
    assert len(calls(tmp_path / "agents")) == before
    # Without the index, transcripts are matched by requirement == question.
    bare = tmp_path / "bare"
    shutil.copytree(out / "transcripts", bare)
    (bare / "index.jsonl").unlink()
    freemad(
        "eval",
        "rescore",
        "--dataset",
        str(tmp_path / "items.jsonl"),
        "--transcripts",
        str(bare),
        "--out",
        str(tmp_path / "third"),
        "--config",
        str(tmp_path / "agents" / "freemad.yaml"),
        cwd=tmp_path,
        home=tmp_path / "home",
    )
    third = json.loads((tmp_path / "third" / "report.json").read_text())
    assert third["methods"] == again["methods"]
