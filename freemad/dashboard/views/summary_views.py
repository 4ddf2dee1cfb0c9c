"""Transcript summaries: per agent across runs and per config, with charts, as view data for
`summary.html` (the live dashboard and the static site). Pure: no I/O.

Everything is added up from the runs' records (`freemad.dashboard.views.agent_views.run_record`).

- Per agent: the debates it took part in and won, its critique turns that kept its answer or
  revised it, its time and tokens per call, and its failures by kind (in every kind of run).
- Per config (a debate's `config_digest`: the config it ran with, overrides included): its
  debates, how they ended, their calls, time, tokens and failures, and which agents won them.
 The charts are the evaluation page's
rate chart (`eval_views.eval_chart_svg`): a share with its 95% Wilson interval.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from freemad.dashboard.views.agent_views import agents_table
from freemad.dashboard.views.eval_views import eval_chart_svg, percent, score_row
from freemad.dashboard.views.viewdata import as_list, as_map, as_number, as_text, number
from freemad.eval.accuracy_report import score


def summary_view(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The summaries of every run's record: `agents`, `configs` and their `charts`."""
    records = list(records)
    agents = [_agent(row) for row in agents_table(records)]
    configs = _configs(r for r in records if as_text(r.get("kind")) == "debate")
    return {"agents": agents, "configs": configs, "charts": _charts(agents, configs)}


def _agent(row: Mapping[str, Any]) -> dict[str, Any]:
    debate = row["debate"]
    turns = debate["kept"] + debate["switches"]
    return {
        "name": row["name"],
        "slug": row["slug"],
        "runs": sum(row[kind]["runs"] for kind in ("debate", "task", "evolve")),
        "debates": debate["runs"],
        "won": debate["won"],
        "won_share": percent(debate["won"] / debate["runs"]) if debate["runs"] else "-",
        "kept": debate["kept"],
        "revised": debate["switches"],
        "kept_share": percent(debate["kept"] / turns) if turns else "-",
        "calls": row["calls"],
        "mean_ms": row["mean_ms"],
        "mean_tokens": row["mean_tokens"],
        "tokens_total": row["tokens_total"],
        "estimated": row["estimated"],
        "failures": row["failures"],
        "causes": row["causes"],
    }


def _configs(debates: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for record in debates:
        config = as_map(record.get("config"))
        digest = as_text(config.get("digest")) or "unknown"
        if digest not in groups:
            groups[digest] = {"digest": digest, "debates": 0, "statuses": {}, "agents": []}
            groups[digest].update(rounds=set(), wins={}, calls=0, failures={})
            groups[digest].update(durations=[], tokens=[])
        _add_debate(groups[digest], record, config)
    return [
        _config_row(groups[d]) for d in sorted(groups, key=lambda d: (-groups[d]["debates"], d))
    ]


def _add_debate(
    group: dict[str, Any], record: Mapping[str, Any], config: Mapping[str, Any]
) -> None:
    """One debate's record added to its config's group."""
    group["debates"] += 1
    _tally(group["statuses"], as_text(record.get("status")) or "unknown", 1)
    rounds = as_number(config.get("rounds"))
    if rounds is not None:
        group["rounds"].add(int(rounds))
    for name in as_list(config.get("agents")):
        if str(name) not in group["agents"]:
            group["agents"].append(str(name))
    for name, given in as_map(record.get("agents")).items():
        did = as_map(given)
        if did.get("proposed") is True or did.get("held") is True:
            _tally(group["wins"], str(name), 1)
        group["calls"] += int(as_number(did.get("calls")) or 0)
        for cause, n in as_map(did.get("failures")).items():
            _tally(group["failures"], str(cause), int(as_number(n) or 0))
        group["durations"] += [
            d for d in map(as_number, as_list(did.get("durations"))) if d is not None
        ]
        group["tokens"] += [n for n in map(as_number, as_list(did.get("tokens"))) if n is not None]


def _tally(counts: dict[str, int], key: str, n: int) -> None:
    counts[key] = counts.get(key, 0) + n


def _config_row(group: dict[str, Any]) -> dict[str, Any]:
    durations, tokens = group["durations"], group["tokens"]
    by_count = sorted(group["wins"].items(), key=lambda item: (-item[1], item[0]))
    return {
        "digest": group["digest"],
        "debates": group["debates"],
        "completed": group["statuses"].get("completed", 0),
        "statuses": sorted(group["statuses"].items()),
        "agents": group["agents"],
        "rounds": ", ".join(str(r) for r in sorted(group["rounds"])) or "-",
        "wins": by_count,
        "calls": group["calls"],
        "failures": sum(group["failures"].values()),
        "causes": sorted(group["failures"].items(), key=lambda item: (-item[1], item[0])),
        "mean_ms": number(statistics.fmean(durations)) if durations else "-",
        "mean_tokens": number(statistics.fmean(tokens)) if tokens else "-",
        "tokens_total": number(sum(tokens)) if tokens else "-",
    }


def _charts(agents: list[dict[str, Any]], configs: list[dict[str, Any]]) -> dict[str, str]:
    won = [
        score_row(a["name"], a["name"], score(a["won"], a["debates"]))
        for a in agents
        if a["debates"]
    ]
    kept = [
        score_row(a["name"], a["name"], score(a["kept"], a["kept"] + a["revised"]))
        for a in agents
        if a["kept"] + a["revised"]
    ]
    completed = [
        score_row(c["digest"], c["digest"], score(c["completed"], c["debates"])) for c in configs
    ]
    charts = {}
    if won:
        charts["won"] = eval_chart_svg(
            won,
            title="Share of its debates each agent won, with its 95% interval",
            caption="debates won (bar) and 95% interval (whisker)",
            chart_id="won-chart",
        )
    if kept:
        charts["kept"] = eval_chart_svg(
            kept,
            title="Share of its critique turns each agent kept its answer, with its 95% interval",
            caption="turns that kept the answer (bar) and 95% interval (whisker)",
            chart_id="kept-chart",
        )
    if completed:
        charts["completed"] = eval_chart_svg(
            completed,
            title="Share of each config's debates that completed, with its 95% interval",
            caption="debates completed (bar) and 95% interval (whisker)",
            chart_id="config-chart",
        )
    return charts
