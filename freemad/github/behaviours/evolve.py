"""Evolve runs on a pull request: `/freemad evolve GOAL` (or the `freemad:evolve` label) starts
one from the PR's head; answer, decline and resume carry it on, pause, stop and status control it.

The git and pull-request work (the lineage pushed to `freemad/evolve/<run-id>`, the draft PR) is in
`freemad.github.evolve_pr`; this module connects it to the thread: the progress comment, the link
from the thread to its run, and replies when it fails.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from freemad.config.models import FreemadConfig
from freemad.core.commands import Command
from freemad.core.evolve.fold import EvolveState
from freemad.errors import FreemadError
from freemad.evolve.evolve_runner import EvolveRunner
from freemad.github.comments import render_evolve
from freemad.github.evolve_pr import EvolveOnPr, PullRequestInfo, resume_evolve, start_evolve
from freemad.github.public_text import public_reason
from freemad.github.thread import LinkedRun, Outcome, Thread
from freemad.markdown import escape_markdown

# --- starting a run ---------------------------------------------------------------------------


def start(thread: Thread, goal: str, options: Mapping[str, Any]) -> Outcome:
    """An evolve run toward `goal` from the pull request's head, carried until it waits or ends."""
    refused = thread.refuse_without_checkout("evolve")
    if refused is not None:
        return refused
    if not thread.is_pull_request:
        reason = "evolve runs start on a pull request: its head is the seed, v0."
        return thread.reply("refused_by_run", reason=reason)
    progress = thread.comment(thread.starting("an evolve run"))
    links: list[str] = []

    def step(kind: str, data: dict[str, Any]) -> None:
        if kind == "run_created":
            links.append(str(data["run_id"]))
            thread.link(str(data["run_id"]), "evolve", progress.id)

    try:
        run = start_evolve(
            _with_options(thread.config, options),
            thread.store,
            thread.forge,
            pull_request_info(thread),
            goal,
            thread.settings.workspace,
            ports=thread.ports,
            adapters=thread.adapters,
            on_step=step,
            web_url=thread.settings.web_url,
        )
    except FreemadError as exc:
        shown = escape_markdown(public_reason(exc), 500)  # may quote branch names from the PR
        thread.edit_comment(progress.id, f"FREE-MAD could not run: {shown}")
        return Outcome("refused", exc.one_line(), run_id=links[0] if links else None)
    body = _show(thread, progress.id, run, goal)
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


# --- carrying a run on ------------------------------------------------------------------------


def answer(thread: Thread, run: LinkedRun, command: Command, login: str) -> Outcome:
    """`/freemad answer DIRECTION`: the waiting run's answer; the run goes on from it."""
    return _carry_on(thread, run, command, answer=thread.clean(command.full_text))


def decline(thread: Thread, run: LinkedRun, command: Command, login: str) -> Outcome:
    """`/freemad decline`: the waiting run goes on without an answer."""
    return _carry_on(thread, run, command, decline=True)


def resume(thread: Thread, run: LinkedRun, command: Command, login: str) -> Outcome:
    return _carry_on(thread, run, command)


def _carry_on(
    thread: Thread,
    run: LinkedRun,
    command: Command,
    *,
    answer: str | None = None,
    decline: bool = False,
) -> Outcome:
    """Carry the run on in this job (its lineage fetched first) and update its comment."""
    try:
        carried = resume_evolve(
            thread.config,
            thread.store,
            thread.forge,
            pull_request_info(thread),
            run.run_id,
            thread.settings.workspace,
            answer=answer,
            decline=decline,
            ports=thread.ports,
            adapters=thread.adapters,
            web_url=thread.settings.web_url,
        )
    except FreemadError as exc:
        return thread.reply("refused_by_run", reason=exc.one_line())
    row = thread.store.run(run.run_id)
    goal = str(row.summary.get("goal", "")) if row is not None else ""
    body = _show(thread, run.comment_id, carried, goal)
    return Outcome("steered", command.verb, run_id=run.run_id, status=carried.status, summary=body)


# --- controlling a run ------------------------------------------------------------------------


def pause(thread: Thread, run: LinkedRun, command: Command, login: str) -> Outcome:
    return _control(thread, run, command, EvolveRunner.pause)


def stop(thread: Thread, run: LinkedRun, command: Command, login: str) -> Outcome:
    return _control(thread, run, command, EvolveRunner.stop)


def status(thread: Thread, run: LinkedRun, command: Command, login: str) -> Outcome:
    return _control(thread, run, command, EvolveRunner.state)


def _control(
    thread: Thread,
    run: LinkedRun,
    command: Command,
    act: Callable[[EvolveRunner, str], EvolveState],
) -> Outcome:
    try:
        runner = EvolveRunner(thread.config, thread.store, config_dir=thread.settings.workspace)
        state = act(runner, run.run_id)
    except FreemadError as exc:
        return thread.reply("refused_by_run", reason=exc.one_line())
    return Outcome("steered", command.verb, run_id=run.run_id, status=state.status.value)


def refuse(thread: Thread, run: LinkedRun, command: Command, login: str) -> Outcome:
    """approve and reject are for tasks' stages: an evolve run has none."""
    reason = (
        f"/freemad {command.verb} steers tasks; an evolve run takes answer, decline, resume, "
        "pause, stop and status."
    )
    return thread.reply("refused_by_run", reason=reason)


# --- shared -----------------------------------------------------------------------------------


def pull_request_info(thread: Thread) -> PullRequestInfo:
    """The pull request the run evolves: from the event's payload, else asked of GitHub."""
    if thread.pull is not None:
        return thread.pull
    found = thread.forge.pull_request(thread.repo, thread.number)
    return PullRequestInfo(
        thread.repo, found.number, found.head_ref, found.head_sha, found.base_ref, found.head_repo
    )


def _show(thread: Thread, comment_id: int, run: EvolveOnPr, goal: str) -> str:
    run_url = thread.settings.run_url("evolve", run.run_id)
    body = render_evolve(run, goal, run_url, thread.settings.job_url)
    thread.edit_comment(comment_id, body)
    return body
