"""An evolve run on a pull request: evolved from the PR's head, its lineage pushed, a draft PR.

The job's workspace is a clone of the repository whose remote is GitHub. The run is seeded at the
pull request's head commit (fetched when the job checked out another ref); each admitted version
beyond v0 is pushed, fast-forward only, as `freemad/evolve/<run-id>` with its tags
`evolve/<run-id>/vN`, and the first one opens a draft pull request from that branch into the
PR's head branch. Its description, the trajectory and the incumbent's scores, is edited as
versions land and when the job ends. A later job (a fresh clone) fetches the lineage back first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freemad.adapters import Adapters
from freemad.agents.agent_port import AgentPort
from freemad.config.models import FreemadConfig
from freemad.core.evolve.fold import EvolveState, Status
from freemad.core.evolve.git_names import branch_name, tag_name
from freemad.errors import ConfigError, FreemadError, UsageError
from freemad.evolve.evolve_runner import EvolveRunner, StepSink
from freemad.evolve.run_report import trajectory_rows
from freemad.github.forge import Forge, PullRequestRef
from freemad.github.publish import fetch_refs, is_ancestor, local_repo, push_refs
from freemad.github.pulls import BranchOnly, open_or_explain
from freemad.markdown import code_span, escape_markdown, one_line
from freemad.store import Store
from freemad.svg_chart import format_number
from freemad.workspace.git import commit_of

_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_BODY_LIMIT = 60_000  # GitHub refuses a pull request body past 65,536 characters


@dataclass(frozen=True)
class PullRequestInfo:
    """The pull request a run evolves. `head_repo` ("owner/name") differs from `repo` for a fork."""

    repo: str
    number: int
    head_ref: str
    head_sha: str
    base_ref: str
    head_repo: str


@dataclass(frozen=True)
class EvolveOnPr:
    """What a job did with an evolve run on a pull request."""

    run_id: str
    status: str  # an evolve Status value: running, paused, waiting_for_human, stopped, failed
    stop_reason: str | None
    question: str | None  # what a run waiting for a person asks
    versions: tuple[int, ...]  # the admitted versions, v0 (the PR's head) first
    branch: str
    pull_request: PullRequestRef | None  # the draft PR; None while nothing beyond v0 is admitted
    body: str  # the draft PR's description as last written ("" without one)
    refused: BranchOnly | None = None  # GitHub refused the job a pull request: where to open it


class ForkRefused(UsageError):
    """The pull request comes from a fork: its branch cannot be pushed to, its code is not run."""


def start_evolve(
    config: FreemadConfig,
    store: Store,
    forge: Forge,
    pr: PullRequestInfo,
    goal: str,
    workspace: Path,
    *,
    adapters: Adapters,
    remote: str = "origin",
    ports: Mapping[str, AgentPort] | None = None,
    worktrees_dir: Path | None = None,
    on_step: StepSink | None = None,
    web_url: str = "https://github.com",
) -> EvolveOnPr:
    """Start an evolve run from the head of `pr` and carry it until it waits, pauses or ends.

    `on_step(kind, data)` sees every step after it is stored (the first is `run_created`, whose
    data holds the run id), so a caller can link the run to the pull request at once.
    """
    refuse_fork(pr)
    job = Job(config, store, forge, pr, workspace, remote, ports, adapters, worktrees_dir, on_step)
    job.web_url = web_url
    fetch_commit(workspace, remote, pr.head_sha, pr)
    return job.finish(job.runner.start(goal))


def resume_evolve(
    config: FreemadConfig,
    store: Store,
    forge: Forge,
    pr: PullRequestInfo,
    run_id: str,
    workspace: Path,
    *,
    answer: str | None = None,
    decline: bool = False,
    adapters: Adapters,
    remote: str = "origin",
    ports: Mapping[str, AgentPort] | None = None,
    worktrees_dir: Path | None = None,
    on_step: StepSink | None = None,
    web_url: str = "https://github.com",
) -> EvolveOnPr:
    """Carry a run on in a later job: with a person's `answer`, their `decline`, or as it is.

    The run's events must be in `store`; its branch and tags are fetched from `remote` first.
    """
    refuse_fork(pr)
    if decline and answer is not None:
        raise UsageError("give either an answer or decline, not both")
    job = Job(config, store, forge, pr, workspace, remote, ports, adapters, worktrees_dir, on_step)
    job.web_url = web_url
    runner = job.runner
    state = runner.state(run_id)
    job.run_id = run_id
    fetch_lineage(workspace, remote, run_id, state.seed_commit, pr, state.branch)
    job.pull = forge.find_pull_request(pr.repo, head=state.branch, base=pr.head_ref)
    if decline:
        state = runner.decline(run_id)
    elif answer is not None:
        runner.answer(run_id, answer)
        state = runner.advance(run_id)
    else:
        state = runner.resume(run_id)
    return job.finish(state)


def refuse_fork(pr: PullRequestInfo) -> None:
    if pr.head_repo.lower() == pr.repo.lower():
        return
    origin = f"a fork ({pr.head_repo})" if pr.head_repo else "a fork that was deleted"
    raise ForkRefused(
        f"pull request #{pr.number} comes from {origin}: FREE-MAD cannot push to a fork's "
        "branch or open its draft pull request into one, and does not run a fork's code in a "
        "job that holds this repository's secrets",
        hint=f"push the branch to {pr.repo} and label a pull request from it",
    )


def push_lineage(workspace: Path, remote: str, state: EvolveState) -> None:
    """Push the run's admitted versions to `remote`, fast-forward only: the branch at the
    incumbent and a tag per version, each named by the commit the store admitted, never by the
    local refs (a worker may have moved those)."""
    if not state.versions:
        return
    branch = f"refs/heads/{state.branch or branch_name(state.run_id)}"
    specs = [f"{state.versions[-1].commit}:{branch}"]
    specs += [f"{v.commit}:refs/tags/{tag_name(state.run_id, v.version)}" for v in state.versions]
    push_refs(workspace, remote, specs)


def fetch_lineage(
    workspace: Path,
    remote: str,
    run_id: str,
    seed: str,
    pr: PullRequestInfo | None = None,
    branch: str = "",
) -> None:
    """Bring the run's branch (`branch`, as its start recorded it; "": the default prefix's) and
    tags from `remote` into the local repository (a fresh clone has neither), and its seed
    commit; a local branch ahead of the remote's is kept."""
    branch = branch or branch_name(run_id)
    local_ref, tracking = f"refs/heads/{branch}", f"refs/remotes/{remote}/{branch}"
    tags = f"refs/tags/evolve/{run_id}/"
    fetch_refs(workspace, remote, [f"{tags}*:{tags}*"])  # never forced: a moved tag is an error
    found = fetch_refs(workspace, remote, [f"+{local_ref}:{tracking}"])
    with local_repo(workspace) as repo:
        theirs = commit_of(repo, tracking) if found else None
        ours = commit_of(repo, local_ref)
        if theirs is not None and ours != theirs:
            if ours is None or is_ancestor(repo, ours, theirs):
                repo.git.update_ref("-m", "freemad: fetched", local_ref, theirs, ours or "")
            elif not is_ancestor(repo, theirs, ours):
                raise FreemadError(
                    f"{branch} here and on {remote} have diverged; FREE-MAD never force-pushes"
                )
    fetch_commit(workspace, remote, seed, pr)


class Job:
    """One job's part in a run: the runner, the pushes after each version, the draft PR."""

    def __init__(
        self,
        config: FreemadConfig,
        store: Store,
        forge: Forge,
        pr: PullRequestInfo,
        workspace: Path,
        remote: str,
        ports: Mapping[str, AgentPort] | None,
        adapters: Adapters,
        worktrees_dir: Path | None,
        on_step: StepSink | None,
        *,
        runner_type: type[EvolveRunner] = EvolveRunner,
    ) -> None:
        if config.evolve is None:
            raise ConfigError(
                "the config has no evolve: section; evolve runs on pull requests need one "
                "(see docs/evolve.md)"
            )
        root = workspace.resolve()
        evolve = config.evolve.model_copy(update={"repo_path": str(root), "seed_ref": pr.head_sha})
        self.runner = runner_type(
            config.model_copy(update={"evolve": evolve}),
            store,
            config_dir=root,
            ports=ports,
            on_step=self._step,
            worktrees_dir=worktrees_dir,
            adapters=adapters,
        )
        self.store, self.forge, self.pr = store, forge, pr
        self.workspace, self.remote, self.on_step = root, remote, on_step
        self.run_id: str | None = None
        self.pull: PullRequestRef | None = None
        self.refused: BranchOnly | None = None
        self.web_url = "https://github.com"
        self.shown = ""

    def _step(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "run_created":
            self.run_id = str(data["run_id"])
        if kind == "version_admitted" and int(data["version"]) >= 1:
            self._publish()
        if self.on_step is not None:
            self.on_step(kind, data)

    def _publish(self) -> None:
        """Push the lineage, then open the draft PR or bring its description up to date."""
        assert self.run_id is not None
        state = self.runner.state(self.run_id)
        tampered = self.runner.check_lineage(state)
        if tampered:
            raise FreemadError(
                f"evolve run {self.run_id}: its lineage was tampered with, nothing pushed: "
                + "; ".join(t.line() for t in tampered)
            )
        push_lineage(self.workspace, self.remote, state)
        events = [(e.kind, e.data) for e in self.store.events(self.run_id)]
        body = pull_body(self.pr, state, events)
        if self.pull is None:
            self.pull = self.forge.find_pull_request(
                self.pr.repo, head=state.branch, base=self.pr.head_ref
            )
        if self.pull is None and self.refused is None:
            opened = open_or_explain(
                self.forge,
                self.pr.repo,
                head=state.branch,
                base=self.pr.head_ref,
                title=f"FREE-MAD evolve: {one_line(state.goal, 60)}",
                body=body,
                draft=True,
                web_url=self.web_url,
            )
            if isinstance(opened, BranchOnly):
                self.refused = opened  # asked once a job: the branch is pushed all the same
            else:
                self.pull = opened
        elif self.pull is not None and body != self.shown:
            self.forge.edit_pull_request(self.pr.repo, self.pull.number, body=body)
        self.shown = body

    def finish(self, state: EvolveState) -> EvolveOnPr:
        if any(v.version >= 1 for v in state.versions):
            self._publish()  # pushes nothing new when each version was pushed as it came
        return EvolveOnPr(
            run_id=state.run_id,
            status=state.status.value,
            stop_reason=state.stop_reason,
            question=state.question,
            versions=tuple(v.version for v in state.versions),
            branch=state.branch,
            pull_request=self.pull,
            body=self.shown,
            refused=self.refused,
        )


def pull_body(
    pr: PullRequestInfo, state: EvolveState, events: Sequence[tuple[str, Mapping[str, Any]]]
) -> str:
    """The draft PR's description: status, incumbent, every judged iteration. Escaped throughout."""
    created = next((data for kind, data in events if kind == "run_created"), {})
    comparator = [c for c in created.get("comparator") or [] if isinstance(c, Mapping)]
    component = str(comparator[0]["component"]) if comparator else "value"
    where = f"{code_span(pr.head_ref)} at {code_span(state.seed_commit[:12])}"
    lines = [
        f"FREE-MAD evolve run {code_span(state.run_id)}, evolving #{pr.number} from {where}.",
        "",
        f"**Goal:** {escape_markdown(state.goal, 500)}",
        "",
        f"**Status:** {_status(state)}",
    ]
    incumbent = state.incumbent
    if incumbent is not None:
        scores = ", ".join(
            f"{escape_markdown(name)} = {format_number(value)}"
            for name, value in incumbent.components.items()
        )
        lines.append(
            f"\n**Incumbent:** v{incumbent.version} (iteration {incumbent.iteration}, "
            f"{code_span(incumbent.commit[:12])}): {scores}"
        )
    if state.status is Status.WAITING and state.question:
        lines += [
            "",
            f"**Question:** {escape_markdown(state.question, 1000)}",
            f"Answer on #{pr.number} with `/freemad answer DIRECTION`, or end the run with "
            "`/freemad decline`.",
        ]
    header = [
        "",
        f"| iteration | agent | verdict | {escape_markdown(component)} | change | reason |",
        "|--:|---|---|--:|---|---|",
    ]
    rows = [_row(row) for row in trajectory_rows(events)]
    footer = [
        "",
        f"Each admitted version is a commit on {code_span(state.branch)} tagged "
        f"{code_span(f'evolve/{state.run_id}/vN')}, its scores in an `Evolve-Score:` trailer. "
        f"Merging this pull request brings the incumbent into {code_span(pr.head_ref)}.",
    ]
    size = sum(len(line) + 1 for line in [*lines, *header, *footer])
    kept, room = len(rows), _BODY_LIMIT - size - 200
    while kept and sum(len(row) + 1 for row in rows[-kept:]) > room:
        kept = kept * 3 // 4
    left_out = len(rows) - kept
    note = [f"| … | | {left_out} earlier iterations left out | | | |"] if left_out else []
    return "\n".join([*lines, *header, *note, *rows[len(rows) - kept :], *footer]) + "\n"


def _row(row: Mapping[str, Any]) -> str:
    value = "-" if row["value"] is None else format_number(row["value"])
    cells = [
        str(row["iteration"]),
        escape_markdown(row["agent"]) or "-",
        escape_markdown(row["verdict"]),
        value,
        escape_markdown(row["summary"]),
        escape_markdown(row["reason"]),
    ]
    return "| " + " | ".join(cells) + " |"


def _status(state: EvolveState) -> str:
    if state.status is Status.STOPPED:
        return f"stopped ({escape_markdown(state.stop_reason or 'no reason')})"
    if state.status is Status.FAILED:
        return f"failed: {escape_markdown(state.error or 'no reason', 300)}"
    if state.status is Status.WAITING:
        return "waiting for a person"
    return str(state.status.value)


def fetch_commit(workspace: Path, remote: str, sha: str, pr: PullRequestInfo | None) -> None:
    """Make `sha` present locally: fetched by id, else through the PR's refs."""
    if not _OBJECT_ID.fullmatch(sha):
        raise UsageError(f"{sha!r} is not a full commit id")
    sources = [sha]
    if pr is not None:
        sources += [f"refs/pull/{pr.number}/head", f"refs/heads/{pr.head_ref}"]
    why = "was the pull request force-pushed?"
    for source in [None, *sources]:
        if source is not None:
            try:
                fetch_refs(workspace, remote, [source])
            except FreemadError as exc:
                why = exc.one_line()
                continue  # say, a server that serves no commit by id: the next source
        with local_repo(workspace) as repo:
            if commit_of(repo, sha) == sha:
                return
    raise FreemadError(f"cannot fetch commit {sha[:12]} from {remote}: {why}")
