"""How big a transcript is against the distinct answers it holds: format 1 (every answer repeated)
beside format 2 (each distinct answer text once, rounds referring to it by id).

In-process agents (no subprocess: sizes do not depend on timing) each propose an answer of their
own of ANSWER bytes and keep it for every critique round, or, with --revise, switch to agent 0's
answer in the first critique round. Sizes are of the JSON file `write_transcript` writes
(indent 2); the figure is its ratio to the distinct answers' bytes. Target: under 2x at 16
agents keeping 20 KB answers. Deterministic: one run is enough.

Run: .venv/bin/python benchmarks/debate_transcript_size.py
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from _common import emit, machine

from freemad.agents.agent_port import CallRequest, CallResult, CallStatus, Mode
from freemad.config import parse_config
from freemad.debate import DebateResult, run_debate
from freemad.debate.transcript import transcript_data
from freemad.redact import Redactor

TARGET_RATIO = 2.0


@dataclass
class KeepingAgent:
    """Proposes its own answer, then keeps it (or revises to `switch_to` in round 1)."""

    solution: str
    switch_to: str | None = None
    critiques: list[int] = field(default_factory=list)

    async def call(self, request: CallRequest) -> CallResult:
        if request.mode is Mode.GENERATE:
            return CallResult(CallStatus.OK, f"SOLUTION:\n{self.solution}\n\nREASONING:\nmine\n")
        self.critiques.append(1)
        if self.switch_to is not None and len(self.critiques) == 1:
            text = f"DECISION: REVISE\n\nREVISED_SOLUTION:\n{self.switch_to}\n\nREASONING:\nyes\n"
            return CallResult(CallStatus.OK, text)
        return CallResult(CallStatus.OK, "DECISION: KEEP\n\nREASONING:\nmine stands\n")


def answer(agent: int, size: int) -> str:
    line = f"# answer of agent {agent:02d}, padded to a fixed size. "
    return (line * (size // len(line) + 1))[:size]


def measure(agents: int, size: int, rounds: int, revise: bool) -> dict[str, Any]:
    texts = [answer(i, size) for i in range(agents)]
    ports = {
        f"a{i:02d}": KeepingAgent(texts[i], texts[0] if revise and i else None)
        for i in range(agents)
    }
    lines = ["agents:"] + [f"  - {{id: {name}, cli_command: scripted}}" for name in ports]
    lines += [f"budget: {{max_concurrent_agents: {agents}}}", "output: {save_transcript: false}"]
    lines += ["security: {cli_allowed_commands: [scripted]}"]
    config = parse_config("\n".join(lines) + "\n", name="size.yaml")
    result = run_debate("q", config, rounds=rounds, agents=ports)
    distinct = sum(len(t.encode()) for t in texts)
    old = json.dumps(transcript_data(result, Redactor([]), compacted=False), indent=2).encode()
    new_data = transcript_data(result, Redactor([]))
    new = json.dumps(new_data, indent=2).encode()
    assert DebateResult.model_validate(new_data).transcript == result.transcript
    return {
        "distinct_answer_bytes": distinct,
        "format_1_bytes": len(old),
        "format_2_bytes": len(new),
        "format_1_ratio": round(len(old) / distinct, 2),
        "format_2_ratio": round(len(new) / distinct, 2),
        "meets_target": len(new) / distinct < TARGET_RATIO,
    }


def main() -> None:
    cases = {
        "16 agents keep 20 KB, 3 rounds": (16, 20_000, 2, False),
        "16 agents keep 100 KB, 3 rounds": (16, 100_000, 2, False),
        "16 agents keep 20 KB, 6 rounds": (16, 20_000, 5, False),
        "64 agents keep 20 KB, 3 rounds": (64, 20_000, 2, False),
        "16 agents, 15 switch to agent 0's 20 KB answer, 3 rounds": (16, 20_000, 2, True),
    }
    emit(
        {
            "benchmark": "debate_transcript_size",
            "machine": machine(),
            "target_ratio": TARGET_RATIO,
            "cases": {name: measure(*case) for name, case in cases.items()},
        }
    )


if __name__ == "__main__":
    main()
