"""`freemad github generation plan|candidate|admit`: an evolve generation judged by a matrix of
GitHub Actions jobs (.github/workflows/freemad-evolve-matrix.yml runs the three)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from freemad.errors import UsageError

if TYPE_CHECKING:
    from freemad.config.models import FreemadConfig
    from freemad.github.evolve_matrix import Holder


@click.group("generation")
def generation_group() -> None:
    """An evolve generation judged by a matrix of jobs, one candidate on each runner.

    \b
    plan       carry the run to its next generation, start it, output the matrix
    candidate  work and judge one candidate; write its result folder (no store, no ref)
    admit      store the result folders, decide and admit; push the state and the lineage

    Each reads GITHUB_REPOSITORY, GITHUB_WORKSPACE and GITHUB_OUTPUT; plan and admit also
    GITHUB_TOKEN, GITHUB_API_URL and GITHUB_SERVER_URL. docs/evolve.md has the design.
    """


_config = click.option(
    "--config",
    "config_path",
    required=True,
    help="The FREE-MAD config file with an evolve: section, relative to the workspace.",
)
_run_id = click.option("--run-id", help="The evolve run, as the state branch holds it.")
_pull = click.option(
    "--pull-request", type=click.IntRange(min=1), required=True, help="The pull request evolved."
)
_remote = click.option("--remote", default="origin", show_default=True, help="The git remote.")


@generation_group.command("plan")
@_config
@_pull
@click.option("--goal", help="Start a new run toward this goal from the pull request's head.")
@_run_id
@_remote
def plan(
    config_path: str, pull_request: int, goal: str | None, run_id: str | None, remote: str
) -> None:
    """Start a run (--goal) or carry one on (--run-id) up to its next generation; output the
    candidates to judge as the matrix {"candidate": [...]} (only those not measured yet)."""
    from freemad.github import workflow_io as io
    from freemad.github.evolve_matrix import plan_job

    with _holder(config_path, pull_request, remote) as holder:
        planned = plan_job(holder, run_id=run_id, goal=goal)
    outputs = planned.outputs()
    io.set_outputs(os.environ.get("GITHUB_OUTPUT"), outputs)
    click.echo(json.dumps(outputs, indent=2))


@generation_group.command("candidate")
@_config
@click.option("--run-id", required=True, help="The evolve run, as the state branch holds it.")
@click.option("--candidate", type=click.IntRange(min=0), required=True, help="Its index.")
@click.option(
    "--out",
    default="freemad-result",
    show_default=True,
    help="Where to write the folder candidate-<g>-<k>/ (relative to the workspace).",
)
@_remote
def candidate(config_path: str, run_id: str, candidate: int, out: str, remote: str) -> None:
    """Work and judge one candidate of the generation in flight, writing its result folder and
    nothing else; a candidate measured already is left alone."""
    from freemad.github import workflow_io as io
    from freemad.github.evolve_matrix import candidate_job, check_workspace
    from freemad.wiring import ADAPTERS, open_store

    workspace = check_workspace(Path(os.environ.get("GITHUB_WORKSPACE") or "."))
    config = _load(config_path, workspace)
    target = Path(out) if Path(out).is_absolute() else workspace / out
    with (
        tempfile.TemporaryDirectory(prefix="freemad-candidate-") as folder,
        open_store(Path(folder) / "runs.db") as store,
    ):
        written = candidate_job(
            config, store, workspace, run_id, candidate, target, adapters=ADAPTERS, remote=remote
        )
    outputs = {"folder": str(written or ""), "artifact": written.name if written else ""}
    io.set_outputs(os.environ.get("GITHUB_OUTPUT"), outputs)
    if written is None:
        io.notice(f"candidate {candidate} of run {run_id} is measured already: nothing to do")
    click.echo(json.dumps(outputs, indent=2))


@generation_group.command("admit")
@_config
@_pull
@click.option("--run-id", required=True, help="The evolve run, as the state branch holds it.")
@click.option(
    "--results",
    default="freemad-results",
    show_default=True,
    help="The folder the candidates' artifacts were downloaded into, one folder each.",
)
@click.option(
    "--carry-on",
    is_flag=True,
    help="When the run goes on, start the workflow this job runs in again for its next "
    "generation (GITHUB_WORKFLOW_REF; the job's token needs actions: write).",
)
@_remote
def admit(
    config_path: str, pull_request: int, run_id: str, results: str, carry_on: bool, remote: str
) -> None:
    """Store each candidate's result (refusing malformed or hostile ones as failed candidates),
    then decide, confirm and admit the generation as a local run does."""
    from freemad.core.evolve.fold import Status
    from freemad.github import workflow_io as io
    from freemad.github.evolve_matrix import admit_job, next_generation

    started = ""
    with _holder(config_path, pull_request, remote) as holder:
        folder = Path(results) if Path(results).is_absolute() else holder.workspace / results
        report = admit_job(holder, run_id, folder)
        state = report.admitted.state
        if carry_on and state.status is Status.RUNNING:
            workflow = os.environ.get("GITHUB_WORKFLOW_REF", "")
            started = next_generation(holder.forge, workflow, pull_request, run_id)
            io.notice(f"the next generation of run {run_id}: {started}")
    for line in report.lines():
        (io.error if line.startswith("refused") else io.notice)(line)
    io.set_outputs(
        os.environ.get("GITHUB_OUTPUT"),
        {
            "run-id": run_id,
            "status": state.status.value,
            "missing": str(len(report.admitted.missing)),
            "next": started,
        },
    )
    io.add_summary(
        os.environ.get("GITHUB_STEP_SUMMARY"), report.run.body or "\n".join(report.lines())
    )
    versions = [f"v{v.version}" for v in state.versions]
    click.echo(json.dumps({"run_id": run_id, "status": state.status.value, "versions": versions}))


@contextmanager
def _holder(config_path: str, number: int, remote: str) -> Iterator[Holder]:
    """The planner's and the admitting job's holder: the config, a scratch store, the forge."""
    from freemad.github.evolve_matrix import Holder, check_workspace
    from freemad.github.evolve_pr import PullRequestInfo
    from freemad.github.pulls import web_url_of
    from freemad.github.pygithub_forge import PyGithubForge
    from freemad.wiring import ADAPTERS, open_store

    environ: Mapping[str, str] = os.environ
    repo = environ.get("GITHUB_REPOSITORY", "")
    token = environ.get("GITHUB_TOKEN", "")
    if "/" not in repo:
        raise UsageError("GITHUB_REPOSITORY is not set: this runs inside a GitHub Actions job")
    if not token:
        raise UsageError("GITHUB_TOKEN is not set: pass ${{ github.token }} in the step's env")
    workspace = check_workspace(Path(environ.get("GITHUB_WORKSPACE") or "."))
    config = _load(config_path, workspace)
    api = environ.get("GITHUB_API_URL") or "https://api.github.com"
    with (
        tempfile.TemporaryDirectory(prefix="freemad-generation-") as folder,
        open_store(Path(folder) / "runs.db") as store,
        PyGithubForge(token, base_url=api) as forge,
    ):
        found = forge.pull_request(repo, number)
        pr = PullRequestInfo(
            repo, found.number, found.head_ref, found.head_sha, found.base_ref, found.head_repo
        )
        yield Holder(
            config,
            store,
            forge,
            pr,
            workspace,
            ADAPTERS,
            remote=remote,
            web_url=environ.get("GITHUB_SERVER_URL") or web_url_of(api),
        )


def _load(config_path: str, workspace: Path) -> FreemadConfig:
    from freemad.config import load_config

    if not config_path.strip():
        raise UsageError(
            "--config is empty: name the config with an evolve: section (the workflow's config "
            "input, or the repository variable FREEMAD_CONFIG)"
        )
    path = Path(config_path)
    return load_config(path if path.is_absolute() else workspace / path)
