"""How fast the Free-MAD decision rule scores a trajectory: ScoreBoard plus select_winner.

Synthetic trajectories of 10,000 agent-rounds (100 agents x 100 rounds, 1,000 x 10 and
10 x 1,000), where each agent in each critique round switches to another answer with a given
probability, seeded. The moves are built once, outside the timing; each repeat scores them on
a fresh board and picks the winner. Best of --repeat. Target: under 50 ms.

Two ways of feeding the board are timed: all moves at once (`score_moves`), and round by round
with a score snapshot after each round, as the debate runtime does. The explainer replay (what
the transcript's score_explainers come from) is timed separately, as is building the moves.

Run: .venv/bin/python benchmarks/scoring_speed.py [--repeat 7] [--switch 0.2] [--answers 12]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from typing import Any

from _common import emit, machine

from freemad.core.scoring import Move, ScoreBoard, Weights, score_moves, select_winner

TARGET_MS = 50
SHAPES = ((100, 100), (1_000, 10), (10, 1_000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--switch", type=float, default=0.2, help="chance an agent switches")
    parser.add_argument("--answers", type=int, default=12, help="distinct answers in play")
    parser.add_argument("--seed", type=int, default=427)
    args = parser.parse_args()
    results = {
        f"{agents}x{rounds}": measure_shape(agents, rounds, args) for agents, rounds in SHAPES
    }
    worst = max(
        max(r["score_all_at_once_ms"], r["score_round_by_round_ms"]) for r in results.values()
    )
    figures: dict[str, Any] = {
        "benchmark": "scoring_speed",
        "machine": machine(),
        "repeat": args.repeat,
        "switch_probability": args.switch,
        "answers_in_play": args.answers,
        "shapes": results,
        "worst_score_ms": worst,
        "target_ms": TARGET_MS,
        "meets_target": worst < TARGET_MS,
    }
    emit(figures)


def measure_shape(agents: int, rounds: int, args: argparse.Namespace) -> dict[str, Any]:
    shape = (agents, rounds, args.switch, args.answers)
    build_ms = best_ms(args.repeat, trajectory, random.Random(args.seed), *shape)
    moves = trajectory(random.Random(args.seed), *shape)
    by_round = [moves[r * agents : (r + 1) * agents] for r in range(rounds)]
    return {
        "agent_rounds": len(moves),
        "switches": sum(m.previous is not None and m.answer != m.previous for m in moves),
        "score_all_at_once_ms": best_ms(args.repeat, decide, moves),
        "score_round_by_round_ms": best_ms(args.repeat, decide_by_round, by_round),
        "explainers_replay_ms": best_ms(args.repeat, explain, moves),
        "build_moves_ms": build_ms,
    }


def trajectory(
    rng: random.Random, agents: int, rounds: int, switch: float, answers: int
) -> list[Move]:
    """Round 0 proposals, then each round every agent keeps or, with `switch` odds, moves."""
    pool = [f"ans-{i:04d}" for i in range(answers)]
    ids = [f"agent-{i:04d}" for i in range(agents)]
    holding = {agent: rng.choice(pool) for agent in ids}
    moves = [Move(0, agent, holding[agent]) for agent in ids]
    for round_no in range(1, rounds):
        for agent in ids:
            previous = holding[agent]
            if rng.random() < switch:
                holding[agent] = rng.choice([a for a in pool if a != previous])
            moves.append(Move(round_no, agent, holding[agent], previous))
    return moves


def decide(moves: list[Move]) -> str:
    board = score_moves(moves, Weights())
    return select_winner(board.raw, board.order)[0]


def decide_by_round(by_round: list[list[Move]]) -> str:
    board = ScoreBoard(Weights())
    for moves in by_round:
        board.apply_all(moves)
        _snapshot = dict(board.raw)  # the runtime stores each round's scores
    return select_winner(board.raw, board.order)[0]


def explain(moves: list[Move]) -> int:
    return len(score_moves(moves).explainers)


def best_ms(repeat: int, action: Callable[..., object], *args: Any) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        action(*args)
        best = min(best, time.perf_counter() - started)
    return round(best * 1000, 3)


if __name__ == "__main__":
    main()
