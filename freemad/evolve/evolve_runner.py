"""The evolve runtime: iterations of variation and judgement on a git lineage, one durable step at a time.

Every decision comes from `next_action` over the events already in the store, so a run killed
at any point (kill -9 included) resumes where it stopped: an iteration that was started and
never judged is abandoned and redone, and an admission whose judged event is stored but whose
version is not is rolled forward. The branch only ever moves fast-forward, and a version is
recorded once. Another process can pause, stop or answer a run between any two steps.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from freemad import runner
from freemad.adapters import Adapters, required
from freemad.agents.agent_port import AgentPort
from freemad.config.evolve_section import EvolveConfig
from freemad.config.load import config_digest
from freemad.config.models import FreemadConfig
from freemad.core.evolve.fold import EvolveState, Next, Status, fold, next_action
from freemad.core.evolve.git_names import DEFAULT_BRANCH_PREFIX, branch_name
from freemad.errors import ConfigError, UsageError
from freemad.evolve import generations, stuck
from freemad.evolve.judging import measure_candidate, sandbox_problem
from freemad.evolve.variation import Context, Variation
from freemad.evolve.worker_protocol import Incumbent, Rejection, objective
from freemad.logs import step_line
from freemad.sandbox.sandbox_port import Sandbox
from freemad.store.store_port import Store
from freemad.workspace.repository_port import (
    GitFolderCheck,
    Repositories,
    RunLineage,
    RunRefs,
    Tampering,
)

Step = tuple[str, dict[str, Any]]
StepSink = Callable[[str, dict[str, Any]], None]
log = logging.getLogger(__name__)
_RECENT = 5  # rejections shown to the agents


def judge_hash(evolve: EvolveConfig) -> str:
    """The judge's definition, hashed: a run is judged by one judge from start to end."""
    judge_data = evolve.judge.model_dump(mode="json")
    if not judge_data["confirm_runs"]:  # runs from before confirm_runs existed keep their hash
        del judge_data["confirm_runs"]
    judge_data["container"] = evolve.judge.container.hash_data()
    canonical = json.dumps(judge_data, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def default_worktrees_dir() -> Path:
    return Path(tempfile.gettempdir()) / "freemad-evolve"


class EvolveRunner:
    def __init__(
        self,
        config: FreemadConfig,
        store: Store,
        *,
        config_dir: Path,
        ports: Mapping[str, AgentPort] | None = None,
        on_step: StepSink | None = None,
        worktrees_dir: Path | None = None,
        config_arg: str = "",
        adapters: Adapters | None = None,
    ) -> None:
        if config.evolve is None:
            raise ConfigError("the config has no evolve: section (see docs/evolve.md)")
        self.config = config
        self.evolve = config.evolve.resolved(config_dir)
        self.store = store
        self.on_step = on_step
        # What a command printed for a person needs to find this config again (` --config F`).
        self.config_arg = config_arg
        self.worktrees_dir = (worktrees_dir or default_worktrees_dir()).resolve()
        # An agent with a port in `ports` works through it; any other gets a port from the agent
        # factory of `adapters`. Running a run needs the adapters (for its sandboxes and its
        # lineage in git); reading and steering a run does not.
        self.given_ports = dict(ports or {})
        self.adapters = adapters
        self.repo = Path(self.evolve.repo_path)
        self._folded: dict[str, tuple[int, EvolveState]] = {}
        # The worktrees of a generation's candidates beyond the first, removed with the run's own.
        self.candidates: dict[int, RunLineage] = {}

    @functools.cached_property
    def sandbox(self) -> Sandbox:
        """Where the judge's stages and the worker's commands run."""
        judge_cfg = self.evolve.judge
        return self._adapters().sandboxes.code(
            self.config.security.sandbox,
            judge_cfg.network,
            judge_cfg.env_passthrough,
            judge_cfg.container.resolved(self.repo),
        )

    @functools.cached_property
    def agent_box(self) -> Sandbox:
        """Where the worker's agent CLI runs."""
        container = self.evolve.judge.container.enabled
        return self._adapters().sandboxes.agent(
            self.config.security.sandbox, container_judge=container
        )

    @functools.cached_property
    def variation(self) -> Variation:
        return Variation(
            self.config,
            self.evolve,
            self.given_ports,
            self._adapters(),
            self.sandbox,
            self.agent_box,
        )

    @property
    def repos(self) -> Repositories:
        """The run's repository: its seed, lineage and guard."""
        return self._adapters().repos

    def _adapters(self) -> Adapters:
        return required(self.adapters, "running an evolve run")

    # --- commands -----------------------------------------------------------------------------

    def start(self, goal: str) -> EvolveState:
        goal = goal.replace("\x00", "").strip()
        if not goal:
            raise UsageError("the goal is empty")
        seed = self._preflight()
        run_id = uuid.uuid4().hex[:16]
        self._clean_orphans()
        created = {
            "goal": goal,
            "goal_hash": hashlib.sha256(goal.encode()).hexdigest(),
            "judge_hash": judge_hash(self.evolve),
            "seed_ref": self.evolve.seed_ref,
            "seed_commit": seed,
            "branch": branch_name(run_id, self.evolve.run_branch_prefix),
            "branch_prefix": self.evolve.run_branch_prefix,
            "repo_path": str(self.repo),
            "variation": self.evolve.variation.mode,
            "gate": list(self.evolve.judge.gate),
            "comparator": [
                {"component": c.component, "direction": c.direction, "epsilon": c.epsilon}
                for c in self.evolve.judge.comparator
            ],
            "config_digest": config_digest(self.config),
            "config_arg": self.config_arg,
        }
        self.store.create_run(run_id, "evolve", {"goal": goal[:200]})
        self.append(run_id, [("run_created", {"run_id": run_id, **created})])
        return self.advance(run_id)

    def state(self, run_id: str) -> EvolveState:
        """The run folded from its events; only the events since the last call are read."""
        last, known = self._folded.get(run_id, (-1, None))
        events = self.store.events(run_id, after_seq=last)
        if known is None and not events:
            raise UsageError(f"no evolve run {run_id!r} in {self.evolve.store_path}")
        if events:
            ttl = self.evolve.supervisor.directions_ttl_iterations
            known = fold(run_id, ((e.kind, e.data) for e in events), ttl, onto=known)
            self._folded[run_id] = (events[-1].seq, known)
        assert known is not None
        return known

    def inspect(self, run_id: str) -> dict[str, Any]:
        state = self.state(run_id)
        return {
            "run": state.view(),
            "events": [
                {"seq": e.seq, "time": e.time, "kind": e.kind, "data": e.data}
                for e in self.store.events(run_id)
            ],
        }

    def pause(self, run_id: str) -> EvolveState:
        state = self.state(run_id)
        if state.status is not Status.RUNNING:
            raise UsageError(f"run {run_id} is {state.status.value}, not running")
        return self.append(run_id, [("paused", {})])

    def stop(self, run_id: str) -> EvolveState:
        state = self.state(run_id)
        if state.status in (Status.STOPPED, Status.FAILED):
            raise UsageError(f"run {run_id} has already ended ({state.stop_reason})")
        return self.append(run_id, [("stop_requested", {})])

    def resume(self, run_id: str) -> EvolveState:
        state = self.state(run_id)
        if state.status is Status.WAITING:
            raise UsageError(
                f"run {run_id} waits for your answer: freemad evolve answer {run_id} "
                f'"DIRECTION"{self.config_arg} (or --decline)'
            )
        self._check_judge(state)
        self.append(run_id, [("resumed", {})])
        return self.advance(run_id)

    def answer(self, run_id: str, text: str) -> EvolveState:
        """Record a person's direction; `advance` (the CLI does it) carries the run on with it."""
        self._waiting(run_id)
        text = text.replace("\x00", "").strip()
        if not text:
            raise UsageError("the answer is empty; give a direction, or use --decline")
        return self.append(run_id, [("human_answer", {"text": text})])

    def decline(self, run_id: str) -> EvolveState:
        self._waiting(run_id)
        return self.append(run_id, [("human_declined", {})])

    # --- the loop -----------------------------------------------------------------------------

    def advance(self, run_id: str) -> EvolveState:
        """Run steps until the run waits, pauses, stops or fails."""
        with self._exclusive(run_id):
            return runner.run(self._advance(run_id))

    async def _advance(self, run_id: str) -> EvolveState:
        state = self.state(run_id)
        self._check_judge(state)
        if state.status is not Status.RUNNING:
            return state
        lineage = self.repos.lineage(
            self.repo, run_id, state.seed_commit, self.worktrees_dir, state.branch
        )
        snapshot = self.repos.snapshot(lineage.common)
        try:
            while True:
                state = self.state(run_id)
                tampered = self.check_lineage(state, snapshot)
                if tampered:
                    detail = "; ".join(t.line() for t in tampered)
                    data = {"reason": "tampered", "detail": f"undone: {detail}"}
                    return self.append(run_id, [("stopped", data)])
                step = next_action(state, self.evolve.supervisor, self.evolve.stop)
                if step.action == "idle":
                    return state
                await self._take(state, step, lineage)
        finally:
            for candidate in self.candidates.values():
                candidate.remove()
            self.candidates.clear()
            lineage.remove()  # the branch and tags keep the work; a resume makes a new worktree

    def check_lineage(
        self, state: EvolveState, snapshot: GitFolderCheck | None = None
    ) -> list[Tampering]:
        """The run's refs (and, given a snapshot, the repository's git settings) against the
        store; every difference undone and returned."""
        pending = state.pending
        refs = RunRefs(
            state.run_id,
            state.seed_commit,
            {v.version: v.commit for v in state.versions},
            (pending.version, pending.commit) if pending else None,
            state.branch,
        )
        found = self.repos.check_refs(self.repo, refs, repair=True)
        return [*found, *(snapshot.check(repair=True) if snapshot else [])]

    async def _take(self, state: EvolveState, step: Next, lineage: RunLineage) -> None:
        run_id = state.run_id
        if step.action == "abandon":
            why = "interrupted before it was judged; it is run again"
            self.append(
                run_id, [("iteration_abandoned", {"iteration": state.started, "reason": why})]
            )
        elif step.action == "admit":
            pending = state.pending
            assert pending is not None
            parent = state.incumbent.commit if state.incumbent else state.seed_commit
            lineage.advance(parent, pending.commit, pending.version)
            admitted = {
                "iteration": pending.iteration,
                "version": pending.version,
                "commit": pending.commit,
                "components": pending.components,
            }
            self.append(run_id, [("version_admitted", admitted)])
        elif step.action == "baseline_failed":
            reason = state.judged[0]["verdict"]["reason"]
            self.append(run_id, [("stopped", {"reason": "baseline_failed", "detail": reason})])
        elif step.action == "intervene":
            await self._intervene(state, step, lineage)
        elif step.action == "ask_human":
            question = stuck.question(state, step, self.evolve.supervisor, self.config_arg)
            data = {
                "after_iteration": state.last_judged,
                "detection": step.detection,
                "question": question,
            }
            self.append(run_id, [("waiting_for_human", data)])
        elif step.action == "stop" and step.reason == "worker_failed":
            stall = self.evolve.supervisor.stall_window
            self.append(
                run_id,
                [
                    (
                        "stopped",
                        {"reason": step.reason, "detail": stuck.broken_workers(state, stall)},
                    )
                ],
            )
        elif step.action == "stop":
            self.append(run_id, [("stopped", {"reason": step.reason})])
        elif step.action == "generation":
            await self.generation(state, lineage, resumed=True)
        elif state.incumbent is not None and generations.wanted(self.evolve):
            await self.generation(state, lineage, resumed=False)
        else:
            await self._iterate(state, lineage)

    async def generation(self, state: EvolveState, lineage: RunLineage, *, resumed: bool) -> None:
        """Start (or, `resumed`, finish) a generation, its candidates judged here, in parallel
        (`freemad.evolve.matrix` judges them on runners of their own instead)."""
        await generations.run(self, state, lineage, resumed=resumed)

    async def _iterate(self, state: EvolveState, lineage: RunLineage) -> None:
        run_id, number = state.run_id, state.next_iteration
        incumbent = state.incumbent
        parent = incumbent.commit if incumbent else state.seed_commit
        directives = [d.text for d in state.guiding(number)]
        started_at = time.monotonic()
        started = {
            "iteration": number,
            "parent_version": incumbent.version if incumbent else None,
            "parent_commit": parent,
            "directives": directives,
        }
        self.append(run_id, [("iteration_started", started)])
        lineage.prepare(parent)
        agent: str | None = None
        proposal: dict[str, Any] | None = None
        if incumbent is not None:
            proposal = await self.variation.propose(
                self.context(state, number, directives), lineage.worktree, lineage.common
            )
            agent = proposal.get("agent")
            self.append(run_id, [("candidate_proposed", proposal)])
        judged, diff = measure_candidate(
            self.evolve, self.sandbox, state, lineage, parent, proposal
        )
        self.keep_diff(state.run_id, judged, diff, f"iteration-{number}.diff")
        judged.update(
            iteration=number, agent=agent, seconds=round(time.monotonic() - started_at, 3)
        )
        self.append(run_id, [("candidate_judged", judged)])

    def keep_diff(self, run_id: str, data: dict[str, Any], diff: str | None, name: str) -> None:
        if diff is not None:
            artifact = self.store.put_artifact(run_id, name, diff.encode())
            data["diff_artifact"] = artifact.artifact_id

    async def _intervene(self, state: EvolveState, step: Next, lineage: RunLineage) -> None:
        tried = [text for item in state.interventions for text in item.get("directions", [])]
        context = self.context(state, state.next_iteration, [])
        found = await self.variation.directions(
            context, stuck.problem(state, step, self.evolve.supervisor), tried, lineage.worktree
        )
        data = {"after_iteration": state.last_judged, "detection": step.detection, **found}
        self.append(state.run_id, [("intervention", data)])

    # --- helpers ------------------------------------------------------------------------------

    def context(
        self, state: EvolveState, number: int, directions: list[str], candidate: int = 0
    ) -> Context:
        incumbent = state.incumbent
        assert incumbent is not None
        judge_cfg = self.evolve.judge
        rejections = [
            Rejection(iteration=i, reason=str(data["verdict"]["reason"])[:300])
            for i, data in sorted(state.judged.items())
            if not data["verdict"]["admitted"]
        ][-_RECENT:]
        return Context(
            run_id=state.run_id,
            goal=state.goal,
            iteration=number,
            incumbent=Incumbent(
                version=incumbent.version,
                commit=incumbent.commit,
                components=incumbent.components,
            ),
            best_ever=state.best(judge_cfg.comparator),
            objective=objective(judge_cfg.gate, judge_cfg.comparator),
            directions=directions,
            rejections=rejections,
            candidate=candidate,
        )

    def _preflight(self) -> str:
        """The seed commit; a one-line UsageError for a repository or sandbox we cannot use."""
        seed = self.repos.resolve_seed(self.repo, self.evolve.seed_ref)
        dirty = self.repos.dirty_paths(self.repo)
        if dirty:
            shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
            raise UsageError(
                f"{self.repo} has uncommitted changes ({shown}); commit or stash them first"
            )
        problem = sandbox_problem(self.sandbox, self.agent_box)
        if problem:
            raise UsageError(problem)
        return seed

    def _check_judge(self, state: EvolveState) -> None:
        current = judge_hash(self.evolve)
        if state.judge_hash and state.judge_hash != current:
            raise UsageError(
                f"evolve.judge has changed since run {state.run_id} started (judge hash "
                f"{state.judge_hash[:12]} then, {current[:12]} now); a run is judged by one judge "
                "from start to end: restore the judge, or start a new run"
            )

    def _waiting(self, run_id: str) -> EvolveState:
        state = self.state(run_id)
        if state.status is not Status.WAITING:
            raise UsageError(
                f"run {run_id} is not waiting for an answer (status: {state.status.value})"
            )
        return state

    @contextlib.contextmanager
    def _exclusive(self, run_id: str) -> Iterator[None]:
        """One process advances a run at a time; the lock dies with its process (kill -9)."""
        self.worktrees_dir.mkdir(parents=True, exist_ok=True)
        with open(self.worktrees_dir / f"{run_id}.lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UsageError(f"run {run_id} is being run by another process") from None
            yield

    def _clean_orphans(self) -> None:
        """Worktrees of runs no process is running: a crashed process left them."""
        busy: list[str] = []
        if self.worktrees_dir.is_dir():
            for lock in self.worktrees_dir.glob("*.lock"):
                with open(lock, "a") as handle:
                    try:
                        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        busy.append(lock.stem)
        prefixes = {DEFAULT_BRANCH_PREFIX, self.evolve.run_branch_prefix}
        self.repos.clean_orphans(self.repo, self.worktrees_dir, busy, prefixes)

    def append(self, run_id: str, steps: list[Step]) -> EvolveState:
        self.store.append_many(run_id, steps)
        state = self.state(run_id)
        self.store.update_run(run_id, status=state.status.value, summary=state.view())
        for kind, data in steps:
            log.info("evolve %s: %s", run_id, step_line(kind, data))
            if self.on_step is not None:
                self.on_step(kind, data)
        return state
