"""Real agent processes that misbehave: the debate goes on while a quorum stands, and nothing leaks."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import pytest

from freemad.debate import run_debate
from freemad.wiring import ADAPTERS
from tests.conftest import make_config, mock_agent

# The hung agents below sleep for an hour; the run must end long before that.
FAR_BELOW_AN_HOUR = 120


def faulty_debate(fault: str, *extra: str, hard_ms: int = 3_000, **sections):
    config = make_config(
        [
            mock_agent("good-a", "--persona", "iterative"),
            mock_agent("good-b", "--persona", "recursive"),
            mock_agent("faulty", "--fault", fault, *extra),
        ],
        deadlines={"soft_timeout_ms": hard_ms // 2, "hard_timeout_ms": hard_ms, "min_agents": 2},
        **sections,
    )
    started = time.monotonic()
    result = run_debate(
        "Write a function that returns Fibonacci(n).", config, rounds=1, adapters=ADAPTERS
    )
    return result, time.monotonic() - started


@pytest.mark.parametrize(
    ("fault", "cause"),
    [
        ("crash", "exit_error"),
        ("garbage", "unparseable"),
        ("not-logged-in", "not_logged_in"),
        ("flood", "output_too_large"),
    ],
)
def test_a_faulty_agent_is_recorded_and_the_debate_goes_on(fault: str, cause: str) -> None:
    result, _ = faulty_debate(fault)
    assert result.status == "completed"
    turn = result.transcript[0].agents["faulty"]
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.cause == cause
    assert set(result.origin_agents) == {
        a for t in result.transcript[0].agents.values() if (a := t.answer_id)
    }
    assert all("faulty" not in agents for agents in result.origin_agents.values())


def test_invalid_utf8_is_decoded_with_replacements_not_a_crash() -> None:
    result, _ = faulty_debate("invalid-utf8")
    turn = result.transcript[0].agents["faulty"]
    assert turn.status == "ok"
    assert turn.response is not None and "\ufffd" in turn.response.solution


def test_garbage_then_a_proper_reply_after_the_clarification() -> None:
    result, _ = faulty_debate("garbage-then-ok", "--fault-in", "generate")
    turn = result.transcript[0].agents["faulty"]
    assert turn.status == "ok" and turn.attempts == 2


@pytest.mark.parametrize("mode", ["generate", "critique"])
def test_a_hung_agent_is_cut_at_the_hard_deadline_and_killed(mode: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    os.environ["FREEMAD_MOCK_PIDFILE"] = str(pidfile)
    try:
        result, elapsed = faulty_debate("spawn-child", "--fault-in", mode)
    finally:
        del os.environ["FREEMAD_MOCK_PIDFILE"]
    round_no = 0 if mode == "generate" else 1
    turn = result.transcript[round_no].agents["faulty"]
    assert turn.status in {"cut", "failed"}
    assert turn.error is not None and turn.error.cause in {
        "deadline_soft",
        "deadline_hard",
        "timeout",
    }
    assert result.status == "completed"
    assert elapsed < FAR_BELOW_AN_HOUR
    if mode == "critique":
        assert turn.action == "carried_forward"
    children = [int(p) for p in pidfile.read_text().split()]
    assert children, "the mock agent should have recorded its grandchild"
    assert _still_alive(children) == [], "the agent's grandchild outlived the run"


def test_an_agent_timeout_is_the_smallest_limit_that_applies() -> None:
    config = make_config(
        [
            mock_agent("good-a"),
            mock_agent("good-b", "--persona", "recursive"),
            mock_agent("slow", "--fault", "hang"),
        ],
        deadlines={"soft_timeout_ms": 60_000, "hard_timeout_ms": 120_000, "min_agents": 2},
        budget={"max_agent_time_sec": 1.0},
    )
    started = time.monotonic()
    result = run_debate("Fibonacci please", config, rounds=0, adapters=ADAPTERS)
    turn = result.transcript[0].agents["slow"]
    assert turn.error is not None and turn.error.cause == "timeout"
    assert "within 1.0s" in turn.error.detail
    assert time.monotonic() - started < FAR_BELOW_AN_HOUR


def test_when_too_few_answer_the_run_fails_and_says_why() -> None:
    config = make_config(
        [mock_agent("a", "--fault", "crash"), mock_agent("b", "--fault", "crash"), mock_agent("c")],
        deadlines={"min_agents": 2},
    )
    result = run_debate("anything", config, rounds=1, adapters=ADAPTERS)
    assert result.status == "failed"
    assert "only 1 of 3 agents answered in round 0" in (result.error or "")
    assert len(result.transcript) == 1


def test_a_missing_program_is_a_spawn_error() -> None:
    config = make_config(
        [mock_agent("a"), mock_agent("b"), {"id": "ghost", "cli_command": "/nonexistent/agent"}],
        deadlines={"min_agents": 2},
    )
    result = run_debate("anything", config, rounds=0, adapters=ADAPTERS)
    turn = result.transcript[0].agents["ghost"]
    assert turn.error is not None and turn.error.cause == "spawn_error"
    assert "/nonexistent/agent" in turn.error.detail


def _still_alive(pids: list[int], grace: float = 10.0) -> list[int]:
    """The pids still running once `grace` seconds have passed (or none is left sooner): a kill
    is sent before the run returns, and a loaded machine may take a moment to carry it out."""
    deadline = time.monotonic() + grace
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if _alive(pid)]


def _alive(pid: int) -> bool:
    # Reap it if it is our zombie child; then ask the kernel.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")
