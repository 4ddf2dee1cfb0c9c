"""Agents over time: what each agent did across the debates, as view data. Pure: no I/O.

`debate_record` reads one transcript into what each of its agents did in it (small, plain JSON,
so a site build can keep it in its manifest); `agents_table` adds the records of many debates
up, one row per agent; `agent_view` is one agent's page. Definitions (docs/dashboards.md):

- an agent *won* a debate when it proposed the winning answer (the transcript's
  `origin_agents` of the winner) or held it at the end (its last entry in `holders_history`);
- a *switch* is a critique turn the agent answered with "revise"; it *switched to the winner*
  when the answer it revised to is the debate's winning answer;
- a *failure* is a turn whose status is not "ok", counted by its error's cause;
- time and tokens are per call: each turn the agent took, as the transcript records it;
- cost is the transcript's per-agent cost, present only where a price is configured.

Agent ids come from configs and transcripts: untrusted text. Templates escape them, and
`agent_slug` makes the file name and URL of an agent's page from one.
"""

from __future__ import annotations

import hashlib
import re
import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from freemad.dashboard.debate_views import agent_names
from freemad.dashboard.viewdata import as_list, as_map, as_number, as_text, number

AGENT_SLUG = re.compile(r"[a-z0-9_-]{0,40}-[0-9a-f]{10}")  # what agent_slug makes
RUNS_SHOWN = 500  # an agent's page lists its newest debates up to this many


def agent_slug(name: str) -> str:
    """A safe file name (and URL part) for an agent's page: its id's safe characters, lowercased
    and cut, and a digest of the exact id, so two ids never share a page ("A" and "a" included)."""
    readable = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-")[:40]
    return f"{readable}-{hashlib.sha256(name.encode('utf-8', 'replace')).hexdigest()[:10]}"


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
        failures: dict[str, int] = {}
        for turn in turns:
            if turn.get("status") != "ok":
                cause = as_text(as_map(turn.get("error")).get("cause")) or as_text(
                    turn.get("status")
                )
                failures[cause or "unknown"] = failures.get(cause or "unknown", 0) + 1
        tokens = [as_map(t.get("tokens")) for t in turns]
        agents[name] = {
            "proposed": winner is not None and name in origin,
            "held": winner is not None and as_text(final.get(name)) == winner,
            "switches": len(revised),
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
    return {
        "run_id": run_id,
        "started": started,
        "status": as_text(transcript.get("status")) or "unknown",
        "winner": winner,
        "agents": agents,
    }


def agents_table(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per agent over every debate's record, by name; each row's `runs` are its debates,
    newest first."""
    rows: dict[str, dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: -(as_number(r.get("started")) or 0.0)):
        for name, did in as_map(record.get("agents")).items():
            _add(rows.setdefault(str(name), _empty(str(name))), record, as_map(did))
    return [_finish(rows[name]) for name in sorted(rows)]


def agent_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """One agent's page from its row of `agents_table`: its newest debates up to RUNS_SHOWN."""
    return {**row, "runs": list(row["runs"])[:RUNS_SHOWN], "runs_cut": len(row["runs"])}


def _count(value: Any) -> int:
    return int(as_number(value) or 0)


def _add(row: dict[str, Any], record: Mapping[str, Any], did: Mapping[str, Any]) -> None:
    """One debate's record of the agent (`did`) added to its row."""
    won, cost = bool(did.get("proposed") or did.get("held")), as_number(did.get("cost_usd"))
    failures = {str(cause): _count(n) for cause, n in as_map(did.get("failures")).items()}
    run: dict[str, Any] = {
        "run_id": as_text(record.get("run_id")),
        "started": as_number(record.get("started")) or 0.0,
        "status": as_text(record.get("status")),
        "won": won,
        "proposed": bool(did.get("proposed")),
        "held": bool(did.get("held")),
        "switches": _count(did.get("switches")),
        "to_winner": _count(did.get("to_winner")),
        "failures": sum(failures.values()),
        "calls": _count(did.get("calls")),
        "cost_usd": number(cost),
    }
    for key in ("won", "proposed", "held", "switches", "to_winner", "calls"):
        row[key] += int(run[key])
    for cause, n in failures.items():
        row["causes"][cause] = row["causes"].get(cause, 0) + n
    row["durations"] += [d for d in map(as_number, as_list(did.get("durations"))) if d is not None]
    row["tokens"] += [n for n in map(as_number, as_list(did.get("tokens"))) if n is not None]
    row["estimated"] = row["estimated"] or bool(did.get("estimated"))
    if cost is not None:
        row["cost"] += cost
        row["priced"] += 1
    row["runs"].append(run)


def _empty(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "slug": agent_slug(name),
        "won": 0,
        "proposed": 0,
        "held": 0,
        "switches": 0,
        "to_winner": 0,
        "causes": {},
        "calls": 0,
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
        "debates": len(row["runs"]),
        "failures": sum(causes.values()),
        "causes": sorted(causes.items(), key=lambda item: (-item[1], item[0])),
        "median_ms": number(statistics.median(durations)) if durations else "-",
        "mean_ms": number(statistics.fmean(durations)) if durations else "-",
        "mean_tokens": number(statistics.fmean(tokens)) if tokens else "-",
        "cost_usd": number(row["cost"]) if row["priced"] else "-",
    }
