"""GitHub webhook payloads as pydantic models: only the fields FREE-MAD reads, the rest ignored.

`parse_event(name, payload)` turns an `X-GitHub-Event` name and its body into one of the models
below, or `UnknownEvent` for an event we do not model. A malformed body or a payload without a
field we need raises `PayloadError` with one line saying what was wrong, never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from freemad.errors import UsageError


class PayloadError(UsageError, ValueError):
    """A webhook payload we cannot use: not JSON, not UTF-8, or missing or mistyping a field."""


class _Payload(BaseModel):
    # Unknown keys are GitHub's business; the fields we read must have the type GitHub sends
    # (strict: a number sent as a string is a forged or broken payload, not something to coerce).
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


class User(_Payload):
    login: str
    id: int
    type: str = "User"


# GitHub's webhook schemas (@octokit/openapi-webhooks) allow several user objects to be null (a
# deleted account, a "ghost") and leave some fields out of some actions: the models ask no more
# than the schemas promise (tests/github/test_webhook_contract.py holds them to it).


class Repository(_Payload):
    id: int
    name: str
    full_name: str
    owner: User | None = None
    default_branch: str
    private: bool
    html_url: str
    clone_url: str


class Installation(_Payload):
    id: int


class Label(_Payload):
    name: str = ""


class PullRequestRef(_Payload):
    """`issue.pull_request`: present only when the issue is a pull request."""

    url: str
    html_url: str


class Issue(_Payload):
    number: int
    title: str
    body: str | None = None
    user: User | None = None
    labels: list[Label] = []
    state: str | None = None  # absent from some actions (issues.pinned, issues.unpinned)
    html_url: str
    pull_request: PullRequestRef | None = None

    @property
    def is_pull_request(self) -> bool:
        return self.pull_request is not None


class Comment(_Payload):
    id: int
    body: str
    user: User | None = None
    html_url: str
    author_association: str | None = None


class PullRequestBranch(_Payload):
    ref: str
    sha: str
    repo: Repository | None = None  # None when the fork it came from was deleted


class PullRequest(_Payload):
    number: int
    title: str
    body: str | None = None
    user: User | None = None
    head: PullRequestBranch
    base: PullRequestBranch
    html_url: str
    draft: bool = False
    state: str
    labels: list[Label] = []


class IssuesEvent(_Payload):
    EVENT: ClassVar[str] = "issues"
    action: str
    issue: Issue
    label: Label | None = None
    repository: Repository
    sender: User
    installation: Installation | None = None


class IssueCommentEvent(_Payload):
    EVENT: ClassVar[str] = "issue_comment"
    action: str
    issue: Issue
    comment: Comment
    changes: dict[str, Any] | None = None
    repository: Repository
    sender: User
    installation: Installation | None = None


class PullRequestEvent(_Payload):
    EVENT: ClassVar[str] = "pull_request"
    action: str
    number: int
    pull_request: PullRequest
    label: Label | None = None
    repository: Repository
    sender: User | None = None  # absent from some actions in GitHub's schema
    installation: Installation | None = None


class PullRequestReviewCommentEvent(_Payload):
    """A comment on a pull request's diff. GitHub keeps these apart from the comments of a pull
    request's conversation (`issue_comment`): their own ids, addresses and reactions."""

    EVENT: ClassVar[str] = "pull_request_review_comment"
    action: str
    comment: Comment
    pull_request: PullRequest
    changes: dict[str, Any] | None = None
    repository: Repository
    sender: User
    installation: Installation | None = None


class PingEvent(_Payload):
    EVENT: ClassVar[str] = "ping"
    zen: str | None = None
    hook_id: int | None = None
    hook: dict[str, Any] | None = None
    repository: Repository | None = None  # absent for organization and app hooks
    sender: User | None = None


class InstallationEvent(_Payload):
    EVENT: ClassVar[str] = "installation"
    action: str
    installation: Installation
    sender: User


class WorkflowDispatchEvent(_Payload):
    EVENT: ClassVar[str] = "workflow_dispatch"
    inputs: dict[str, str | None] | None = None
    ref: str
    workflow: str | None = None
    repository: Repository
    sender: User
    installation: Installation | None = None

    @field_validator("inputs", mode="before")
    @classmethod
    def _inputs_as_text(cls, value: Any) -> Any:
        # Boolean and number inputs arrive as JSON scalars; Actions renders them as text.
        if not isinstance(value, dict):
            return value
        return {key: _scalar_text(item) for key, item in value.items()}


class PushEvent(_Payload):
    EVENT: ClassVar[str] = "push"
    ref: str
    repository: Repository
    sender: User | None = None


@dataclass(frozen=True)
class UnknownEvent:
    """An event we do not model (or do not need to): kept only so the router can say why."""

    event: str
    action: str | None = None


ModelledEvent = (
    IssuesEvent
    | IssueCommentEvent
    | PullRequestEvent
    | PullRequestReviewCommentEvent
    | PingEvent
    | InstallationEvent
    | WorkflowDispatchEvent
    | PushEvent
)
Event = ModelledEvent | UnknownEvent

_MODELLED: tuple[type[ModelledEvent], ...] = (
    IssuesEvent,
    IssueCommentEvent,
    PullRequestEvent,
    PullRequestReviewCommentEvent,
    PingEvent,
    InstallationEvent,
    WorkflowDispatchEvent,
    PushEvent,
)
MODELS: dict[str, type[ModelledEvent]] = {model.EVENT: model for model in _MODELLED}


def parse_event(event: str, payload: Mapping[str, Any] | bytes | str) -> Event:
    """The payload of webhook `event` as a model; `UnknownEvent` when we do not model `event`."""
    data = _as_object(event, payload)
    model = MODELS.get(event)
    if model is None:
        action = data.get("action")
        return UnknownEvent(event, action if isinstance(action, str) else None)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise PayloadError(_describe(event, exc)) from None


def _as_object(event: str, payload: Mapping[str, Any] | bytes | str) -> dict[str, Any]:
    if isinstance(payload, Mapping):
        return dict(payload)
    if isinstance(payload, bytes):
        try:
            payload = payload.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PayloadError(
                _line(f"{event} payload: not valid UTF-8 (byte {exc.start})")
            ) from None
    try:
        data = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise PayloadError(
            _line(
                f"{event} payload: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            )
        ) from None
    except RecursionError:
        raise PayloadError(_line(f"{event} payload: JSON nested too deeply")) from None
    if not isinstance(data, dict):
        raise PayloadError(
            _line(f"{event} payload: expected a JSON object, got {type(data).__name__}")
        )
    return data


def _describe(event: str, exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    message = first["msg"][:1].lower() + first["msg"][1:]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return _line(f"{event} payload: {where}: {message}{more}")


def _line(text: str) -> str:
    return " ".join(text.split())


def _scalar_text(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return value
