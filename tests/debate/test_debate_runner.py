"""The debate runtime with scripted in-process agents: rounds, decision, retries, budgets, cache."""

from __future__ import annotations

import pytest

from freemad.agents.agent_port import CallResult, CallStatus
from freemad.config.models import Mode
from freemad.core.answer_identity import answer_id, canonicalize
from freemad.debate import run_debate
from freemad.errors import UsageError
from tests.conftest import (
    ScriptedAgent,
    generation,
    keep,
    make_config,
    revise,
    scripted_config,
)


def ident(text: str, mode: str = "whitespace") -> str:
    return answer_id(canonicalize(text, mode))


def agents(**scripts: list[str | CallResult | float]) -> dict[str, ScriptedAgent]:
    return {name: ScriptedAgent(name).script(*replies) for name, replies in scripts.items()}


def test_final_round_majority_loses_to_the_trajectory_score() -> None:
    """The paper's point: three of four agents end on b, yet a wins on the whole trajectory."""
    ports = agents(
        a1=[generation("A"), keep(), revise("B")],
        a2=[generation("A"), keep(), revise("B")],
        a3=[generation("A"), keep(), keep()],
        a4=[generation("B"), keep(), keep()],
    )
    result = run_debate("q", scripted_config(ports), rounds=2, agents=ports)

    a, b = ident("A"), ident("B")
    assert result.status == "completed"
    assert result.holders_history[-1] == {"a1": b, "a2": b, "a3": a, "a4": b}
    # a: 3*20 + 3*20/2 - 2*25/3 + 20/3 = 80;  b: 20 + 20/2 + 2*30/3 + 20/3 = 56.67
    assert result.raw_scores[a] == pytest.approx(80.0)
    assert result.raw_scores[b] == pytest.approx(56.0 + 2 / 3)
    assert result.final_answer_id == a
    assert result.final_solution == "A"
    assert result.winning_agents == ["a3"]
    deltas = result.score_explainers[a]
    assert sum(d.amount for d in deltas) == pytest.approx(80.0)
    assert {(d.round, d.agent, d.action) for d in deltas if d.round == 2} == {
        (2, "a1", "leave"),
        (2, "a2", "leave"),
        (2, "a3", "keep"),
    }


def test_a_revision_to_the_same_answer_is_a_keep() -> None:
    ports = agents(x=[generation("A"), revise("A")], y=[generation("B"), keep()])
    result = run_debate("q", scripted_config(ports), rounds=1, agents=ports)
    turn = result.transcript[1].agents["x"]
    assert turn.action == "keep"
    assert result.raw_scores[ident("A")] == pytest.approx(20 + 10)


def test_critique_prompts_anonymise_peers_and_carry_their_answers() -> None:
    ports = agents(alice=[generation("ALPHA"), keep()], bob=[generation("BETA"), keep()])
    run_debate("q", scripted_config(ports), rounds=1, agents=ports)
    critique = ports["alice"].calls[1]
    assert critique.mode is Mode.CRITIQUE
    assert "BETA" in critique.prompt and "Peer A" in critique.prompt
    assert "bob" not in critique.prompt and "alice" not in critique.prompt
    assert "majority" in critique.prompt  # anti-conformity instructions by default


def test_conformity_mode_uses_the_other_instructions() -> None:
    ports = agents(x=[generation("A"), keep()], y=[generation("B"), keep()])
    config = scripted_config(ports, debate={"prompt_mode": "conformity"})
    run_debate("q", config, rounds=1, agents=ports)
    prompt = ports["x"].calls[1].prompt
    assert "adopt it" in prompt and "majority is often wrong" not in prompt


def test_garbage_is_retried_once_with_a_clarification() -> None:
    ports = agents(
        x=["no markers at all", generation("A"), keep()],
        y=[generation("B"), keep()],
    )
    result = run_debate("q", scripted_config(ports), rounds=1, agents=ports)
    turn = result.transcript[0].agents["x"]
    assert turn.status == "ok" and turn.attempts == 2
    assert "could not be parsed" in ports["x"].calls[1].prompt
    assert result.metrics["retries"] == 1


def test_garbage_twice_is_a_failure_and_never_an_answer() -> None:
    ports = agents(
        x=["garbage", "still garbage"],
        y=[generation("B"), keep()],
        z=[generation("C"), keep()],
    )
    result = run_debate("q", scripted_config(ports), rounds=1, agents=ports)
    turn = result.transcript[0].agents["x"]
    assert turn.status == "failed" and turn.error is not None
    assert turn.error.cause == "unparseable"
    assert set(result.scores) == {ident("B"), ident("C")}
    assert "x" not in result.transcript[1].agents  # no answer, nothing to critique


def test_a_failed_critique_carries_the_answer_forward_as_a_keep() -> None:
    crash = CallResult(CallStatus.EXIT_ERROR, detail="exit status 3: boom", exit_code=3)
    ports = agents(x=[generation("A"), crash], y=[generation("B"), keep()])
    result = run_debate("q", scripted_config(ports), rounds=1, agents=ports)
    turn = result.transcript[1].agents["x"]
    assert turn.status == "failed" and turn.action == "carried_forward"
    assert turn.error is not None and turn.error.cause == "exit_error"
    assert result.holders_history[-1]["x"] == ident("A")


def test_below_quorum_the_run_fails_clearly() -> None:
    crash = CallResult(CallStatus.NOT_LOGGED_IN, detail="exit status 1: Please run /login")
    ports = agents(x=[crash], y=[crash], z=[generation("C")])
    config = scripted_config(ports, deadlines={"min_agents": 2})
    result = run_debate("q", config, rounds=1, agents=ports)
    assert result.status == "failed"
    assert result.error == "only 1 of 3 agents answered in round 0; deadlines.min_agents is 2"
    assert result.final_answer_id is None
    causes = {a: t.error.cause for a, t in result.transcript[0].agents.items() if t.error}
    assert causes == {"x": "not_logged_in", "y": "not_logged_in"}


def test_soft_deadline_moves_on_with_a_quorum_and_cuts_the_straggler() -> None:
    ports = agents(
        fast1=[generation("A")],
        fast2=[generation("B")],
        slow=[30.0, generation("C")],
    )
    config = scripted_config(
        ports, deadlines={"soft_timeout_ms": 200, "hard_timeout_ms": 20_000, "min_agents": 2}
    )
    result = run_debate("q", config, rounds=0, agents=ports)
    record = result.transcript[0]
    assert record.deadline_hit_soft and not record.deadline_hit_hard
    assert record.agents["slow"].status == "cut"
    assert record.agents["slow"].deadline == "soft"
    assert result.status == "completed"


def test_hard_deadline_cuts_stragglers_in_critique_and_carries_them_forward() -> None:
    ports = agents(
        x=[generation("A"), keep()],
        y=[generation("B"), 30.0, keep()],
    )
    config = scripted_config(
        ports, deadlines={"soft_timeout_ms": 100, "hard_timeout_ms": 300, "min_agents": 2}
    )
    result = run_debate("q", config, rounds=1, agents=ports)
    # Only one of two answered in round 1: below quorum, so the debate stops there, and says
    # so; the winner is chosen over the two rounds, y's answer carried forward as a keep.
    turn = result.transcript[1].agents["y"]
    assert turn.status == "cut" and turn.deadline == "hard"
    assert turn.action == "carried_forward"
    assert result.status == "completed" and result.early_stop_reason == "quorum"
    assert (result.early_stop_note or "").startswith("only 1 of 2 agents answered in round 1")


def test_token_budget_stops_cleanly_between_rounds() -> None:
    ports = agents(x=[generation("A" * 400)], y=[generation("B" * 400)])
    config = scripted_config(ports, budget={"max_total_tokens": 50})
    result = run_debate("q", config, rounds=3, agents=ports)
    assert result.status == "completed"
    assert result.early_stop_reason == "max_total_tokens"
    assert len(result.transcript) == 1
    assert result.final_answer_id is not None


def test_prompts_are_truncated_to_the_token_cap_with_a_visible_marker() -> None:
    ports = agents(x=[generation("A" * 20_000), keep()], y=[generation("B" * 20_000), keep()])
    config = scripted_config(ports, budget={"max_tokens_per_agent_per_round": 1_000})
    result = run_debate("q", config, rounds=1, agents=ports)
    prompt = ports["x"].calls[1].prompt
    assert "cut by FREE-MAD to fit the token budget" in prompt
    assert (len(prompt) + 3) // 4 <= 1_000
    assert result.transcript[1].agents["x"].truncated_prompt


def test_answers_in_different_whitespace_count_together_and_the_merge_is_shown() -> None:
    ports = agents(
        x=[generation("def f():\n    return 1\n")],
        y=[generation("def f():   \n\n    return 1")],
    )
    result = run_debate("q", scripted_config(ports), rounds=0, agents=ports)
    assert len(result.scores) == 1
    (record,) = result.answers.values()
    assert record.merged and {v.agent_id for v in record.variants} == {"x", "y"}


def test_exact_identity_keeps_them_apart() -> None:
    ports = agents(x=[generation("42 ")], y=[generation("42")])
    config = scripted_config(ports, scoring={"answer_identity": "final_answer"})
    assert len(run_debate("q", config, rounds=0, agents=ports).scores) == 1
    ports = agents(x=[generation("The answer is 42.")], y=[generation("\\boxed{42}")])
    config = scripted_config(ports, scoring={"answer_identity": "exact"})
    assert len(run_debate("q", config, rounds=0, agents=ports).scores) == 2


def test_cache_replays_successes_and_never_failures(in_tmp) -> None:
    cache = {"enabled": True, "dir": str(in_tmp / "cache")}
    crash = CallResult(CallStatus.EXIT_ERROR, detail="exit status 1: x")
    first = agents(x=[generation("A")], y=[crash], z=[generation("C")])
    config = scripted_config(first, cache=cache)
    run_debate("q", config, rounds=0, agents=first)
    second = agents(x=[], y=[generation("B")], z=[])
    result = run_debate("q", config, rounds=0, agents=second)
    turns = result.transcript[0].agents
    assert turns["x"].cached and turns["z"].cached and not turns["y"].cached
    assert len(second["y"].calls) == 1 and not second["x"].calls
    assert result.metrics["cached_calls"] == 2


def test_events_tell_the_story_in_order() -> None:
    ports = agents(x=[generation("A"), keep()], y=[generation("B"), keep()])
    events = []
    run_debate("q", scripted_config(ports), rounds=1, agents=ports, on_event=events.append)
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("round_started") == 2 and kinds.count("agent_finished") == 4
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[-1].data["final_answer_id"] is not None


def test_ties_break_by_first_appearance_or_seeded_random() -> None:
    def tied(**scoring):
        ports = agents(x=[generation("A")], y=[generation("B")], z=[generation("C")])
        config = scripted_config(ports, scoring=scoring)
        return run_debate("q", config, rounds=0, agents=ports)

    result = tied()
    assert result.final_answer_id == ident("A")
    assert len(result.tied_answers) == 3
    seeded = {tied(tie_break="random", random_seed=s).final_answer_id for s in range(3)}
    again = {tied(tie_break="random", random_seed=s).final_answer_id for s in range(3)}
    assert seeded == again


def test_bad_requirements_are_usage_errors() -> None:
    ports = agents(x=[], y=[])
    config = scripted_config(ports, security={"max_requirement_size": 10})
    with pytest.raises(UsageError, match="empty"):
        run_debate("  \x00 ", config, agents=ports)
    with pytest.raises(UsageError, match="max_requirement_size is 10"):
        run_debate("x" * 11, config, agents=ports)


def test_per_agent_totals_and_cost() -> None:
    ports = agents(x=[generation("A"), keep()], y=[generation("B"), keep()])
    price = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
    config = make_config(
        [
            {"id": "x", "cli_command": "scripted", "pricing": price},
            {"id": "y", "cli_command": "scripted"},
        ]
    )
    result = run_debate("q", config, rounds=1, agents=ports)
    totals = result.agents["x"]
    assert totals.calls == 2 and totals.tokens.input > 0
    expected = (totals.tokens.input * 3.0 + totals.tokens.output * 15.0) / 1e6
    assert totals.cost_usd == pytest.approx(expected, abs=1e-6)
    assert result.agents["y"].cost_usd is None
