"""Agents that are one agent several times: configured alike (the same program, model and
options) and answering byte for byte alike in round 0. Such a debate hears one voice; the
result says so (a local model run three times with its default seed does exactly this)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence

from freemad.config.models import AgentConfig
from freemad.debate.debate_record import Flag, RoundRecord

# What names an agent, or what it does in tasks, not what it answers with.
_NOT_THE_MODEL = {"id", "roles", "capabilities", "enabled", "pricing", "timeout"}


def clone_flags(agents: Sequence[AgentConfig], first: RoundRecord) -> list[Flag]:
    """A warning for each group of two or more agents configured alike whose round-0 answers
    (`first`) are all the same text."""
    alike: dict[str, list[str]] = defaultdict(list)
    for agent in agents:
        key = json.dumps(agent.model_dump(mode="json", exclude=_NOT_THE_MODEL), sort_keys=True)
        alike[key].append(agent.id)
    flags = []
    for ids in alike.values():
        turns = [first.agents[a] for a in ids if a in first.agents]
        answered = [t for t in turns if t.status == "ok" and t.response is not None]
        texts = {t.response.solution for t in answered if t.response is not None}
        if len(answered) < 2 or len(texts) != 1:
            continue
        names = ", ".join(t.agent_id for t in answered)
        flags.append(
            Flag(
                kind="same_answers",
                answer_id=answered[0].answer_id or "",
                message=(
                    f"{names} run one model with the same options and gave the same answer, "
                    f"byte for byte, in round 0: the debate heard one voice {len(answered)} "
                    "times; give each agent its own config.seed or config.temperature "
                    "(docs/agents.md)"
                ),
            )
        )
    return flags
