"""Large teams: a round in waves is said at the start, and a critique prompt stays bounded."""

from __future__ import annotations

import logging

import pytest

from freemad.debate import run_debate
from freemad.debate.prompts import TRUNCATION_MARK, PromptBook, ShownAnswer
from freemad.debate.team import team_notes
from tests.conftest import ScriptedAgent, generation, keep, scripted_config

MARK_START = TRUNCATION_MARK.split("{")[0]


def agents(count: int, solution: str = "x") -> dict[str, ScriptedAgent]:
    return {
        f"a{i:02d}": ScriptedAgent(f"a{i:02d}").script(generation(f"{solution} {i}"), keep())
        for i in range(count)
    }


def test_more_agents_than_max_concurrent_agents_is_said_once_at_the_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ports = agents(5)
    config = scripted_config(ports, budget={"max_concurrent_agents": 2})
    with caplog.at_level(logging.WARNING, logger="freemad"):
        result = run_debate("q", config, rounds=1, agents=ports)
    assert result.status == "completed"
    said = [r.getMessage() for r in caplog.records if "max_concurrent_agents" in r.getMessage()]
    assert said == [
        "5 agents and budget.max_concurrent_agents is 2: each round runs in 3 waves "
        "(raise max_concurrent_agents to start them all at once)"
    ]


def test_a_team_within_max_concurrent_agents_is_not_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ports = agents(3)
    with caplog.at_level(logging.WARNING, logger="freemad"):
        run_debate("q", scripted_config(ports), rounds=1, agents=ports)
    assert not [r for r in caplog.records if "max_concurrent_agents" in r.getMessage()]


def long_answer(tag: str, chars: int) -> ShownAnswer:
    return ShownAnswer(tag, (f"{tag} solution line. " * chars)[:chars], f"{tag} reasons")


def test_peers_share_the_prompt_bound_equally_and_the_own_answer_stays_whole() -> None:
    book = PromptBook("anti_conformity")
    own = long_answer("you", 20_000)
    peers = [long_answer(f"Agent {i}", 100_000) for i in range(15)]
    peers.append(ShownAnswer("Agent short", "short answer", "short reasons"))
    unbounded, cut = book.critique("q", 1, own, peers)
    assert len(unbounded) > 1_500_000 and not cut
    prompt, cut = book.critique("q", 1, own, peers, max_chars=200_000)
    assert cut and 190_000 < len(prompt) <= 200_000
    assert own.solution in prompt and "short answer" in prompt  # whole: shorter than a share
    assert prompt.count(MARK_START) == 15  # each long peer's solution cut once, marked
    kept = [prompt.index(MARK_START, prompt.index(f'label="{p.label}"')) for p in peers[:15]]
    shares = {k - prompt.index(f'label="{p.label}"') for k, p in zip(kept, peers, strict=False)}
    assert max(shares) - min(shares) <= 64  # the same share each (labels differ in length)


def test_an_own_answer_over_the_bound_is_cut_too_and_the_bound_holds() -> None:
    book = PromptBook("anti_conformity")
    own = long_answer("you", 50_000)
    peers = [long_answer(f"Agent {i}", 50_000) for i in range(3)]
    prompt, cut = book.critique("q", 1, own, peers, max_chars=20_000)
    assert cut and len(prompt) <= 20_000 and prompt.count(MARK_START) == 4


def test_a_prompt_within_the_bound_is_unchanged() -> None:
    book = PromptBook("anti_conformity")
    own, peers = long_answer("you", 100), [long_answer("Agent A", 100)]
    assert book.critique("q", 1, own, peers, max_chars=200_000) == book.critique("q", 1, own, peers)


def test_the_default_bound_cuts_a_large_teams_prompts_in_a_debate() -> None:
    ports = agents(4, solution="y" * 80_000)
    config = scripted_config(ports)
    assert config.debate.max_prompt_chars == 200_000
    result = run_debate("q", config, rounds=1, agents=ports)
    sent = [call.prompt for port in ports.values() for call in port.calls[1:]]
    assert sent and all(len(p) <= 200_000 for p in sent)
    assert all(t.truncated_prompt for t in result.transcript[1].agents.values())


def test_config_check_notes_a_large_teams_prompt_bound_and_waves() -> None:
    config = scripted_config([f"a{i:02d}" for i in range(64)])
    notes = team_notes(config)
    assert notes == [
        "64 agents, topology all_to_all: a critique prompt shows up to 63 peers' answers and is "
        "bounded by debate.max_prompt_chars (200,000 characters): past it the peers' answers "
        "share the room, about 3,125 characters each when all are long",
        "64 agents and budget.max_concurrent_agents is 16: each round runs in 4 waves "
        "(raise max_concurrent_agents to start them all at once)",
    ]
    assert team_notes(scripted_config(["a", "b", "c"])) == []
    unbounded = scripted_config([f"a{i}" for i in range(8)], debate={"max_prompt_chars": None})
    assert "nothing bounds it" in team_notes(unbounded)[0]
