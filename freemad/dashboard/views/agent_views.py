"""Agents over time: what each agent did across the runs of every kind, as view data. Pure: no I/O.

`run_record` reads one run (a debate's transcript, a task's or an evolve run's events) into what
each of its agents did in it (small, plain JSON, so a site build can keep it in its manifest);
`agents_table` adds the records of many runs up, one row per agent; `agent_view` is one agent's
page. Definitions (docs/dashboards.md), each counted only from what the run records:

- a debate: it *won* when it proposed the winning answer (the transcript's `origin_agents` of
  the winner) or held it at the end (its last entry in `holders_history`); a *switch* is a
  critique turn it answered with "revise", *to the winner* when the answer it revised to won;
  a failure is a turn whose status is not "ok", by its error's cause; time, tokens and cost are
  the transcript's, per turn (cost per agent, only where a price is configured);
- a task: each `agent_replied` to a work stage is a stage *proposed*, to a review stage
  (plan_review, code_review, verify) a stage *reviewed*, *approved* when its `review_decision`
  is "approve"; the arbiter's replies are stages *arbitrated* (approved likewise); each
  `agent_failed` is a failure by its cause. Task events record no time, tokens or cost;
- an evolve run: each `candidate_proposed` naming the agent is a call; a *candidate* when it is
  ok, a failure by its cause when not; *admitted* when the `candidate_judged` of its iteration
  names the agent and its verdict admitted it. Evolve events record no time per call, tokens or
  cost either.

Agent ids come from configs, transcripts and events: untrusted text. Templates escape them, and
`agent_slug` makes the file name and URL of an agent's page from one.
"""

from __future__ import annotations

import hashlib
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from freemad.core.task_machine import REVIEWS
from freemad.dashboard.run_records import RunData
from freemad.dashboard.views.debate_views import agent_names
from freemad.dashboard.views.viewdata import as_list, as_map, as_number, as_text, number

AGENT_SLUG = re.compile(r"[a-z0-9_-]{0,40}-[0-9a-f]{10}")  # what agent_slug makes
RUNS_SHOWN = 500  # an agent's page lists its newest runs up to this many
# What an agent did in a run, by kind: the counts its record keeps and its row adds up.
COUNTS = {
    "debate": ("won", "proposed", "held", "switches", "to_winner", "kept"),
    "task": ("proposed", "reviewed", "approved", "arbitrated", "arbitrated_approved"),
    "evolve": ("candidates", "admitted"),
}


def agent_slug(name: str) -> str:
    """A safe file name (and URL part) for an agent's page: its id's safe characters, lowercased
    and cut, and a digest of the exact id, so two ids never share a page ("A" and "a" included)."""
    readable = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-")[:40]
    return f"{readable}-{hashlib.sha256(name.encode('utf-8', 'replace')).hexdigest()[:10]}"


def run_record(data: RunData, started: float) -> dict[str, Any]:
    """What each agent of one run did in it (plain JSON); a debate in flight has none yet (it is
    counted once its transcript is written), nor has a run of a kind not known here."""
    if data.kind == "debate":
        if data.transcript is None:
            return {}
        return debate_record(data.transcript, data.run_id, started)
    if data.kind == "task":
        agents = _task_agents(data.events)
    elif data.kind == "evolve":
        agents = _evolve_agents(data.events)
    else:
        return {}
    return {
        "kind": data.kind,
        "run_id": data.run_id,
        "started": started,
        "status": data.status or "unknown",
        "agents": agents,
    }


def debate_record(transcript: Mapping[str, Any], run_id: str, started: float) -> dict[str, Any]:
    """What each agent of one debate did in it (plain JSON)."""
    rounds = [as_map(r) for r in as_list(transcript.get("transcript"))]
    winner = as_text(transcript.get("final_answer_id")) or None
    origin = [str(a) for a in as_list(as_map(transcript.get("origin_agents")).get(winner or ""))]
    history = as_list(transcript.get("holders_history"))
    final = as_map(history[-1]) if history else {}
    totals = as_map(transcript.get("agents"))
    names = agent_names(transcript, rounds)
    names += [str(a) for a in totals if str(a) not in names]
    agents = {}
    for name in names:
        turns = [as_map(as_map(r.get("agents")).get(name)) for r in rounds]
        turns = [t for t in turns if t]
        revised = [t for t in turns if t.get("action") == "revise" and t.get("status") == "ok"]
        kept = [t for t in turns if t.get("action") == "keep" and t.get("status") == "ok"]
        failures: dict[str, int] = {}
        for turn in turns:
            if turn.get("status") != "ok":
                cause = as_text(as_map(turn.get("error")).get("cause")) or as_text(
                    turn.get("status")
                )
                _tally(failures, cause)
        tokens = [as_map(t.get("tokens")) for t in turns]
        agents[name] = {
            "proposed": winner is not None and name in origin,
            "held": winner is not None and as_text(final.get(name)) == winner,
            "switches": len(revised),
            "kept": len(kept),
            "to_winner": sum(
                1 for t in revised if winner and as_text(t.get("answer_id")) == winner
            ),
            "failures": failures,
            "calls": len(turns),
            "durations": [d for t in turns if (d := as_number(t.get("duration_ms"))) is not None],
            "tokens": [
                (as_number(t.get("input")) or 0.0) + (as_number(t.get("output")) or 0.0)
                for t in tokens
                if as_number(t.get("input")) is not None or as_number(t.get("output")) is not None
            ],
            "estimated": any(bool(t.get("estimated")) for t in tokens),
            "cost_usd": as_number(as_map(totals.get(name)).get("cost_usd")),
        }
    settings = as_map(transcript.get("settings"))
    return {
        "kind": "debate",
        "run_id": run_id,
        "started": started,
        "status": as_text(transcript.get("status")) or "unknown",
        "winner": winner,
        "agents": agents,
        # Which config it ran with (its digest, with the run's overrides), for the summaries.
        "config": {
            "digest": as_text(transcript.get("config_digest")) or "unknown",
            "rounds": as_number(settings.get("rounds")),
            "agents": [str(a) for a in as_list(settings.get("agents"))] or names,
        },
    }


def _task_agents(events: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each agent a task called: its replies by what the stage asked of it, its failures."""
    agents: dict[str, dict[str, Any]] = {}
    for kind, given in events:
        data = as_map(given)
        name = as_text(data.get("agent"))
        if kind not in ("agent_replied", "agent_failed") or not name:
            continue
        did = agents.setdefault(name, _did("task"))
        did["calls"] += 1
        if kind == "agent_failed":
            _tally(did["failures"], as_text(data.get("cause")))
            continue
        decision = as_text(as_map(data.get("response")).get("review_decision")).lower()
        if as_text(data.get("role")) == "arbiter":
            did["arbitrated"] += 1
            did["arbitrated_approved"] += decision == "approve"
        elif as_text(data.get("stage")) in REVIEWS:
            did["reviewed"] += 1
            did["approved"] += decision == "approve"
        else:
            did["proposed"] += 1
    return agents


def _evolve_agents(events: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each agent an evolve run asked for a candidate: its candidates, admitted or not, and the
    proposals that failed."""
    agents: dict[str, dict[str, Any]] = {}
    for kind, given in events:
        data = as_map(given)
        name = as_text(data.get("agent"))
        if not name:  # the seed's baseline, or a planning debate that chose no plan
            continue
        if kind == "candidate_proposed":
            did = agents.setdefault(name, _did("evolve"))
            did["calls"] += 1
            if data.get("ok") is True:
                did["candidates"] += 1
            else:
                _tally(did["failures"], as_text(data.get("cause")))
        elif kind == "candidate_judged" and as_map(data.get("verdict")).get("admitted") is True:
            agents.setdefault(name, _did("evolve"))["admitted"] += 1
    return agents


def _did(kind: str) -> dict[str, Any]:
    return {"calls": 0, "failures": {}, **dict.fromkeys(COUNTS[kind], 0)}  # task or evolve


def _tally(counts: dict[str, int], cause: str) -> None:
    counts[cause or "unknown"] = counts.get(cause or "unknown", 0) + 1


def agents_table(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per agent over every run's record, by name; each row's `runs` are its runs of
    every kind, newest first."""
    rows: dict[str, dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: -(as_number(r.get("started")) or 0.0)):
        for name, did in as_map(record.get("agents")).items():
            _add(rows.setdefault(str(name), _empty(str(name))), record, as_map(did))
    return [_finish(rows[name]) for name in sorted(rows)]


def agent_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """One agent's page from its row of `agents_table`: its newest runs up to RUNS_SHOWN."""
    return {**row, "runs": list(row["runs"])[:RUNS_SHOWN], "runs_cut": len(row["runs"])}


def _count(value: Any) -> int:
    return int(as_number(value) or 0)


def _add(row: dict[str, Any], record: Mapping[str, Any], did: Mapping[str, Any]) -> None:
    """One run's record of the agent (`did`) added to its row: to the totals of its kind
    (`row[kind]`), its failures, times, tokens and cost, and its list of runs."""
    kind = as_text(record.get("kind")) or "debate"  # a site manifest of before kept debates only
    if kind not in COUNTS:
        return
    counts = {key: _count(did.get(key)) for key in COUNTS[kind]}
    if kind == "debate":
        counts.update(proposed=int(did.get("proposed") is True), held=int(did.get("held") is True))
        counts["won"] = int(bool(counts["proposed"] or counts["held"]))
    failures = {str(cause): _count(n) for cause, n in as_map(did.get("failures")).items()}
    cost = as_number(did.get("cost_usd"))
    run: dict[str, Any] = {
        "kind": kind,
        "run_id": as_text(record.get("run_id")),
        "started": as_number(record.get("started")) or 0.0,
        "status": as_text(record.get("status")),
        "calls": _count(did.get("calls")),
        "failures": sum(failures.values()),
        "cost_usd": number(cost),
        **counts,
    }
    run["did"] = _what_it_did(run)
    totals = row[kind]
    totals["runs"] += 1
    for key in ("calls", *COUNTS[kind]):
        totals[key] += run[key]
    for cause, n in failures.items():
        row["causes"][cause] = row["causes"].get(cause, 0) + n
    row["durations"] += [d for d in map(as_number, as_list(did.get("durations"))) if d is not None]
    row["tokens"] += [n for n in map(as_number, as_list(did.get("tokens"))) if n is not None]
    row["estimated"] = row["estimated"] or bool(did.get("estimated"))
    if cost is not None:
        row["cost"] += cost
        row["priced"] += 1
    row["runs"].append(run)


def _what_it_did(run: Mapping[str, Any]) -> str:
    """One run of the agent in a few words, for its page's list of runs."""
    if run["kind"] == "debate":
        won = {
            (1, 1): "won (proposed and held the winner)",
            (1, 0): "won (proposed the winner)",
            (0, 1): "won (held the winner)",
        }.get((run["proposed"], run["held"]), "did not win")
        switches = _n(run["switches"], "switch", "switches")
        return f"{won}; {switches} ({run['to_winner']} to the winner)"
    if run["kind"] == "task":
        parts = [
            f"proposed {_n(run['proposed'], 'stage')}" if run["proposed"] else "",
            f"reviewed {run['reviewed']} ({run['approved']} approved)" if run["reviewed"] else "",
            f"arbitrated {run['arbitrated']} ({run['arbitrated_approved']} approved)"
            if run["arbitrated"]
            else "",
        ]
        return ", ".join(part for part in parts if part) or "no reply"
    return f"{_n(run['candidates'], 'candidate')}, {run['admitted']} admitted"


def _n(count: int, one: str, many: str = "") -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


def _empty(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "slug": agent_slug(name),
        **{kind: dict.fromkeys(("runs", "calls", *COUNTS[kind]), 0) for kind in COUNTS},
        "causes": {},
        "durations": [],
        "tokens": [],
        "estimated": False,
        "cost": 0.0,
        "priced": 0,
        "runs": [],
    }


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    durations, tokens = row.pop("durations"), row.pop("tokens")
    causes = row.pop("causes")
    return {
        **row,
        "calls": sum(row[kind]["calls"] for kind in COUNTS),
        "failures": sum(causes.values()),
        "causes": sorted(causes.items(), key=lambda item: (-item[1], item[0])),
        "median_ms": number(statistics.median(durations)) if durations else "-",
        "mean_ms": number(statistics.fmean(durations)) if durations else "-",
        "mean_tokens": number(statistics.fmean(tokens)) if tokens else "-",
        "tokens_total": number(sum(tokens)) if tokens else "-",
        "cost_usd": number(row["cost"]) if row["priced"] else "-",
    }
