"""Evolve runs on pull requests and publishing code tasks, as the router drives them from a thread.

The git and pull-request work is in `evolve_pr` and `publish`; this module only connects it to a
thread: the progress comment, the link from the thread to its run, and replies when it fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from freemad.config.models import FreemadConfig
from freemad.core.commands import Command
from freemad.core.untrusted import clean
from freemad.errors import FreemadError
from freemad.github.comments import render_evolve
from freemad.github.evolve_pr import EvolveOnPr, PullRequestInfo, resume_evolve, start_evolve
from freemad.github.forge import PullRequestRef
from freemad.github.publish import publish_task, stash_task_branch
from freemad.github.pulls import BranchOnly
from freemad.markdown import escape_markdown

if TYPE_CHECKING:
    from freemad.github.router import Outcome, Router, Thread


def pull_request_info(router: Router, thread: Thread) -> PullRequestInfo:
    if thread.pull is not None:
        return thread.pull
    found = router.forge.pull_request(thread.repo, thread.number)
    return PullRequestInfo(
        thread.repo, found.number, found.head_ref, found.head_sha, found.base_ref, found.head_repo
    )


def start(
    router: Router, thread: Thread, goal: str, options: Mapping[str, Any] | None = None
) -> Outcome:
    from freemad.github.router import Outcome

    if not thread.is_pull_request:
        reason = "evolve runs start on a pull request: its head is the seed, v0."
        return router.reply(thread, "refused_by_run", reason=reason)
    progress = router.forge.comment(thread.repo, thread.number, router.starting("an evolve run"))
    links: list[str] = []

    def step(kind: str, data: dict[str, Any]) -> None:
        if kind == "run_created":
            links.append(str(data["run_id"]))
            router.link(thread, str(data["run_id"]), "evolve", progress.id)

    try:
        info = pull_request_info(router, thread)
        run = start_evolve(
            _with_options(router.config, options or {}),
            router.store,
            router.forge,
            info,
            goal,
            router.settings.workspace,
            ports=router.ports,
            on_step=step,
            web_url=router.settings.web_url,
        )
    except FreemadError as exc:
        shown = escape_markdown(exc.one_line(), 500)  # may quote branch names from the PR
        router.forge.edit_comment(thread.repo, progress.id, f"FREE-MAD could not run: {shown}")
        return Outcome("refused", exc.one_line(), run_id=links[0] if links else None)
    body = _show(router, thread, progress.id, run, goal)
    return Outcome(
        "evolve", run_id=run.run_id, status=run.status, comment_url=progress.html_url, summary=body
    )


def _with_options(config: FreemadConfig, options: Mapping[str, Any]) -> FreemadConfig:
    """The config with a command's `max_iterations=N` applied to the evolve run."""
    limit = options.get("max_iterations")
    if config.evolve is None or limit is None:
        return config
    stop = config.evolve.stop.model_copy(update={"max_iterations": int(limit)})
    evolve = config.evolve.model_copy(update={"stop": stop})
    return config.model_copy(update={"evolve": evolve})


def steer(router: Router, thread: Thread, link: dict[str, Any], command: Command) -> Outcome:
    from freemad.evolve.runtime import EvolveRunner
    from freemad.github.router import Outcome

    run_id, comment_id = str(link["run_id"]), int(link["comment_id"])
    verb = command.verb
    try:
        if verb in ("pause", "stop", "status"):
            runner = EvolveRunner(router.config, router.store, config_dir=router.settings.workspace)
            state = (
                runner.pause(run_id)
                if verb == "pause"
                else runner.stop(run_id)
                if verb == "stop"
                else runner.state(run_id)
            )
            return Outcome("steered", verb, run_id=run_id, status=state.status.value)
        if verb not in ("answer", "decline", "resume"):
            reason = f"/freemad {verb} steers tasks; an evolve run takes answer, decline, resume, pause, stop and status."
            return router.reply(thread, "refused_by_run", reason=reason)
        text = (
            clean(command.full_text, limit=router.config.github.max_text_chars)
            if verb == "answer"
            else None
        )
        run = resume_evolve(
            router.config,
            router.store,
            router.forge,
            pull_request_info(router, thread),
            run_id,
            router.settings.workspace,
            answer=text,
            decline=verb == "decline",
            ports=router.ports,
            web_url=router.settings.web_url,
        )
    except FreemadError as exc:
        return router.reply(thread, "refused_by_run", reason=exc.one_line())
    row = router.store.run(run_id)
    goal = str(row.summary.get("goal", "")) if row is not None else ""
    body = _show(router, thread, comment_id, run, goal)
    return Outcome("steered", verb, run_id=run_id, status=run.status, summary=body)


def _show(router: Router, thread: Thread, comment_id: int, run: EvolveOnPr, goal: str) -> str:
    run_url = router.settings.run_url("evolve", run.run_id)
    body = render_evolve(run, goal, run_url, router.settings.job_url)
    router.forge.edit_comment(thread.repo, comment_id, body)
    return body


def after_task_step(router: Router, task_id: str, task_type: str) -> None:
    """A code task's branch is kept on origin under a hidden ref (not a branch, no pull request)
    so a later job can publish it once someone approves."""
    if task_type == "code":
        stash_task_branch(router.settings.workspace, task_id)


def publish(router: Router, thread: Thread, task_id: str) -> PullRequestRef | BranchOnly:
    """The pull request of an approved code task, or the pushed branch GitHub refused one for."""
    return publish_task(
        router.config,
        router.store,
        router.forge,
        thread.repo,
        task_id,
        router.settings.workspace,
        base=thread.default_branch,
        issue=thread.number,
        web_url=router.settings.web_url,
    )
