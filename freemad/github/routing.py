"""The routing table: from a webhook event (name, action, a few fields) to what FREE-MAD does.

Pure: no I/O, no command parsing (a comment's body is the handler's business). Every event gets
a route; `ignore` always carries the reason, for logs and for the Action's notice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from freemad.github.events import (
    Event,
    InstallationEvent,
    IssueCommentEvent,
    IssuesEvent,
    Label,
    PingEvent,
    PullRequestEvent,
    PullRequestReviewCommentEvent,
    PushEvent,
    UnknownEvent,
    User,
    WorkflowDispatchEvent,
)

Route = Literal["start_from_label", "command", "dispatch", "help", "ping", "ignore"]
CommentEvent = IssueCommentEvent | PullRequestReviewCommentEvent
# The webhook events that can start or steer a run: the workflow's triggers and the App's events.
TRIGGER_EVENTS = ("issues", "issue_comment", "pull_request", "pull_request_review_comment")


@dataclass(frozen=True)
class Routed:
    route: Route
    reason: str


LABELS: Mapping[str, str] = MappingProxyType(
    {
        "freemad:debate": "debate",
        "freemad:plan": "plan",
        "freemad:code": "code",
        "freemad:evolve": "evolve",
        "freemad:review": "review",
    }
)
LABEL_PREFIX = "freemad:"
# A code task starts from an issue and writes a new branch; evolve improves an existing PR's head.
ISSUE_MODES = frozenset({"debate", "plan", "code"})
PULL_REQUEST_MODES = frozenset({"debate", "plan", "evolve", "review"})


def route(event: Event, *, self_login: str | None = None) -> Routed:
    """What to do with `event`; `self_login` is FREE-MAD's own account, whose actions never count."""
    if isinstance(event, IssuesEvent):
        if event.action != "labeled":
            return _ignore(f"issues.{event.action} is not a trigger")
        return _route_label(
            event.label,
            sender=event.sender,
            self_login=self_login,
            where=f"issue #{event.issue.number}",
            state=event.issue.state,
            allowed=ISSUE_MODES,
        )
    if isinstance(event, PullRequestEvent):
        if event.action != "labeled":
            return _ignore(f"pull_request.{event.action} is not a trigger")
        return _route_label(
            event.label,
            sender=event.sender,
            self_login=self_login,
            where=f"pull request #{event.number}",
            state=event.pull_request.state,
            allowed=PULL_REQUEST_MODES,
        )
    if isinstance(event, (IssueCommentEvent, PullRequestReviewCommentEvent)):
        return _route_comment(event, self_login)
    if isinstance(event, PingEvent):
        return Routed("ping", f"ping from hook {event.hook_id}")
    if isinstance(event, WorkflowDispatchEvent):
        return Routed("dispatch", f"workflow_dispatch on {event.ref}")
    if isinstance(event, InstallationEvent):
        return _ignore(f"installation.{event.action} needs nothing from FREE-MAD")
    if isinstance(event, PushEvent):
        return _ignore("push is not a trigger")
    return _ignore(_unknown(event))


def label_mode(event: Event) -> str | None:
    """The FREE-MAD mode the event's label names (`debate`, `plan`, `code`, `evolve`), or None."""
    if isinstance(event, (IssuesEvent, PullRequestEvent)) and event.label is not None:
        return _mode(event.label.name)
    return None


def _route_label(
    label: Label | None,
    *,
    sender: User | None,
    self_login: str | None,
    where: str,
    state: str | None,
    allowed: frozenset[str],
) -> Routed:
    if label is None:
        return _ignore("labeled event without a label")
    if sender is None:
        return _ignore(f"label on {where} with no sender: nobody whose access could be checked")
    if _is_self(sender, self_login):
        return _ignore(f"label {label.name!r} was added by FREE-MAD itself")
    mode = _mode(label.name)
    if mode is None:
        if label.name.strip().casefold().startswith(LABEL_PREFIX):
            known = ", ".join(LABELS)
            return Routed("help", f"unknown FREE-MAD label {label.name!r} (known: {known})")
        return _ignore(f"label {label.name!r} is not a FREE-MAD label")
    name = f"{LABEL_PREFIX}{mode}"
    if mode not in allowed:
        target = "pull requests" if mode in PULL_REQUEST_MODES else "issues"
        return _ignore(f"{name} applies to {target}")
    if state != "open":
        return _ignore(f"{name} on {where}, which is {state or 'in an unknown state'}")
    return Routed("start_from_label", f"label {name} on {where}")


def _route_comment(event: CommentEvent, self_login: str | None) -> Routed:
    if event.action in {"edited", "deleted"}:
        return _ignore(f"{event.action} comments are ignored")
    if event.action != "created":
        return _ignore(f"{event.EVENT}.{event.action} is not a trigger")
    author = event.comment.user
    if author is None:
        return _ignore(f"comment {event.comment.id} has no author whose access could be checked")
    if _is_self(author, self_login):
        return _ignore(f"comment {event.comment.id} is FREE-MAD's own")
    if isinstance(event, PullRequestReviewCommentEvent):
        where = f"review comment {event.comment.id} on pull request #{event.pull_request.number}"
        return Routed("command", where)
    kind = "pull request" if event.issue.is_pull_request else "issue"
    return Routed("command", f"comment {event.comment.id} on {kind} #{event.issue.number}")


def _mode(label_name: str) -> str | None:
    # GitHub treats label names case-insensitively ("Bug" and "bug" cannot coexist).
    return LABELS.get(label_name.strip().casefold())


def _is_self(user: User, self_login: str | None) -> bool:
    # Logins are case-insensitive too; an app's account is "name[bot]".
    return self_login is not None and user.login.casefold() == self_login.casefold()


def _unknown(event: UnknownEvent) -> str:
    name = f"{event.event}.{event.action}" if event.action else event.event
    return f"{name or 'an unnamed event'} is not handled"


def _ignore(reason: str) -> Routed:
    return Routed("ignore", reason)
