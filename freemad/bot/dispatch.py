"""The actions executor's job: a delivery turned into a `workflow_dispatch` of the repository's
FREE-MAD workflow, run by `freemad bot worker` from the durable queue like any other job.

The web edge only records and enqueues (GitHub waits 10 s for its answer; GitHub's own answers,
and their retries, can take longer). The job checks who asked (the dispatched run works as the
App, so this is the only place that knows), dispatches `freemad.yml` with the command as inputs,
and comments with a link to the run GitHub started (or, where GitHub does not say which run that
is, to the workflow's runs). Its writes go through `journal.JournalForge`, so a job run again
after its worker died neither dispatches nor comments twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from freemad.bot.journal import JournalForge, LeaseLost
from freemad.errors import FreemadError

if TYPE_CHECKING:
    from freemad.bot.journal import Claim
    from freemad.bot.ports import Delivery
    from freemad.bot.settings import BotSettings
    from freemad.github.forge import Forge
    from freemad.github.thread import Outcome  # its module reaches git: the web edge loads none

log = logging.getLogger("freemad.bot.worker")

WORKFLOW = "freemad.yml"


@dataclass(frozen=True)
class Dispatch:
    """What one delivery asks of the workflow: where, for whom, and the inputs."""

    repo: str
    number: int
    ref: str
    login: str
    login_type: str
    verb: str
    inputs: dict[str, str]
    runs_url: str


def dispatch_for(delivery: Delivery, *, self_login: str | None = None) -> Dispatch | str:
    """The dispatch a delivery calls for, or why there is none (pure: no I/O).

    A `freemad:*` label gives `mode` = the label's mode and `issue`; a comment (on an issue, a
    pull request, or a pull request's diff) gives `mode=auto`, `requirement` = the comment's text
    and `issue`, and a comment on the diff `review-comment` = its id: the job re-reads and routes
    the command, and answers where it was asked.
    """
    from freemad.core.commands import CommandError, parse_comment
    from freemad.github.events import (
        IssueCommentEvent,
        IssuesEvent,
        PullRequestEvent,
        PullRequestReviewCommentEvent,
        parse_event,
    )
    from freemad.github.routing import label_mode, route

    event = parse_event(delivery.event, delivery.body)
    routed = route(event, self_login=self_login)
    if routed.route == "command" and isinstance(
        event, (IssueCommentEvent, PullRequestReviewCommentEvent)
    ):
        try:
            command = parse_comment(event.comment.body)
        except CommandError:
            command = None
            verb = "help"  # the job answers with the error, as the router does for everyone
        else:
            if command is None:
                return "the comment is not a /freemad command"
            verb = command.verb
        thread = event.issue if isinstance(event, IssueCommentEvent) else event.pull_request
        number, user = thread.number, event.comment.user
        inputs = {"mode": "auto", "requirement": event.comment.body}
        if isinstance(event, PullRequestReviewCommentEvent):  # answered in its review thread
            inputs["review-comment"] = str(event.comment.id)
    elif routed.route == "start_from_label" and isinstance(event, (IssuesEvent, PullRequestEvent)):
        verb = label_mode(event) or ""
        number = event.issue.number if isinstance(event, IssuesEvent) else event.number
        user, inputs = event.sender, {"mode": verb, "requirement": ""}
    else:
        return routed.reason
    if user is None:  # routing ignores these first; no dispatch without someone to check
        return "the event names nobody whose access could be checked"
    repository = event.repository
    return Dispatch(
        repo=repository.full_name,
        number=number,
        ref=repository.default_branch,
        login=user.login,
        login_type=user.type,
        verb=verb,
        inputs={**inputs, "issue": str(number), "sender": user.login},
        runs_url=f"{repository.html_url}/actions/workflows/{WORKFLOW}",
    )


def dispatch_delivery(
    settings: BotSettings, delivery: Delivery, forge: Forge, claim: Claim
) -> Outcome:
    """What an actions executor's job does with a delivery: check, dispatch, comment."""
    from freemad.config import default_config, load_config
    from freemad.github.events import PayloadError
    from freemad.github.thread import Outcome

    config = load_config(settings.config_path) if settings.config_path else default_config()
    github = config.github
    try:
        plan = dispatch_for(delivery, self_login=github.self_login)
    except PayloadError as exc:
        plan = exc.one_line()
    if isinstance(plan, str):
        return Outcome("ignored", plan[:500])
    journal = JournalForge(forge, claim)
    refused = _refused(journal, plan, tuple(github.allowed_bots), github.self_login)
    if refused is not None:
        return Outcome("ignored", refused[:500])
    run_url, review = _dispatch(journal, plan)
    what = f"`/freemad {plan.verb}`" if plan.inputs["mode"] == "auto" else f"`{plan.verb}`"
    if plan.verb == "help" and plan.inputs["mode"] == "auto":
        what = "this command"  # malformed: the job answers with what is wrong
    if run_url:
        said = f"FREE-MAD started {what} on GitHub Actions: follow it in [its run]({run_url})."
    else:  # GitHub Enterprise Server and older GitHub do not say which run a dispatch started
        said = (
            f"FREE-MAD dispatched {what} to GitHub Actions, which did not say which run took "
            f"it: look for it among [the {WORKFLOW} runs]({plan.runs_url})."
        )
    try:
        if review:  # the command was on the diff: the link goes in its review thread
            journal.reply_in_review_thread(plan.repo, plan.number, int(review), said)
        else:
            journal.comment(plan.repo, plan.number, said)
    except LeaseLost:
        raise
    except FreemadError as exc:  # the run is started; the link is a courtesy
        log.warning("dispatched, but could not comment: %s", exc.one_line())
    detail = f"{WORKFLOW} on {plan.repo}@{plan.ref} for #{plan.number}"
    return Outcome("dispatched", detail + (f": {run_url}" if run_url else ""))


def _refused(forge: Forge, plan: Dispatch, bots: tuple[str, ...], me: str | None) -> str | None:
    from freemad.core.permissions import Actor, may_act
    from freemad.github.refusals import refuse_once

    permission = forge.permission(plan.repo, plan.login)
    actor = Actor(plan.login, plan.login_type)
    decision = may_act(actor, permission, plan.verb, allowed_bots=bots, self_login=me)  # type: ignore[arg-type]  # one of PERMISSIONS, or None
    if decision.allowed:
        return None
    if decision.reason:  # once per person and thread, as the router refuses
        refuse_once(forge, plan.repo, plan.number, plan.login, decision.reason, self_login=me)
    return decision.detail or decision.reason or "not allowed"


def _dispatch(journal: JournalForge, plan: Dispatch) -> tuple[str | None, str]:
    """Dispatch the workflow; the run's address (when GitHub says it) and the comment on the
    diff the command came from ("" for none). A workflow written before `review-comment` existed
    refuses that input (GitHub's 422, "Unexpected inputs provided"): it is dispatched again
    without it, and its job answers in the conversation, as it did before."""
    from freemad.github.forge import ForgeError

    review = plan.inputs.get("review-comment", "")
    try:
        return journal.dispatch_workflow(plan.repo, WORKFLOW, plan.ref, plan.inputs), review
    except ForgeError as exc:
        if not review or exc.status != 422 or "review-comment" not in str(exc):
            raise
    log.warning(
        "%s on %s does not declare the review-comment input: its job answers %s#%s in the "
        "conversation (add the input, as docs/bot.md shows, to answer in the review thread)",
        WORKFLOW,
        plan.repo,
        plan.repo,
        plan.number,
    )
    inputs = {k: v for k, v in plan.inputs.items() if k != "review-comment"}
    return journal.dispatch_workflow(plan.repo, WORKFLOW, plan.ref, inputs), review
