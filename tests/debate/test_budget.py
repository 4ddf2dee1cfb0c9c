"""The total time budget ends a debate early with a winner; late answers until the hard deadline
on request. Scripted agents that think (sleep) stand in for slow ones; no duration is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.agents.agent_port import CallResult
from freemad.core.answer_identity import answer_id, canonicalize
from freemad.debate import run_debate
from tests.conftest import MOCK_AGENT, ScriptedAgent, generation, keep, scripted_config

FREEMAD = str(Path(sys.executable).parent / "freemad")
SLOW = 60.0  # seconds an agent would think: far past any budget here, so it is always cut
BUDGET = {"max_total_time_sec": 0.5}


def agents(**scripts: list[str | CallResult | float]) -> dict[str, ScriptedAgent]:
    return {name: ScriptedAgent(name).script(*replies) for name, replies in scripts.items()}


def test_the_budget_running_out_in_a_round_keeps_what_was_decided_and_a_winner() -> None:
    """Round 1 is in flight when the budget ends: y is stopped, x's keep counts, no round 2."""
    ports = agents(x=[generation("A"), keep()], y=[generation("B"), SLOW, keep()])
    config = scripted_config(ports, budget=BUDGET, deadlines={"min_agents": 2})
    result = run_debate("q", config, rounds=3, agents=ports)
    assert result.status == "completed" and result.error is None
    assert result.early_stop_reason == "max_total_time_sec"
    assert result.early_stop_note == (
        "budget.max_total_time_sec (0.5s) ran out during round 1; "
        "the winner is chosen over the 2 round(s) that happened"
    )
    assert [r.round for r in result.transcript] == [0, 1]
    cut = result.transcript[1].agents["y"]
    assert cut.status == "cut" and cut.error is not None
    assert cut.error.cause == "deadline_budget"
    assert result.transcript[1].deadline_hit_hard
    assert len(ports["x"].calls) == 2, "no round starts after the budget ran out"
    # The paper's rule over the rounds that happened: A 20 + 20/2 = 30; B 20 + 20/2 (y carried).
    a, b = (answer_id(canonicalize(t, "whitespace")) for t in ("A", "B"))
    assert result.raw_scores == {a: 30.0, b: 30.0}
    assert result.final_answer_id == a  # the tie goes to the first proposed


def test_a_critique_round_nobody_answered_before_the_budget_did_not_happen() -> None:
    ports = agents(x=[generation("A"), SLOW, keep()], y=[generation("A"), SLOW, keep()])
    result = run_debate("q", scripted_config(ports, budget=BUDGET), rounds=2, agents=ports)
    assert result.status == "completed"
    assert result.early_stop_reason == "max_total_time_sec"
    assert [r.round for r in result.transcript] == [0]
    assert result.raw_scores == {answer_id(canonicalize("A", "whitespace")): 40.0}
    assert result.final_solution == "A"
    assert "during round 1" in (result.early_stop_note or "")


def test_a_budget_that_ends_before_any_answer_is_a_failure_that_says_so() -> None:
    ports = agents(x=[SLOW, generation("A")], y=[SLOW, generation("B")])
    result = run_debate("q", scripted_config(ports, budget=BUDGET), rounds=1, agents=ports)
    assert result.status == "failed" and result.final_answer_id is None
    assert result.error == "budget.max_total_time_sec (0.5s) ran out before any agent answered"


def test_by_default_a_round_moves_on_at_the_soft_deadline_once_the_quorum_answered() -> None:
    ports = agents(x=[generation("A")], y=[generation("B")], z=[0.3, generation("C")])
    config = scripted_config(
        ports, deadlines={"soft_timeout_ms": 10, "hard_timeout_ms": 60_000, "min_agents": 2}
    )
    result = run_debate("q", config, rounds=0, agents=ports)
    record = result.transcript[0]
    assert record.deadline_hit_soft and record.agents["z"].status == "cut"


def test_accept_late_until_hard_waits_for_every_agent_as_the_reference_does() -> None:
    ports = agents(x=[generation("A")], y=[generation("B")], z=[0.3, generation("C")])
    deadlines = {
        "soft_timeout_ms": 10,
        "hard_timeout_ms": 60_000,
        "min_agents": 2,
        "accept_late_until_hard": True,
    }
    result = run_debate("q", scripted_config(ports, deadlines=deadlines), rounds=0, agents=ports)
    record = result.transcript[0]
    assert not record.deadline_hit_soft and not record.deadline_hit_hard
    assert record.agents["z"].status == "ok"
    assert result.settings["accept_late_until_hard"] is True


def test_accept_late_until_hard_still_stops_at_the_hard_deadline() -> None:
    ports = agents(x=[generation("A")], y=[generation("B")], z=[SLOW, generation("C")])
    deadlines = {
        "soft_timeout_ms": 10,
        "hard_timeout_ms": 400,
        "min_agents": 2,
        "accept_late_until_hard": True,
    }
    result = run_debate("q", scripted_config(ports, deadlines=deadlines), rounds=0, agents=ports)
    record = result.transcript[0]
    assert record.deadline_hit_hard and not record.deadline_hit_soft
    assert record.agents["z"].status == "cut" and record.agents["z"].deadline == "hard"
    assert result.status == "completed"


@pytest.mark.parametrize("as_json", [False, True])
def test_the_cli_exits_0_with_the_winner_and_says_on_stderr_that_it_stopped_early(
    tmp_path: Path, as_json: bool
) -> None:
    """Real agents: one hangs in its critique until the budget ends the debate."""
    stuck = f"{MOCK_AGENT} --persona memoized --fault hang --fault-in critique"
    config: dict[str, Any] = {
        "agents": [
            {"id": "quick", "cli_command": f"{MOCK_AGENT} --persona iterative"},
            {"id": "stuck", "cli_command": stuck},
        ],
        "security": {"cli_allowed_commands": [MOCK_AGENT]},
        "deadlines": {"min_agents": 2},
        "budget": {"max_total_time_sec": 3},
        "output": {"transcript_dir": str(tmp_path / "transcripts")},
    }
    for agent in config["agents"]:
        agent["cli_mode_arg"] = True
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(config))
    extra = ["--json"] if as_json else []
    done = subprocess.run(
        [FREEMAD, "Write a function that returns Fibonacci(n).", "--config", "cfg.yaml", *extra],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "FREEMAD_DEBUG"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "freemad: note: stopped early: budget.max_total_time_sec (3s) ran out during round 1; "
        "the winner is chosen over the 2 round(s) that happened"
    ) in done.stderr.splitlines()
    if as_json:
        result = json.loads(done.stdout)
        assert result["status"] == "completed" and result["final_answer_id"]
        assert result["early_stop_reason"] == "max_total_time_sec"
    else:
        assert done.stdout.startswith("Winner ")
    [transcript] = (tmp_path / "transcripts").iterdir()
    assert "max_total_time_sec" in transcript.read_text()
