"""A debate's clock and budgets: when a round's deadlines fall, when the whole run's time or
token budget is spent, and how an early stop is said. Pure arithmetic over the config."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from freemad.config.models import FreemadConfig

log = logging.getLogger(__name__)

# A round cut short by the total time budget: its stragglers are stopped as at a hard deadline.
BUDGET_CUT = "budget"


@dataclass
class Deadlines:
    soft_at: float
    hard_at: float
    budget_at: float | None = None  # when budget.max_total_time_sec runs out


def round_deadlines(config: FreemadConfig, run_started: float, round_started: float) -> Deadlines:
    """A round's soft and hard deadlines, on the loop's clock: the config's, each cut by the
    round's and the run's time budget."""
    deadlines, budget = config.deadlines, config.budget
    hard_at = round_started + deadlines.hard_timeout_ms / 1000
    if budget.max_round_time_sec is not None:
        hard_at = min(hard_at, round_started + budget.max_round_time_sec)
    budget_at = None
    if budget.max_total_time_sec is not None:
        budget_at = run_started + budget.max_total_time_sec
        hard_at = min(hard_at, budget_at)
    soft_at = min(round_started + deadlines.soft_timeout_ms / 1000, hard_at)
    return Deadlines(soft_at, hard_at, budget_at)


def budget_exhausted(config: FreemadConfig, elapsed: float, tokens_used: int) -> str | None:
    """The budget the run has spent, by its key, after `elapsed` seconds and `tokens_used`."""
    budget = config.budget
    if budget.max_total_time_sec is not None and elapsed >= budget.max_total_time_sec:
        return "max_total_time_sec"
    if budget.max_total_tokens is not None and tokens_used >= budget.max_total_tokens:
        if budget.enforce_total_tokens:
            return "max_total_tokens"
        log.warning(
            "token budget exceeded (%d >= %d), not enforced", tokens_used, budget.max_total_tokens
        )
    return None


def early_stop_note(config: FreemadConfig, reason: str, when: str, rounds_done: int) -> str:
    """An early stop in words: which budget, when, and what the winner is chosen over."""
    budget = config.budget
    limit = (
        f"budget.max_total_time_sec ({budget.max_total_time_sec:g}s) ran out"
        if reason == "max_total_time_sec"
        else f"budget.max_total_tokens ({budget.max_total_tokens}) was spent"
    )
    return f"{limit} {when}; the winner is chosen over the {rounds_done} round(s) that happened"
