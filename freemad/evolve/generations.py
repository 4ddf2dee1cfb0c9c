"""A generation: `evolve.population.size` candidates from one incumbent, worked and judged at once
(at most `population.parallel` of them), each in its own worktree; the judge admits at most one.

Each candidate's judgement is one event (`candidate_measured`), stored as soon as it is made: a
run killed mid-generation resumes by judging only the candidates without one, so none is judged
twice and none that was judged is lost. Once every candidate is in, the decision is a pure
function of the stored measurements (`core.evolve.population.winner`), confirmed by
re-measurement when `judge.confirm_runs` asks, and recorded as the iteration's one
`candidate_judged`; the admission itself then goes the way of a single candidate's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from freemad.config.evolve_section import EvolveConfig
from freemad.core.evolve import Measurement, judge
from freemad.core.evolve.fold import EvolveState
from freemad.core.evolve.population import Member, confirm, outcome, signature, winner
from freemad.evolve.judging import measure_candidate, measurement_data, run_stages
from freemad.sandbox.sandbox_port import View
from freemad.workspace.repository_port import RunLineage

if TYPE_CHECKING:
    from freemad.evolve.evolve_runner import EvolveRunner

_REASON = 300  # characters of each candidate's reason kept in the generation's summary


def wanted(evolve: EvolveConfig) -> bool:
    """Whether iterations after the baseline are generations: a population, or a winner to
    confirm. Population 1 without confirmation runs as single iterations, as it always has."""
    return evolve.population.size > 1 or evolve.judge.confirm_runs > 0


def directions_for(directives: Sequence[str], candidate: int) -> list[str]:
    """Every direction, the candidate's own first: candidate k leads with direction k (mod n),
    so a generation spreads over the supervisor's directions."""
    if not directives:
        return []
    k = candidate % len(directives)
    return [*directives[k:], *directives[:k]]


async def run(
    runner: EvolveRunner, state: EvolveState, lineage: RunLineage, *, resumed: bool
) -> None:
    """Start (or, `resumed`, finish) the generation in flight, up to its `candidate_judged`."""
    evolve = runner.evolve
    run_id = state.run_id
    incumbent = state.incumbent
    assert incumbent is not None
    number, parent = state.next_iteration, incumbent.commit
    began = time.monotonic()
    if resumed:
        size = state.generation
        todo = [k for k in range(size) if k not in state.members]
        resume = {"iteration": number, "judged": sorted(state.members), "redo": todo}
        state = runner.append(run_id, [("generation_resumed", resume)])
    else:
        size = evolve.population.size
        todo = list(range(size))
        state = begin(runner, state)
    directives = [d.text for d in state.guiding(number)]
    _ = runner.sandbox, runner.variation  # made once here, not by racing worker threads
    worktrees = {k: _worktree(runner, lineage, k) for k in todo}  # one after another: git locks
    workers = max(1, min(evolve.population.workers, len(todo) or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="evolve-candidate") as pool:
        slots = asyncio.Semaphore(workers)

        async def one(k: int) -> None:
            """Candidate `k`: its worker's change, then its judgement, each stored as made."""
            async with slots:
                began, worktree = time.monotonic(), worktrees[k]
                proposal = await propose(
                    runner, state, number, k, worktree, parent, directives, pool
                )
                runner.append(run_id, [("candidate_proposed", proposal)])
                data, diff = await measure(
                    runner, state, k, worktree, parent, pool, proposal, began
                )
                store_measured(runner, run_id, data, diff)

        await asyncio.gather(*(one(k) for k in todo))
        state = runner.state(run_id)
        await decide(runner, state, lineage, number, size, began, pool)


def begin(runner: EvolveRunner, state: EvolveState) -> EvolveState:
    """Record the start of the next generation from the incumbent (`generation_started`)."""
    evolve = runner.evolve
    incumbent = state.incumbent
    assert incumbent is not None
    number, size = state.next_iteration, evolve.population.size
    started = {
        "iteration": number,
        "size": size,
        "parallel": min(evolve.population.workers, size),
        "parent_version": incumbent.version,
        "parent_commit": incumbent.commit,
        "directives": [d.text for d in state.guiding(number)],
    }
    return runner.append(state.run_id, [("generation_started", started)])


def _worktree(runner: EvolveRunner, lineage: RunLineage, k: int) -> RunLineage:
    found = lineage.candidate(k)
    if k:
        runner.candidates[k] = found
    return found


async def propose(
    runner: EvolveRunner,
    state: EvolveState,
    number: int,
    k: int,
    worktree: RunLineage,
    parent: str,
    directives: Sequence[str],
    pool: ThreadPoolExecutor,
) -> dict[str, Any]:
    """Candidate `k`'s worker call on its worktree, made `parent` first: the proposal's data."""
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(pool, worktree.prepare, parent)
    context = runner.context(state, number, directions_for(directives, k), candidate=k)
    proposal = await runner.variation.propose(context, worktree.worktree, worktree.common)
    return {**proposal, "candidate": k}


async def measure(
    runner: EvolveRunner,
    state: EvolveState,
    k: int,
    worktree: RunLineage,
    parent: str,
    pool: ThreadPoolExecutor,
    proposal: dict[str, Any],
    began: float,
) -> tuple[dict[str, Any], str | None]:
    """Candidate `k` judged against the incumbent: `candidate_measured`'s data (without the
    diff's artifact id) and its diff; nothing stored."""
    loop = asyncio.get_running_loop()
    data, diff = await loop.run_in_executor(
        pool, measure_candidate, runner.evolve, runner.sandbox, state, worktree, parent, proposal
    )
    data.pop("version", None)  # only the generation's winner becomes a version
    data.update(
        iteration=state.next_iteration,
        candidate=k,
        agent=proposal.get("agent"),
        seconds=round(time.monotonic() - began, 3),
    )
    return data, diff


def store_measured(
    runner: EvolveRunner, run_id: str, data: dict[str, Any], diff: str | None
) -> EvolveState:
    """Store a candidate's judgement: its diff as an artifact, then its `candidate_measured`."""
    name = f"iteration-{data['iteration']}-candidate-{data['candidate']}.diff"
    runner.keep_diff(run_id, data, diff, name)
    return runner.append(run_id, [("candidate_measured", data)])


async def decide(
    runner: EvolveRunner,
    state: EvolveState,
    lineage: RunLineage,
    number: int,
    size: int,
    began: float,
    pool: ThreadPoolExecutor,
) -> None:
    """Every candidate is judged: pick the winner, confirm it, record the generation."""
    judge_cfg = runner.evolve.judge
    members = [
        Member(k, bool(m["verdict"]["admitted"]), bool(m["ok"]), m["components"])
        for k, m in sorted(state.members.items())
    ]
    chosen = winner(members, judge_cfg.comparator)
    confirmed = chosen is not None
    if chosen is not None and judge_cfg.confirm_runs:
        found = state.confirmation
        if found is None or found.get("candidate") != chosen:
            commit = str(state.members[chosen]["commit"])
            worktree = _worktree(runner, lineage, chosen)
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(pool, _confirm, runner, state, worktree, commit)
            found.update(iteration=number, candidate=chosen)
            state = runner.append(state.run_id, [("candidate_confirmed", found)])
        confirmed = bool(found["verdict"]["admitted"])
    runner.append(
        state.run_id,
        [("candidate_judged", _judged(state, members, chosen, confirmed, size, began))],
    )


def _confirm(
    runner: EvolveRunner, state: EvolveState, worktree: RunLineage, commit: str
) -> dict[str, Any]:
    """The winner's commit measured `confirm_runs` more times, each judged against the incumbent."""
    judge_cfg = runner.evolve.judge
    incumbent = state.incumbent
    assert incumbent is not None
    worktree.prepare(commit)
    view = View.of(
        [worktree.worktree],
        [worktree.worktree / path for path in judge_cfg.protected_paths],
        [worktree.common],
    )
    previous = Measurement(True, dict(incumbent.components))
    best = state.best(judge_cfg.comparator)
    runs, verdicts = [], []
    for _ in range(judge_cfg.confirm_runs):
        measured, _stages = run_stages(judge_cfg.stages, runner.sandbox, worktree.worktree, view)
        runs.append(measurement_data(measured))
        verdicts.append(judge(measured, previous, best, judge_cfg))
    verdict = confirm(verdicts)
    return {"runs": runs, "verdict": {"admitted": verdict.admitted, "reason": verdict.reason}}


def _judged(
    state: EvolveState,
    members: Sequence[Member],
    chosen: int | None,
    confirmed: bool,
    size: int,
    began: float,
) -> dict[str, Any]:
    """The generation's `candidate_judged`: the winner's measurement and version, or why none."""
    stored = state.members
    candidates = [
        {
            "candidate": m.candidate,
            "outcome": outcome(m, chosen, confirmed),
            "ok": m.ok,
            "components": dict(m.components),
            "reason": str(stored[m.candidate]["verdict"]["reason"])[:_REASON],
            "agent": stored[m.candidate].get("agent"),
            "seconds": stored[m.candidate].get("seconds"),
        }
        for m in members
    ]
    shown = chosen if chosen is not None else _representative(members)
    member = stored[shown]
    data: dict[str, Any] = {
        "iteration": state.next_iteration,
        "candidate": chosen,
        "tree": member.get("tree"),
        "stages": [],
        "measurement": {
            "ok": member["ok"],
            "components": member["components"],
            "failed_stage": None,
            "reason": "" if member["ok"] else member["verdict"]["reason"],
        },
        "signature": signature([str(stored[m.candidate]["signature"]) for m in members]),
        "agent": member.get("agent"),
        # Never less than its slowest candidate took (judged on runners of their own, each
        # candidate's time was spent before this job began).
        "seconds": round(max(time.monotonic() - began, *_seconds(stored.values())), 3),
        "generation": {"size": size, "candidates": candidates},
    }
    incumbent = state.incumbent
    assert incumbent is not None
    if chosen is not None and confirmed:
        reason = f"candidate {chosen} of {size} wins: {member['verdict']['reason']}"
        data["verdict"] = {"admitted": True, "reason": reason}
        data.update(commit=member["commit"], version=incumbent.version + 1)
    elif chosen is not None:
        reason = str((state.confirmation or {}).get("verdict", {}).get("reason", ""))
        data["verdict"] = {"admitted": False, "reason": f"candidate {chosen} won, but {reason}"}
    else:
        each = "; ".join(f"candidate {c['candidate']}: {c['reason']}" for c in candidates)
        data["verdict"] = {"admitted": False, "reason": f"no candidate of {size} won: {each}"}
    return data


def _seconds(members: Iterable[dict[str, Any]]) -> list[float]:
    return [float(m.get("seconds") or 0.0) for m in members]


def _representative(members: Sequence[Member]) -> int:
    """The candidate shown for a generation that admitted none: the first that passed every
    stage, else the first."""
    return next((m.candidate for m in members if m.ok), members[0].candidate)
