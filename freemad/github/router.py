"""One router for both front doors (the Action and the webhook bot): an event in, runs and comments out.

`Router.handle(event_name, payload)` parses the payload, routes it (`routing`), checks who may act
(the collaborator permission API, never `author_association` alone), builds the thread the
behaviours take (`thread.Thread`: the issue or pull request and the clients), and hands it to the
verb's handler in the verb table (`verbs.VERBS`). What each verb does is in its behaviour's module
(`freemad.github.behaviours`); untrusted text is cleaned there before any agent sees it (on stdin
only, never argv).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from freemad.adapters import Adapters
from freemad.agents.agent_port import AgentPort
from freemad.config.models import FreemadConfig
from freemad.core.commands import Command, CommandError, parse_comment
from freemad.core.permissions import Actor, may_act
from freemad.github.behaviours import debate
from freemad.github.events import (
    IssueCommentEvent,
    IssuesEvent,
    PullRequestEvent,
    PullRequestReviewCommentEvent,
    User,
    WorkflowDispatchEvent,
    parse_event,
)
from freemad.github.evolve_pr import PullRequestInfo
from freemad.github.forge import Forge, ForgeError
from freemad.github.refusals import refuse_once
from freemad.github.routing import CommentEvent, Routed, label_mode, route
from freemad.github.thread import Clients, Outcome, Settings, Thread
from freemad.github.verbs import VERBS, verb_of
from freemad.store import Store

_log = logging.getLogger("freemad.github")
# The pull_request actions a review follows, where the workflow opted in (review-pull-requests).
REVIEW_ON_PUSH = ("opened", "synchronize", "reopened", "ready_for_review")


class Router:
    """Events in, the verb table looked up, the handler given the thread: see the module doc."""

    def __init__(
        self,
        config: FreemadConfig,
        forge: Forge,
        store: Store,
        settings: Settings | None = None,
        *,
        adapters: Adapters,
        ports: Mapping[str, AgentPort] | None = None,
    ) -> None:
        """`adapters` run what the behaviours start (the front door's, from `freemad.wiring`);
        an agent in `ports` answers through its port there instead."""
        self.config = config
        self.forge = forge
        self.store = store
        self.settings = settings or Settings()
        self.ports = dict(ports or {})
        self.clients = Clients(config, forge, store, self.settings, self.ports, adapters)
        self._bots = (*self.settings.allowed_bots, *config.github.allowed_bots)
        self._self = self.settings.self_login or config.github.self_login

    def handle(self, event_name: str, payload: Mapping[str, Any] | bytes | str) -> Outcome:
        event = parse_event(event_name, payload)
        if isinstance(event, PullRequestEvent) and event.action in REVIEW_ON_PUSH:
            return self._review_on_push(event)
        routed = route(event, self_login=self._self)
        if routed.route == "ping":
            return Outcome("ignored", "ping: nothing to do")
        if routed.route == "ignore":
            return Outcome("ignored", routed.reason)
        if (
            isinstance(event, (IssueCommentEvent, PullRequestReviewCommentEvent))
            and routed.route == "command"
        ):
            return self._comment(event)
        if isinstance(event, (IssuesEvent, PullRequestEvent)) and routed.route in (
            "start_from_label",
            "help",
        ):
            return self._label(event, routed)
        if isinstance(event, WorkflowDispatchEvent):
            return Outcome("ignored", "workflow_dispatch is handled by `freemad github action`")
        return Outcome("ignored", routed.reason)

    def debate_on(self, requirement: str, rounds: int | None) -> Outcome:
        """A debate with no issue to answer on (workflow_dispatch): the outcome carries it all."""
        return debate.debate_on(self.clients, requirement, rounds)

    def _label(self, event: IssuesEvent | PullRequestEvent, routed: Routed) -> Outcome:
        """A `freemad:MODE` label starts the run `/freemad MODE` would, on the thread's text."""
        mode = label_mode(event)
        thread = self._thread(event)
        if mode is None or routed.route == "help":
            return Outcome("ignored", routed.reason)
        if event.sender is None:  # routing ignores these; never started without a person
            return Outcome("ignored", "no sender")
        refused = self._refused(event.sender, thread, mode)
        if refused is not None:
            return refused
        return VERBS[mode].handle(thread, Command(mode), event.sender.login)

    def _review_on_push(self, event: PullRequestEvent) -> Outcome:
        """A pull request opened or pushed to, reviewed where the workflow opted in; never one
        from a fork (its workflow has no secrets and a read-only token) nor FREE-MAD's own."""
        pr, where = event.pull_request, f"pull_request.{event.action}"
        if not self.settings.review_pull_requests:
            return Outcome("ignored", f"{where} starts a review only with review-pull-requests")
        sender = event.sender
        if sender is None or (self._self and sender.login.casefold() == self._self.casefold()):
            return Outcome("ignored", f"{where} by FREE-MAD itself, or by nobody")
        if pr.state != "open" or pr.draft:
            return Outcome("ignored", f"{where}: a draft or closed pull request is not reviewed")
        head = pr.head.repo.full_name if pr.head.repo is not None else ""
        if head != event.repository.full_name:
            reason = (
                f"{where} from a fork runs without secrets and with a read-only token: "
                "comment `/freemad review` on the pull request instead"
            )
            return Outcome("ignored", reason)
        thread = self._thread(event)
        refused = self._refused(sender, thread, "review")
        if refused is not None:
            return refused
        return VERBS["review"].handle(thread, Command("review"), sender.login)

    def _comment(self, event: CommentEvent) -> Outcome:
        thread = self._thread(event)
        author = event.comment.user
        if author is None:  # routing ignores these; never acted on without a person
            return Outcome("ignored", "no comment author")
        login = author.login
        try:
            command = parse_comment(event.comment.body)
        except CommandError as exc:
            refused = self._refused(author, thread, "help")
            if refused is not None:
                return refused
            return thread.reply("error", login=login, reason=str(exc))
        if command is None:
            return Outcome("ignored", "the comment is not a /freemad command")
        refused = self._refused(author, thread, command.verb)
        if refused is not None:
            return refused
        verb = verb_of(command)
        # Id 0 is a command the webhook bot dispatched: there is no comment of its own to mark.
        if verb.marks_comment and event.comment.id > 0:
            self._mark_seen(event, thread)
        return verb.handle(thread, command, login)

    def _refused(self, user: User, thread: Thread, verb: str) -> Outcome | None:
        permission = self.forge.permission(thread.repo, user.login)
        decision = may_act(
            Actor(user.login, user.type),
            permission,  # type: ignore[arg-type]  # one of PERMISSIONS, or None
            verb,
            allowed_bots=self._bots,
            self_login=self._self,
        )
        if decision.allowed:
            return None
        if not decision.reason:
            return Outcome("ignored", decision.detail or "not acted on")
        detail = decision.detail or decision.reason
        posted = refuse_once(
            self.forge,
            thread.repo,
            thread.number,
            user.login,
            decision.reason,
            self_login=self._self,
            pull_request=thread.is_pull_request,
            review_comment=thread.review_comment,
        )
        if posted is None:  # told once on this thread already: not again
            return Outcome("refused", f"{detail} (told already on this thread)")
        return Outcome("refused", detail)

    def _mark_seen(self, event: CommentEvent, thread: Thread) -> None:
        """👀 on the command's comment; a comment on a pull request's diff has reactions of its
        own, apart from issues'."""
        react = (
            self.forge.react_to_review_comment
            if isinstance(event, PullRequestReviewCommentEvent)
            else self.forge.react
        )
        try:
            react(thread.repo, event.comment.id, "eyes")
        except ForgeError as exc:  # the 👀 is a courtesy; the command still runs
            _log.warning("no reaction on comment %s: %s", event.comment.id, exc.one_line())

    def _thread(self, event: IssuesEvent | CommentEvent | PullRequestEvent) -> Thread:
        repo, default = event.repository.full_name, event.repository.default_branch
        if isinstance(event, (PullRequestEvent, PullRequestReviewCommentEvent)):
            pr = event.pull_request
            head_repo = pr.head.repo.full_name if pr.head.repo is not None else ""
            info = PullRequestInfo(
                repo, pr.number, pr.head.ref, pr.head.sha, pr.base.ref, head_repo
            )
            # A command on the diff is answered in its review thread (id 0: the bot dispatched
            # it, with no comment of its own).
            in_thread = None
            if isinstance(event, PullRequestReviewCommentEvent) and event.comment.id > 0:
                in_thread = event.comment.id
            return self.clients.on(
                repo=repo,
                number=pr.number,
                title=pr.title,
                body=pr.body or "",
                is_pull_request=True,
                default_branch=default,
                pull=info,
                review_comment=in_thread,
            )
        issue = event.issue
        return self.clients.on(
            repo=repo,
            number=issue.number,
            title=issue.title,
            body=issue.body or "",
            is_pull_request=issue.is_pull_request,
            default_branch=default,
        )
