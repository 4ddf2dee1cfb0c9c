"""One router for both front doors (the Action and the webhook bot): an event in, runs and comments out.

`Router.handle(event_name, payload)` parses the payload, routes it, checks who may act (the
collaborator permission API, never `author_association` alone), cleans untrusted text before any
agent sees it (on stdin only, never argv), starts or steers the run, and posts or edits comments
through the forge port. Runs are recorded in the store; each issue's runs are found again through
a small link run of its own, so a `/freemad answer` a week later finds the task it answers.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freemad.agents.base import AgentPort
from freemad.config.models import FreemadConfig
from freemad.core.commands import Command, CommandError, help_text, parse_comment
from freemad.core.permissions import Actor, may_act
from freemad.core.untrusted import clean
from freemad.errors import FreemadError
from freemad.github import threads
from freemad.github.comments import render_debate, render_reply, render_task
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
from freemad.github.pulls import BranchOnly
from freemad.github.routing import CommentEvent, label_mode, route
from freemad.store import Store

_log = logging.getLogger("freemad.github")
_NO_CHECKOUT = (
    "{what} needs a checkout of the repository, which this FREE-MAD bot does not keep; run it "
    "on GitHub Actions instead (FREEMAD_EXECUTOR=actions, docs/bot.md)"
)
_STEERING = ("answer", "approve", "reject", "resume", "pause", "stop", "decline", "status")


@dataclass
class Settings:
    self_login: str | None = None
    allowed_bots: tuple[str, ...] = ()
    run_url: Callable[[str, str], str | None] = lambda kind, run_id: None
    workspace: Path = field(default_factory=Path.cwd)  # the checkout code tasks branch from
    checkout: bool = True  # False: no checkout of the repository here (the bot's local worker)
    web_url: str = "https://github.com"  # GitHub's web address (a server's on GHES)
    job_url: str | None = None  # the GitHub Actions run doing this work, linked from comments


@dataclass
class Outcome:
    """What handling one event did: for logs, the Action's outputs and the bot's records."""

    action: str  # ignored, replied, refused, debate, task, steered
    reason: str = ""
    run_id: str | None = None
    status: str | None = None
    final_answer: str | None = None
    comment_url: str | None = None
    summary: str = ""  # markdown for the job summary: what was posted


@dataclass(frozen=True)
class Thread:
    """Where a run is discussed: an issue or a pull request of a repository."""

    repo: str
    number: int
    title: str
    body: str
    is_pull_request: bool
    default_branch: str = "main"
    pull: PullRequestInfo | None = None  # known from a pull_request event's payload


class Router:
    def __init__(
        self,
        config: FreemadConfig,
        forge: Forge,
        store: Store,
        settings: Settings | None = None,
        *,
        ports: Mapping[str, AgentPort] | None = None,
    ) -> None:
        self.config = config
        self.forge = forge
        self.store = store
        self.settings = settings or Settings()
        self.ports = dict(ports or {})
        self._limit = config.github.max_text_chars
        self._bots = (*self.settings.allowed_bots, *config.github.allowed_bots)
        self._self = self.settings.self_login or config.github.self_login

    def handle(self, event_name: str, payload: Mapping[str, Any] | bytes | str) -> Outcome:
        event = parse_event(event_name, payload)
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
            mode = label_mode(event)
            thread = _thread(event)
            if mode is None or routed.route == "help":
                return Outcome("ignored", routed.reason)
            if event.sender is None:  # routing ignores these; never started without a person
                return Outcome("ignored", "no sender")
            refused = self._refused(event.sender, thread, mode)
            if refused is not None:
                return refused
            return self._start(thread, mode, thread_text(thread, self._limit), {})
        if isinstance(event, WorkflowDispatchEvent):
            return Outcome("ignored", "workflow_dispatch is handled by `freemad github action`")
        return Outcome("ignored", routed.reason)

    # --- comments -----------------------------------------------------------------------------

    def _comment(self, event: CommentEvent) -> Outcome:
        thread = _thread(event)
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
            return self.reply(thread, "error", login=login, reason=str(exc))
        if command is None:
            return Outcome("ignored", "the comment is not a /freemad command")
        refused = self._refused(author, thread, command.verb)
        if refused is not None:
            return refused
        if command.verb == "help":
            return self.reply(thread, "help", text=help_text())
        # Id 0 is a command the webhook bot dispatched: there is no comment of its own to mark.
        if event.comment.id > 0:
            # A comment on a pull request's diff has reactions of its own, apart from issues'.
            react = (
                self.forge.react_to_review_comment
                if isinstance(event, PullRequestReviewCommentEvent)
                else self.forge.react
            )
            try:
                react(thread.repo, event.comment.id, "eyes")
            except ForgeError as exc:  # the 👀 is a courtesy; the command still runs
                _log.warning("no reaction on comment %s: %s", event.comment.id, exc.one_line())
        if command.verb in ("debate", "plan", "code", "evolve"):
            text = clean(command.full_text, limit=self._limit) or thread_text(thread, self._limit)
            return self._start(thread, command.verb, text, command.options)
        return self._steer(thread, command, login)

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
        self.reply(thread, "refused", login=user.login, reason=decision.reason)
        return Outcome("refused", decision.detail or decision.reason)

    def starting(self, what: str) -> str:
        """The first comment of a run on its thread, linking the Actions run doing the work."""
        job = self.settings.job_url
        follow = f" Follow it in [the GitHub Actions run]({job})." if job else ""
        return f"FREE-MAD is starting {what}…{follow}"

    def reply(self, thread: Thread, kind: str, **values: Any) -> Outcome:
        posted = self.forge.comment(thread.repo, thread.number, render_reply(kind, **values))
        return Outcome("replied", kind, comment_url=posted.html_url)

    # --- starting runs ------------------------------------------------------------------------

    def _start(self, thread: Thread, mode: str, text: str, options: Mapping[str, Any]) -> Outcome:
        if mode in ("code", "evolve") and not self.settings.checkout:
            return self.reply(thread, "refused_by_run", reason=_NO_CHECKOUT.format(what=mode))
        if mode == "debate":
            return self._debate(thread, text, options)
        if mode in ("plan", "code"):
            return self._task(thread, mode, text)
        return threads.start(self, thread, text, options)

    def debate_on(self, requirement: str, rounds: int | None) -> Outcome:
        """A debate with no issue to answer on (workflow_dispatch): the outcome carries it all."""
        text = clean(requirement, limit=self._limit)
        result, body = self._run_debate(text, {"rounds": rounds}, {"goal": text[:200]})
        return Outcome(
            "debate",
            run_id=result.run_id,
            status=result.status,
            final_answer=result.final_solution,
            summary=body,
        )

    def _debate(self, thread: Thread, requirement: str, options: Mapping[str, Any]) -> Outcome:
        result, body = self._run_debate(requirement, options, self._summary(thread, requirement))
        posted = self.forge.comment(thread.repo, thread.number, body)
        self.link(thread, result.run_id, "debate", posted.id)
        return Outcome(
            "debate",
            run_id=result.run_id,
            status=result.status,
            final_answer=result.final_solution,
            comment_url=posted.html_url,
            summary=body,
        )

    def _run_debate(
        self, requirement: str, options: Mapping[str, Any], summary: dict[str, Any]
    ) -> tuple[Any, str]:
        from freemad.debate import run_debate
        from freemad.debate.records import DebateResult
        from freemad.debate.transcript import transcript_data
        from freemad.redact import Redactor

        rounds = options.get("rounds")
        result = run_debate(
            requirement,
            self.config,
            rounds=int(rounds) if rounds is not None else None,
            agents=self.ports or None,
        )
        # What is kept (on the state branch, published by Pages) and posted is redacted with the
        # config's patterns, as a transcript on disk is.
        redacted = transcript_data(result, Redactor(self.config.security.redact_patterns))
        result = DebateResult.model_validate(redacted)
        self.store.create_run(result.run_id, "debate", summary)
        self.store.append(result.run_id, "debate_finished", {"transcript": redacted})
        self.store.update_run(result.run_id, status=result.status)
        run_url = self.settings.run_url("debate", result.run_id)
        return result, render_debate(result, run_url, self.settings.job_url)

    def _task(self, thread: Thread, task_type: str, goal: str) -> Outcome:
        from freemad.tasks.runtime import TaskRunner

        progress = self.forge.comment(
            thread.repo, thread.number, self.starting(f"a {task_type} task")
        )
        comment = _ProgressComment(self, thread, progress.id)
        runner = TaskRunner(self.config, self.store, ports=self.ports, on_step=comment.step)
        comment.runner, comment.task_id = runner, uuid.uuid4().hex[:16]
        self.link(thread, comment.task_id, "task", progress.id)
        state = runner.start(task_type, goal, self.settings.workspace, task_id=comment.task_id)
        comment.refresh()
        threads.after_task_step(self, state.task_id, task_type)
        view = state.view()
        return Outcome(
            "task",
            run_id=state.task_id,
            status=view["status"],
            comment_url=progress.html_url,
            summary=comment.shown,
        )

    # --- steering runs ------------------------------------------------------------------------

    def _steer(self, thread: Thread, command: Command, login: str) -> Outcome:
        from freemad.tasks.runtime import TaskRunner

        link = next((x for x in reversed(self.links(thread)) if x["kind"] != "debate"), None)
        if link is None:
            what = "pull request" if thread.is_pull_request else "issue"
            return self.reply(thread, "no_run", login=login, thing=what, verb=command.verb)
        if link["kind"] == "evolve":
            return threads.steer(self, thread, link, command)
        if command.stage == "publish" and not self.settings.checkout:
            reason = _NO_CHECKOUT.format(what="publishing")
            return self.reply(thread, "refused_by_run", login=login, reason=reason)
        comment = _ProgressComment(self, thread, int(link["comment_id"]))
        runner = TaskRunner(self.config, self.store, ports=self.ports, on_step=comment.step)
        comment.runner, comment.task_id = runner, link["run_id"]
        task_id = link["run_id"]
        try:
            state = _steer_task(runner, task_id, command, self._limit)
            threads.after_task_step(self, task_id, state.task_type)
            published = None
            if command.verb == "approve" and command.stage == "publish":
                published = threads.publish(self, thread, task_id)
        except FreemadError as exc:
            return self.reply(thread, "refused_by_run", login=login, reason=exc.one_line())
        comment.refresh()
        if isinstance(published, BranchOnly):
            reason = published.reason
            self.reply(thread, "branch_only", login=login, url=published.html_url, reason=reason)
        elif published:
            self.reply(thread, "published", login=login, url=published.html_url)
        return Outcome(
            "steered",
            command.verb,
            run_id=task_id,
            status=state.status.value,
            comment_url=published.html_url if published else None,
            summary=comment.shown,
        )

    # --- the link between an issue and its runs -----------------------------------------------

    def links(self, thread: Thread) -> list[dict[str, Any]]:
        return [e.data for e in self.store.events(_link_id(thread)) if e.kind == "linked"]

    def link(self, thread: Thread, run_id: str, kind: str, comment_id: int) -> None:
        link_id = _link_id(thread)
        if self.store.run(link_id) is None:
            self.store.create_run(
                link_id, "github_link", {"repo": thread.repo, "number": thread.number}
            )
        data = {"repo": thread.repo, "number": thread.number, "run_id": run_id, "kind": kind}
        self.store.append(link_id, "linked", {**data, "comment_id": comment_id})

    def _summary(self, thread: Thread, text: str) -> dict[str, Any]:
        return {"goal": text[:200], "issue": {"repo": thread.repo, "number": thread.number}}


def _steer_task(runner: Any, task_id: str, command: Command, limit: int) -> Any:
    verb = command.verb
    if verb == "answer":
        runner.answer(task_id, clean(command.full_text, limit=limit))
        return runner.resume(task_id)
    if verb == "approve":
        stage = command.stage or runner.state(task_id).current_stage
        state = runner.approve(task_id, stage)
        return state if stage == "publish" else runner.resume(task_id)
    if verb == "reject":
        state = runner.state(task_id)
        runner.reject(task_id, state.current_stage, clean(command.full_text, limit=limit))
        return runner.resume(task_id)
    if verb == "resume":
        return runner.resume(task_id)
    if verb == "pause":
        return runner.pause(task_id)
    if verb in ("stop", "decline"):
        return runner.cancel(task_id)
    return runner.state(task_id)  # status: the comment is refreshed


class _ProgressComment:
    """The one comment a task keeps on its issue, edited in place as the task moves."""

    def __init__(self, router: Router, thread: Thread, comment_id: int) -> None:
        self.router, self.thread, self.comment_id = router, thread, comment_id
        self.runner: Any = None
        self.task_id: str | None = None
        self.shown = ""

    def step(self, kind: str, data: dict[str, Any]) -> None:
        if kind in ("stage_advanced", "waiting_for_human", "completed", "cancelled"):
            self.refresh()

    def refresh(self) -> None:
        if self.runner is None or self.task_id is None:
            return
        state = self.runner.state(self.task_id)
        url = self.router.settings.run_url("task", self.task_id)
        body = render_task(state, url, self.router.settings.job_url)
        if body != self.shown:
            self.router.forge.edit_comment(self.thread.repo, self.comment_id, body)
            self.shown = body


def thread_text(thread: Thread, limit: int) -> str:
    """What agents are given of an issue: its title and body, cleaned."""
    return clean(f"{thread.title}\n\n{thread.body}", limit=limit).strip()


def _thread(event: IssuesEvent | CommentEvent | PullRequestEvent) -> Thread:
    repo, default = event.repository.full_name, event.repository.default_branch
    if isinstance(event, (PullRequestEvent, PullRequestReviewCommentEvent)):
        pr = event.pull_request
        head_repo = pr.head.repo.full_name if pr.head.repo is not None else ""
        info = PullRequestInfo(repo, pr.number, pr.head.ref, pr.head.sha, pr.base.ref, head_repo)
        return Thread(repo, pr.number, pr.title, pr.body or "", True, default, info)
    issue = event.issue
    return Thread(repo, issue.number, issue.title, issue.body or "", issue.is_pull_request, default)


def _link_id(thread: Thread) -> str:
    return "gh-" + hashlib.sha256(f"{thread.repo}#{thread.number}".encode()).hexdigest()[:16]
