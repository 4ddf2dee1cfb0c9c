"""An evolve generation judged by a matrix of GitHub Actions jobs: the planner, one job per
candidate, the admitting job (`.github/workflows/freemad-evolve-matrix.yml` runs them).

The run's steps are `freemad.evolve.matrix`'s; this module moves them between jobs. The planner
and the admitting job hold the run: they load it from the state branch, fetch its lineage, push
what they add (the state branch, the lineage, the draft pull request, as an evolve run on a pull
request does: `freemad.github.evolve_pr`). A candidate job holds nothing: it reads the run from
the state branch its checkout fetched, works and judges its candidate, and writes one result
folder, `candidate-<g>-<k>/` (uploaded as the artifact of that name; its format and what the
admitting job checks of it: `freemad.github.matrix_results`). It writes neither the store, the
state branch nor a ref anyone else sees.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from freemad.adapters import Adapters
from freemad.agents.agent_port import AgentPort
from freemad.config.models import FreemadConfig
from freemad.core.evolve.fold import EvolveState
from freemad.errors import FreemadError, UsageError
from freemad.evolve import matrix
from freemad.evolve.evolve_runner import EvolveRunner
from freemad.evolve.matrix import Admitted, MatrixRunner, Plan
from freemad.github.evolve_pr import (
    EvolveOnPr,
    Job,
    PullRequestInfo,
    fetch_commit,
    fetch_lineage,
    refuse_fork,
)
from freemad.github.forge import Forge
from freemad.github.matrix_results import read_results, write_result
from freemad.github.publish import fetch_refs, local_repo, push_refs
from freemad.github.state_branch import StateBranch
from freemad.store import Store
from freemad.store.run_folders import IssueRef
from freemad.store.store_port import RUN_ID


def candidate_ref(run_id: str, generation: int, candidate: int) -> str:
    """Where the admitting job keeps a measured candidate's commit while its generation waits for
    others (a hidden ref: not a branch, no pull request), so a later job can still admit it."""
    return f"refs/freemad/evolve/{run_id}/g{generation}/c{candidate}"


@dataclass
class Holder:
    """What the planner and the admitting job share: the config, the store, the workspace (a
    clone whose remote is GitHub), the pull request and the forge."""

    config: FreemadConfig
    store: Store
    forge: Forge
    pr: PullRequestInfo
    workspace: Path
    adapters: Adapters
    remote: str = "origin"
    ports: Mapping[str, AgentPort] | None = None
    worktrees_dir: Path | None = None
    web_url: str = "https://github.com"

    def job(self) -> Job:
        refuse_fork(self.pr)
        job = Job(
            self.config,
            self.store,
            self.forge,
            self.pr,
            self.workspace,
            self.remote,
            self.ports,
            self.adapters,
            self.worktrees_dir,
            None,
            runner_type=MatrixRunner,
        )
        job.web_url = self.web_url
        return job

    def branch(self) -> StateBranch:
        return StateBranch(
            self.workspace, remote=self.remote, branch=self.config.github.state_branch
        )

    def resume(self, job: Job, run_id: str) -> MatrixRunner:
        """Bring the run's events, lineage and waiting candidates' commits into this job."""
        runner = job.runner
        assert isinstance(runner, MatrixRunner)
        branch = self.branch()
        branch.pull()
        branch.load(self.store, [run_id])
        state = runner.state(on_branch(self.store, run_id, branch))
        meta = next((m for m in branch.runs() if m.run_id == run_id), None)
        issue = meta.issue if meta is not None else None
        if issue is not None and (issue.repo.casefold(), issue.number) != (
            self.pr.repo.casefold(),
            self.pr.number,
        ):
            raise UsageError(
                f"run {run_id} evolves #{issue.number} of {issue.repo}, not #{self.pr.number}: "
                "give its own pull request"
            )
        job.run_id = run_id
        fetch_lineage(self.workspace, self.remote, run_id, state.seed_commit, self.pr)
        hidden = f"refs/freemad/evolve/{run_id}/"
        fetch_refs(self.workspace, self.remote, [f"{hidden}*:{hidden}*"])
        job.pull = self.forge.find_pull_request(
            self.pr.repo, head=state.branch, base=self.pr.head_ref
        )
        return runner

    def save(self, run_id: str) -> None:
        self.branch().save(
            self.store, [run_id], issue=IssueRef(repo=self.pr.repo, number=self.pr.number)
        )


def checked_run_id(run_id: str) -> str:
    """`run_id` when it is a FREE-MAD run id; a one-line UsageError otherwise."""
    if not RUN_ID.fullmatch(run_id):
        raise UsageError(f"{run_id[:80]!r} is not a FREE-MAD run id")
    return run_id


def on_branch(store: Store, run_id: str, branch: StateBranch) -> str:
    """`run_id`, once the state branch has brought it into `store`; a one-line error otherwise."""
    if store.run(checked_run_id(run_id)) is None:
        raise UsageError(
            f"no run {run_id} on {branch.where} (as this job's checkout fetched it): check the "
            "run id, and check the repository out with fetch-depth: 0"
        )
    return run_id


# --- the planner --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    plan: Plan
    run: EvolveOnPr
    parallel: int
    timeout_minutes: int

    def outputs(self) -> dict[str, str]:
        """The planner's step outputs: the matrix for `fromJSON`, and what sizes its jobs."""
        todo = list(self.plan.todo)
        return {
            "run-id": self.plan.run_id,
            "status": self.plan.status,
            "generation": "" if self.plan.iteration is None else str(self.plan.iteration),
            "matrix": json.dumps({"candidate": todo}),
            "count": str(len(todo)),
            "parallel": str(max(1, min(self.parallel, len(todo) or 1))),
            "timeout-minutes": str(self.timeout_minutes),
        }


def plan_job(holder: Holder, *, run_id: str | None = None, goal: str | None = None) -> Planned:
    """Start a run toward `goal` from the pull request's head, or carry run `run_id` on, up to
    its next generation: started (`generation_started`) and saved, its candidates named."""
    if (run_id is None) == (goal is None):
        raise UsageError("give a goal to start a run, or the id of a run to carry on (not both)")
    job = holder.job()
    runner = job.runner
    assert isinstance(runner, MatrixRunner)
    if goal is not None:
        fetch_commit(holder.workspace, holder.remote, holder.pr.head_sha, holder.pr)
        with contextlib.suppress(matrix.GenerationDue):  # the baseline judged, a generation due
            runner.start(goal)
        assert job.run_id is not None
        run_id = job.run_id
    else:
        assert run_id is not None
        holder.resume(job, run_id)
    planned = matrix.plan(runner, run_id)
    run = job.finish(runner.state(run_id))
    holder.save(run_id)
    evolve = runner.evolve
    return Planned(planned, run, evolve.population.workers, matrix.timeout_minutes(runner))


# --- a candidate's job ----------------------------------------------------------------------------


def candidate_job(
    config: FreemadConfig,
    store: Store,
    workspace: Path,
    run_id: str,
    candidate: int,
    out: Path,
    *,
    adapters: Adapters,
    remote: str = "origin",
    ports: Mapping[str, AgentPort] | None = None,
    worktrees_dir: Path | None = None,
) -> Path | None:
    """Work and judge `candidate` of run `run_id`'s generation in flight; its result folder under
    `out`, or None when it is measured already. Reads the run from the state branch as the
    checkout fetched it (no credentials needed); writes nothing but the folder."""
    if config.evolve is None:
        raise UsageError("the config has no evolve: section (see docs/evolve.md)")
    root = workspace.resolve()
    branch = StateBranch(root, remote=remote, branch=config.github.state_branch)
    branch.load(store, [checked_run_id(run_id)])
    on_branch(store, run_id, branch)
    evolve = config.evolve.model_copy(update={"repo_path": str(root)})
    runner = EvolveRunner(
        config.model_copy(update={"evolve": evolve}),
        store,
        config_dir=root,
        ports=ports,
        worktrees_dir=worktrees_dir,
        adapters=adapters,
    )
    worked = matrix.work(runner, run_id, candidate)
    if worked is None:
        return None
    return write_result(root, out, worked)


# --- the admitting job ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AdmitReport:
    admitted: Admitted
    run: EvolveOnPr
    ignored: tuple[tuple[str, str], ...]  # (folder, why): tied to no candidate of this generation

    def lines(self) -> list[str]:
        """One line per thing a person should know, for the log and the job summary."""
        state = self.admitted.state
        lines = [f"stored: candidate {k}" for k in self.admitted.stored]
        lines += [f"refused: candidate {k}: {why}" for k, why in self.admitted.refused]
        lines += [f"ignored: {name}: {why}" for name, why in self.ignored]
        lines += [f"ignored: candidate {k}: {why}" for k, why in self.admitted.ignored]
        if self.admitted.missing:
            shown = ", ".join(map(str, self.admitted.missing))
            lines.append(
                f"generation {state.started} waits for candidate(s) {shown}: run the workflow "
                "again with this run id; its planner plans only those"
            )
        return lines


def admit_job(holder: Holder, run_id: str, results: Path) -> AdmitReport:
    """Store the result folders under `results`, decide and admit the generation once complete,
    then push the lineage, the draft pull request and the state branch."""
    job = holder.job()
    runner = holder.resume(job, run_id)
    state = runner.state(run_id)
    read, ignored = read_results(
        holder.workspace, results, state, runner.evolve.judge.protected_paths
    )
    admitted = matrix.admit(runner, run_id, read)
    if admitted.missing:
        _keep_waiting(holder, admitted.state)
    run = job.finish(admitted.state)
    if not admitted.missing:
        _forget_waiting(holder, run_id)
    holder.save(run_id)
    return AdmitReport(admitted, run, tuple(ignored))


def _keep_waiting(holder: Holder, state: EvolveState) -> None:
    """Push the measured candidates' commits under hidden refs: their generation is not decided,
    and the job that decides it will not have this job's artifacts."""
    specs = [
        f"{member['commit']}:{candidate_ref(state.run_id, state.started or 0, k)}"
        for k, member in sorted(state.members.items())
        if member.get("commit")
    ]
    if specs:
        push_refs(holder.workspace, holder.remote, specs)


def _forget_waiting(holder: Holder, run_id: str) -> None:
    """Delete the hidden refs of candidates that waited: their generation is decided (the
    winner's commit is on the run's branch by now)."""
    hidden = f"refs/freemad/evolve/{run_id}/"
    with local_repo(holder.workspace) as repo:
        refs = str(repo.git.for_each_ref("--format=%(refname)", hidden)).split()
    if refs:
        push_refs(holder.workspace, holder.remote, [f":{ref}" for ref in refs])
        with local_repo(holder.workspace) as repo:
            for ref in refs:
                repo.git.update_ref("-d", ref)


def check_workspace(workspace: Path) -> Path:
    """The job's workspace, a git clone; a one-line error otherwise."""
    root = workspace.resolve()
    if not (root / ".git").exists():
        raise FreemadError(f"{root} is not a git clone: check the repository out first")
    return root


# GITHUB_WORKFLOW_REF: the workflow file this job runs in (the caller's, when the matrix
# workflow is called), as OWNER/REPO/.github/workflows/FILE@REF.
_WORKFLOW_REF = re.compile(
    r"(?P<repo>[A-Za-z0-9][A-Za-z0-9-]*/(?!\.\.?/)[A-Za-z0-9_.-]+)"
    r"/\.github/workflows/(?P<file>[^/@\s]+)@(?P<ref>\S+)"
)


def next_generation(forge: Forge, workflow_ref: str, pull_request: int, run_id: str) -> str:
    """Start the workflow this job runs in once more, for the run's next generation: a dispatch
    with the pull request and the run's id (a dispatch by the job's own token starts a run, as
    GitHub's other events from it do not). What was started: the run's address, or the file and
    ref where GitHub does not say. A one-line UsageError for a ref that cannot be dispatched."""
    found = _WORKFLOW_REF.fullmatch(workflow_ref.strip())
    if found is None:
        raise UsageError(
            f"GITHUB_WORKFLOW_REF is {workflow_ref[:200]!r}, not OWNER/REPO/.github/workflows/"
            "FILE@REF: the next generation can only be started from a workflow's job"
        )
    ref = found["ref"]
    for prefix in ("refs/heads/", "refs/tags/"):
        if ref.startswith(prefix):
            ref = ref.removeprefix(prefix)
            break
    else:
        raise UsageError(
            f"the workflow runs on {ref[:200]}, which cannot be dispatched: start the matrix "
            "workflow from a branch (workflow_dispatch) to have it carry the run on"
        )
    inputs = {"pull-request": str(pull_request), "run-id": run_id}
    started = forge.dispatch_workflow(found["repo"], found["file"], ref, inputs)
    return started or f"{found['file']} on {ref}"
