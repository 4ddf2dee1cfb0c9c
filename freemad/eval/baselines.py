"""The baselines that cost calls beyond the debate's: self-consistency (one agent sampled N times,
its first sample the debate's own round-0 answer, so N - 1 extra calls) and a judge (one agent
picks among the final round's answers: one extra call, none when the agents agree).

Each extra call is a round-0 "debate" of copies of one agent, so it runs through the same agent
adapter, deadlines, budgets and transcript as any debate.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from freemad.config.models import FreemadConfig
from freemad.eval.methods import Normalize, Trajectory

JUDGE_PROMPT = (
    "{question}\n\nSeveral answers to the question above were given. Pick the one that is "
    "correct. Reply with its number alone as your solution.\n\n{candidates}"
)
_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True)
class Baselines:
    """What to run beside the debate: `samples` for self-consistency (0: none) by `sampler`, and
    the `judge` agent's id (None: none)."""

    samples: int = 0
    sampler: str | None = None
    judge: str | None = None

    def header(self) -> dict[str, Any]:
        return {"self_consistency": self.samples, "sampler": self.sampler, "judge": self.judge}


def copies_config(config: FreemadConfig, agent_id: str, copies: int, tag: str) -> FreemadConfig:
    """`config` with `copies` of one agent as its only agents (ids `agent.tag1`, ...), no
    finalizer and a quorum of one: for round-0 calls of that agent alone."""
    data = config.model_dump(mode="json")
    (agent,) = [a for a in data["agents"] if a["id"] == agent_id]
    data["agents"] = [{**agent, "id": f"{agent_id}.{tag}{k}"} for k in range(1, copies + 1)]
    data["debate"]["finalizer"] = None
    data["deadlines"]["min_agents"] = 1
    return FreemadConfig.model_validate(data)


def self_consistency(samples: Sequence[str | None], normalize: Normalize) -> str | None:
    """The normal form most samples gave; a tie goes to the earliest sample's."""
    forms = [form for form in (normalize(text) for text in samples) if form is not None]
    if not forms:
        return None
    votes = Counter(forms)
    return min(votes, key=lambda form: (-votes[form], forms.index(form)))


def candidates(path: Trajectory, normalize: Normalize) -> list[tuple[str, str]]:
    """The distinct final-round answers (normal form, the first agent-by-id's text for it), in
    agent-id order."""
    final = path.held[-1] if path.held else {}
    found: dict[str, str] = {}
    for agent in sorted(final):
        form = normalize(final[agent])
        if form is not None and form not in found:
            found[form] = final[agent]
    return list(found.items())


def judge_prompt(question: str, options: Sequence[tuple[str, str]]) -> str:
    listed = "\n\n".join(f"Answer {k}:\n{text.strip()}" for k, (_, text) in enumerate(options, 1))
    return JUDGE_PROMPT.format(question=question.strip(), candidates=listed)


def judge_pick(
    reply: str | None, options: Sequence[tuple[str, str]], normalize: Normalize
) -> str | None:
    """The candidate the judge chose: the first number in its reply naming one, else the
    candidate whose normal form its reply has; None when neither."""
    if reply is None:
        return None
    for number in _NUMBER.findall(reply):
        if 1 <= int(number) <= len(options):
            return options[int(number) - 1][0]
    said = normalize(reply)
    return next((form for form, _ in options if form == said), None)
