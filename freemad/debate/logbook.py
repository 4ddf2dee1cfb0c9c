"""A debate's log lines, from its events: each round's start (with its deadlines) and end, each
agent's turn, early stops and the decision. INFO says what happened; DEBUG adds the detail."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from freemad.core.run_events import Event

log = logging.getLogger("freemad.debate")


def log_event(event: Event) -> None:
    """An EventSink: one line per event worth a line (the agent's own command line is logged by
    the agent adapter)."""
    if not log.isEnabledFor(logging.INFO):
        return
    shown = _LINES.get(event.kind)
    if shown is not None:
        level, text = shown(event.data)
        log.log(level, "debate %s: %s", event.run_id[:12], text)


def _run_started(d: Mapping[str, Any]) -> tuple[int, str]:
    return logging.INFO, f"{len(d['agents'])} agent(s), {d['rounds']} critique round(s)"


def _round_started(d: Mapping[str, Any]) -> tuple[int, str]:
    deadlines = ""
    if "soft_deadline_sec" in d:
        deadlines = (
            f"; soft deadline in {d['soft_deadline_sec']:g}s, "
            f"hard deadline in {d['hard_deadline_sec']:g}s"
        )
    agents = ", ".join(d["agents"])
    return logging.INFO, f"round {d['round']} ({d['type']}) starts: {agents}{deadlines}"


def _agent_started(d: Mapping[str, Any]) -> tuple[int, str]:
    return logging.DEBUG, f"round {d['round']}: {d['agent']} starts ({d.get('mode')})"


def _agent_finished(d: Mapping[str, Any]) -> tuple[int, str]:
    seconds = f" in {d['duration_ms'] / 1000:.1f}s" if "duration_ms" in d else ""
    cause = f": {d.get('cause')}: {d.get('detail')}" if d["status"] != "ok" else ""
    return logging.DEBUG, f"round {d['round']}: {d['agent']} {d['status']}{seconds}{cause}"


def _round_finished(d: Mapping[str, Any]) -> tuple[int, str]:
    cut = [name for name in ("soft", "hard") if d.get(f"deadline_hit_{name}")]
    deadline = f"; cut at the {cut[0]} deadline" if cut else ""
    return logging.INFO, f"round {d['round']} ends; scores {_scores(d.get('scores'))}{deadline}"


def _early_stop(d: Mapping[str, Any]) -> tuple[int, str]:
    return logging.INFO, f"stops early before round {d.get('before_round')}: {d['reason']}"


def _run_finished(d: Mapping[str, Any]) -> tuple[int, str]:
    if d.get("final_answer_id") is None:
        return logging.INFO, f"ends {d['status']} with no winner: {d.get('error')}"
    held = ", ".join(d.get("winning_agents") or [])
    score = d.get("score")
    shown = f" (score {score:.2f})" if isinstance(score, (int, float)) else ""
    return logging.INFO, (
        f"decision: {d['final_answer_id']}{shown}, held by {held}; "
        f"scores {_scores(d.get('scores'))}"
    )


def _scores(scores: Any) -> str:
    if not isinstance(scores, Mapping) or not scores:
        return "none"
    ranked = sorted(scores.items(), key=lambda item: -float(item[1]))
    return ", ".join(f"{answer}={float(value):.2f}" for answer, value in ranked)


_LINES = {
    "run_started": _run_started,
    "round_started": _round_started,
    "agent_started": _agent_started,
    "agent_finished": _agent_finished,
    "round_finished": _round_finished,
    "early_stop": _early_stop,
    "run_finished": _run_finished,
}
