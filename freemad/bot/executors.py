"""Where the web edge hands accepted deliveries: the local durable queue, or GitHub Actions.

`LocalExecutor` enqueues on huey (SQLite or Redis) for `freemad bot worker`. `ActionsExecutor`
keeps the bot stateless: it checks who asked (the dispatched job runs as the App, so this is the
only place that knows), dispatches the repository's FREE-MAD workflow with the command as
inputs, and comments on the issue with a link to the run GitHub started (or, where GitHub does
not say which run that is, to the workflow's runs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from freemad.bot.auth import TokenSource, forge_for, token_source_from
from freemad.bot.job import Job
from freemad.bot.queue import HEARTBEAT_KEY, enqueue, job_row, make_huey, register
from freemad.errors import FreemadError

if TYPE_CHECKING:
    from freemad.bot.ports import Delivery, DeliveryStore, Executor
    from freemad.bot.settings import BotSettings
    from freemad.config.models import FreemadConfig
    from freemad.github.forge import Forge

log = logging.getLogger("freemad.bot.executors")

WORKFLOW = "freemad.yml"


def executor_from(settings: BotSettings, *, background_checkpoint: bool = False) -> Executor:
    """The executor FREEMAD_EXECUTOR names (`local` by default); `background_checkpoint` as
    `make_huey`'s (the web edge's)."""
    if settings.executor == "actions":
        return ActionsExecutor(token_source_from(settings), settings)
    huey = make_huey(settings, background_checkpoint=background_checkpoint)
    register(huey, Job(settings))
    return LocalExecutor(huey)


class LocalExecutor:
    """Deliveries onto the local queue; the web edge has recorded each one already."""

    quick_submit = True  # an enqueue, never a call to GitHub

    def __init__(self, huey: Any) -> None:
        self.huey = huey

    def submit(self, delivery: Delivery) -> None:
        enqueue(self.huey, delivery.delivery_id)

    @property
    def queue_file(self) -> Path | None:
        """The SQLite file whose table is the queue; None when the queue is in Redis."""
        filename = getattr(self.huey.storage, "filename", None)
        return Path(filename) if isinstance(filename, str) else None

    def job_row(self, delivery: Delivery) -> tuple[str, tuple[object, ...]]:
        """`submit` as one SQL statement on `queue_file`, for a transaction of the caller's."""
        return job_row(self.huey, delivery.delivery_id)

    def depth(self) -> int | None:
        """Jobs waiting: queued, and retries scheduled for later."""
        return int(self.huey.pending_count()) + int(self.huey.scheduled_count())

    def heartbeat(self) -> float | None:
        """When a worker last said it was alive (a row in the queue's own store)."""
        value = self.huey.get(HEARTBEAT_KEY, peek=True)
        return float(value) if isinstance(value, (int, float)) else None


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
    and `issue`: the job re-reads and routes the command.
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


class ActionsExecutor:
    """Deliveries onto GitHub Actions: one `workflow_dispatch` of `freemad.yml` each."""

    quick_submit = False  # each submit waits on GitHub

    def __init__(
        self,
        tokens: TokenSource,
        settings: BotSettings,
        *,
        deliveries: DeliveryStore | None = None,
        forge_factory: Callable[[int | None], Forge] | None = None,
    ) -> None:
        from freemad.bot.stores import delivery_log

        self.tokens, self.settings = tokens, settings
        self.deliveries = deliveries or delivery_log(settings)
        self._forge_factory = forge_factory
        self._config: FreemadConfig | None = None

    @property
    def config(self) -> FreemadConfig:
        if self._config is None:  # for self_login and allowed_bots; read once
            from freemad.config import default_config, load_config

            path = self.settings.config_path
            self._config = load_config(path) if path else default_config()
        return self._config

    def submit(self, delivery: Delivery) -> None:
        """Check, dispatch and comment; raises (so the web edge answers 503) only if the
        dispatch itself failed, since after it a retry would start a second run."""
        from freemad.github.events import PayloadError

        github = self.config.github
        try:
            plan = dispatch_for(delivery, self_login=github.self_login)
        except PayloadError as exc:
            plan = exc.one_line()
        if isinstance(plan, str):
            self.deliveries.mark(delivery.delivery_id, "ignored", plan[:500])
            return
        forge = self._forge(delivery.installation_id)
        try:
            self._dispatch(forge, plan, delivery)
        finally:
            close = getattr(forge, "close", None)
            if callable(close):
                close()

    def _dispatch(self, forge: Forge, plan: Dispatch, delivery: Delivery) -> None:
        github = self.config.github
        refused = self._refused(forge, plan, tuple(github.allowed_bots), github.self_login)
        if refused is not None:
            self.deliveries.mark(delivery.delivery_id, "ignored", refused[:500])
            return
        run_url = forge.dispatch_workflow(plan.repo, WORKFLOW, plan.ref, plan.inputs)
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
            forge.comment(plan.repo, plan.number, said)
        except FreemadError as exc:  # the run is started; the link is a courtesy
            log.warning("dispatched, but could not comment: %s", exc.one_line())
        detail = f"dispatched {WORKFLOW} on {plan.repo}@{plan.ref} for #{plan.number}"
        detail += f": {run_url}" if run_url else ""
        self.deliveries.mark(delivery.delivery_id, "done", detail)

    def _refused(
        self, forge: Forge, plan: Dispatch, bots: tuple[str, ...], me: str | None
    ) -> str | None:
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

    def _forge(self, installation_id: int | None) -> Forge:
        if self._forge_factory is not None:
            return self._forge_factory(installation_id)
        return forge_for(self.settings, installation_id, tokens=self.tokens)

    def depth(self) -> int | None:
        return None

    def heartbeat(self) -> float | None:
        return None
