"""How big the critique prompts get: they should grow with k (peers shown), not with n (agents).

Builds every agent's round-1 critique prompt through the runtime's own path: peers from
`assign_peers`, anonymous labels from `peer_labels`, text from `PromptBook.critique`, with
synthetic answers of a fixed size. No agent is run. Sizes are characters and the runtime's own
token estimate (`estimate_tokens`, about four characters a token). all_to_all is shown beside
k_reviewers for contrast: its prompts grow with n. `bounded_by_default` shows what
`debate.max_prompt_chars` (the default bound) does to all_to_all teams of 4 to 128 agents at 2.5 KB
and 100 KB answers: the largest prompt and a round's total, unbounded (before) and bounded (after).
`code_answers` times a round of 16 agents whose 100 KB answers are code (a `<` on every line).

Run: .venv/bin/python benchmarks/prompt_growth.py [--solution-chars 2000] [--reasoning-chars 500]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from typing import Any

from _common import emit, machine

from freemad.config.models import MAX_PROMPT_CHARS
from freemad.core.topology import TopologyKind, assign_peers, peer_labels
from freemad.debate.prompts import PromptBook, ShownAnswer, estimate_tokens

REQUIREMENT = "Write a function that returns the n-th Fibonacci number, with tests. " * 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solution-chars", type=int, default=2000)
    parser.add_argument("--reasoning-chars", type=int, default=500)
    args = parser.parse_args()
    book = PromptBook("anti_conformity")
    size = (args.solution_chars, args.reasoning_chars)
    by_k = {
        f"n=64,k={k}": measure(book, 64, TopologyKind.K_REVIEWERS, k, size) for k in (1, 2, 3, 4, 8)
    }
    by_n = {
        f"n={n},k=3": measure(book, n, TopologyKind.K_REVIEWERS, 3, size) for n in (16, 64, 256)
    }
    all_to_all = {
        f"n={n},all_to_all": measure(book, n, TopologyKind.ALL_TO_ALL, None, size)
        for n in (4, 16, 64)
    }
    ks = [(k, by_k[f"n=64,k={k}"]["chars"]["median"]) for k in (1, 2, 3, 4, 8)]
    per_peer = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in itertools.pairwise(ks)]
    figures: dict[str, Any] = {
        "benchmark": "prompt_growth",
        "machine": machine(),
        "answer_size": {
            "requirement_chars": len(REQUIREMENT),
            "solution_chars": args.solution_chars,
            "reasoning_chars": args.reasoning_chars,
        },
        "k_reviewers_by_k": by_k,
        "k_reviewers_by_n": by_n,
        "all_to_all_by_n": all_to_all,
        "chars_per_extra_peer": sorted({round(p) for p in per_peer}),
        "chars_without_peers": round(ks[0][1] - per_peer[0] * ks[0][0]),
        "grows_with_n_at_fixed_k": len({v["chars"]["max"] for v in by_n.values()}) > 1,
        "bounded_by_default": bounded(book),
        "code_answers": code_answers(book),
    }
    emit(figures)


def measure(
    book: PromptBook,
    n: int,
    kind: TopologyKind,
    k: int | None,
    size: tuple[int, int],
    max_chars: int | None = None,
    code: bool = False,
) -> dict[str, Any]:
    """Every agent's critique prompt for one topology: sizes, and how long rendering took."""
    ids = [f"agent-{i:03d}" for i in range(n)]
    answers = {agent: synthetic_answer(agent, *size, code=code) for agent in ids}
    peers = assign_peers(ids, kind, k=k, seed=427)
    chars, tokens, peers_shown = [], [], []
    started = time.perf_counter()
    for agent in ids:
        # As the runtime's _critique_prompt does: labels hide ids, own answer shown as "you".
        labels = peer_labels(peers[agent])
        shown = [ShownAnswer(labels[p], *answers[p]) for p in peers[agent]]
        own = ShownAnswer("you", *answers[agent])
        prompt, _cut = book.critique(REQUIREMENT, 1, own, shown, None, max_chars)
        chars.append(len(prompt))
        tokens.append(estimate_tokens(prompt))
        peers_shown.append(len(shown))
    elapsed = time.perf_counter() - started
    return {
        "agents": n,
        "peers_shown": sorted(set(peers_shown)),
        "chars": stats(chars),
        "total_chars": sum(chars),
        "estimated_tokens": stats(tokens),
        "render_ms_per_prompt": round(elapsed * 1000 / n, 3),
    }


def bounded(book: PromptBook) -> dict[str, Any]:
    """all_to_all critique prompts without a bound and with debate.max_prompt_chars's default."""
    figures: dict[str, Any] = {"max_prompt_chars": MAX_PROMPT_CHARS}
    for answer_chars in (2_500, 100_000):
        size = (answer_chars - 500, 500)
        for n in (4, 16, 64, 128):
            if answer_chars == 100_000 and n > 16:
                continue  # 127 x 100 KB per prompt unbounded: 1.6 GB a round, not worth building
            before = measure(book, n, TopologyKind.ALL_TO_ALL, None, size)
            after = measure(book, n, TopologyKind.ALL_TO_ALL, None, size, MAX_PROMPT_CHARS)
            figures[f"answer={answer_chars},n={n}"] = {
                "largest_prompt_chars": {
                    "before": before["chars"]["max"],
                    "after": after["chars"]["max"],
                },
                "round_total_chars": {
                    "before": before["total_chars"],
                    "after": after["total_chars"],
                },
                "render_ms_per_prompt": {
                    "before": before["render_ms_per_prompt"],
                    "after": after["render_ms_per_prompt"],
                },
            }
    return figures


def code_answers(book: PromptBook) -> dict[str, Any]:
    """all_to_all at 16 agents with 100 KB answers that are code: a `<` on every line, so each
    answer is searched for fence tags to defang (a round's answers once, not once per prompt)."""
    size, n = (99_500, 500), 16
    figures = measure(book, n, TopologyKind.ALL_TO_ALL, None, size, MAX_PROMPT_CHARS, code=True)
    return {"answer_chars": sum(size), "agents": n, **figures}


def synthetic_answer(
    agent: str, solution_chars: int, reasoning_chars: int, code: bool = False
) -> tuple[str, str]:
    """Distinct text of exactly the given sizes (so no two agents' answers coincide)."""
    line = (
        f"    if {agent.replace('-', '_')}[i] < limit: i += 1\n"
        if code
        else f"# {agent}: answer text padding to a fixed size.\n"
    )
    solution = (line * (solution_chars // len(line) + 1))[:solution_chars]
    reasoning = (f"{agent} reasons. " * (reasoning_chars // 10 + 1))[:reasoning_chars]
    return solution, reasoning


def stats(values: list[int]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


if __name__ == "__main__":
    main()
