"""The `Forge` port over PyGithub, with FREE-MAD's own retries and the token masked in every log.

PyGithub's `GithubRetry` (a urllib3 `Retry`) is switched off (`retry=None`) and this module
retries instead, because `GithubRetry` sleeps through urllib3's `time.sleep` (no way to inject a
clock or a sleep), recognises a primary rate limit by the text of the body rather than by
`X-RateLimit-Remaining: 0`, retries 5xx immediately (no backoff unless configured), and retries a
429 only when it carries `Retry-After`. Here every failure is classified once (`retry_delay`):
5xx and connection errors back off exponentially with jitter; 403/429 rate limits wait exactly
`Retry-After`, or until `X-RateLimit-Reset`, or a minute (GitHub's advice for a secondary limit
without headers); a wait beyond `max_wait` fails at once with the reset time; other 4xx never retry.
"""

from __future__ import annotations

import logging
import math
import re
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import github
import requests
import urllib3
from github.GithubException import GithubException
from github.IssueComment import IssueComment
from github.Repository import Repository

from freemad.github import pygithub_creates, pygithub_reviews
from freemad.github.body_limit import fit_body
from freemad.github.forge import (
    ForgeError,
    IssueDetails,
    ListedComment,
    PostedComment,
    PostedReview,
    PullFile,
    PullRequestDetails,
    PullRequestRef,
)
from freemad.github.pulls import ACTIONS_MAY_NOT_CREATE, SETTING
from freemad.github.pygithub_conversation import ConversationCalls
from freemad.github.retry_policy import MAX_RATE_LIMIT_WAIT, github_message, retry_delay
from freemad.redact import RedactingFilter, Redactor

log = logging.getLogger("freemad.github")

T = TypeVar("T")

API_VERSION = "2022-11-28"
USER_AGENT = "freemad"
MEDIA_TYPE = "application/vnd.github+json"  # what GitHub's REST API documents for every answer
KNOWN_ROLES = frozenset({"admin", "maintain", "write", "triage", "read", "none"})
# Every logger that sees a request on its way to GitHub; a logger's filter only applies to
# records created by that very logger, so each one is named rather than a parent.
GUARDED_LOGGERS = (
    "freemad.github",
    "github.Requester",
    "github.GithubRetry",
    "urllib3.connectionpool",
    "urllib3.util.retry",
)
HINTS = {
    401: "GitHub refused the token: check that it is set and has not expired",
    403: "the token lacks a permission this needs (issues, pull-requests or actions: write)",
    404: "the repository, issue, comment or workflow does not exist, or the token cannot see it",
}


def _hint(status: int, message: str) -> str | None:
    """What to change: a 403 that is the repository's setting, not the token's permissions,
    names the setting."""
    if status == 403 and ACTIONS_MAY_NOT_CREATE.lower() in message.lower():
        return f"turn on {SETTING}"
    return HINTS.get(status)


class _TokenMask(RedactingFilter):
    """One process-wide filter that redacts every token any `PyGithubForge` was given."""

    def __init__(self) -> None:
        super().__init__(Redactor([]))
        self.tokens: set[str] = set()

    def add(self, token: str) -> None:
        if token and token not in self.tokens:
            self.tokens.add(token)
            # Longest first, so a token containing another is masked whole.
            ordered = sorted(self.tokens, key=len, reverse=True)
            self.redactor = Redactor([re.escape(t) for t in ordered])

    def install(self) -> None:
        for name in GUARDED_LOGGERS:
            target = logging.getLogger(name)
            if self not in target.filters:
                target.addFilter(self)


MASK = _TokenMask()


class _Token(github.Auth.Token):
    """The token, and GitHub's media type on every request: PyGithub leaves `Accept` to requests
    (`*/*`) and asks a retired preview type for reactions. PyGithub hands each request's headers
    to its auth object, so this is the one place per client that sees them all."""

    def authentication(self, headers: dict[str, str]) -> None:
        super().authentication(headers)
        accept = headers.get("Accept", "")
        if not accept or accept == "*/*" or "preview" in accept:
            headers["Accept"] = MEDIA_TYPE


def _one_line(text: str) -> str:
    return MASK.redactor.text(" ".join(text.split()))


def _may_have_arrived(exc: Exception) -> bool:
    """Whether a request that got no answer may have reached GitHub: a read timeout or a
    connection dropped mid-exchange may, a connection never made (refused, timed out) may not."""
    if isinstance(exc, requests.ConnectTimeout):
        return False
    if isinstance(exc, requests.Timeout):
        return True
    reason = exc.args[0] if exc.args else None
    return not isinstance(reason, urllib3.exceptions.MaxRetryError)


def _recovered(recover: Callable[[], T | None], where: str, failure: ForgeError) -> T | None:
    """What `recover` finds of a failed create; when it cannot look, the create's own failure,
    since sending it again might make it twice."""
    try:
        found = recover()
    except ForgeError as exc:
        failure.hint = f"not sent again: what it made could not be looked for ({exc.one_line()})"
        raise failure from exc
    if found is not None:
        log.warning("GitHub: %s failed, but had been done: using what it made", where)
    return found


class PyGithubForge(ConversationCalls):
    """`Forge` through PyGithub. `base_url` is `https://HOST/api/v3` on GitHub Enterprise Server.

    `retries` is how many times one operation is retried; `sleep` is injectable for tests;
    `throttle` keeps PyGithub's spacing of requests (0.25 s, and 1 s between writes: GitHub's
    advice against secondary rate limits); `max_wait` caps a rate-limit wait.
    """

    def __init__(
        self,
        token: str,
        *,
        base_url: str = "https://api.github.com",
        retries: int = 4,
        sleep: Callable[[float], None] = time.sleep,
        timeout: float = 30,
        throttle: bool = True,
        max_wait: float = MAX_RATE_LIMIT_WAIT,
    ) -> None:
        MASK.add(token)
        MASK.install()
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.max_wait = max_wait
        self._sleep = sleep
        self._gh = github.Github(
            auth=_Token(token),
            base_url=self.base_url,
            timeout=max(1, math.ceil(timeout)),  # PyGithub insists on an int
            user_agent=USER_AGENT,
            retry=None,
            seconds_between_requests=0.25 if throttle else None,
            seconds_between_writes=1.0 if throttle else None,
            lazy=True,  # objects are addressed by URL; nothing is fetched until an action needs it
            api_version=API_VERSION,
        )

    def close(self) -> None:
        self._gh.close()

    def __enter__(self) -> PyGithubForge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _repo(self, repo: str) -> Repository:
        return self._gh.get_repo(repo)

    def _comment(self, repo: str, comment_id: int) -> IssueComment:
        url = f"{self._repo(repo).url}/issues/comments/{comment_id}"
        return IssueComment(self._gh.requester, url=url)

    def _call(
        self,
        method: str,
        path: str,
        action: Callable[[], T],
        *,
        idempotent: bool,
        recover: Callable[[], T | None] | None = None,
    ) -> T:
        """`action`, retried as `retry_delay` says. `recover` (a create whose body carries a
        hidden key) finds what a failed create made after all: called before each retry that
        follows a 5xx or a lost answer, what it finds is the result, and nothing is sent again."""
        where = f"{method} {path}"
        attempt = 0
        while True:
            try:
                return action()
            except GithubException as exc:
                status: int | None = exc.status
                message = github_message(exc.data)
                headers: Mapping[str, str] = exc.headers or {}
                failure = ForgeError(
                    _one_line(f"GitHub answered {exc.status} to {where}: {message}"),
                    status=exc.status,
                    method=method,
                    path=path,
                    hint=_hint(exc.status, message),
                )
                cause: Exception = exc
            except (requests.ConnectionError, requests.Timeout) as exc:
                status, message, headers, cause = None, type(exc).__name__, {}, exc
                failure = ForgeError(
                    _one_line(f"GitHub could not be reached for {where}: {exc}"),
                    method=method,
                    path=path,
                )
            # A 5xx or a lost answer may mean the write happened: only safe requests are
            # repeated, and creates that can find what they made (`recover`).
            maybe_done = (status is None and _may_have_arrived(cause)) or (status or 0) >= 500
            if maybe_done and not idempotent and recover is None:
                failure.hint = "not sent again: GitHub may have done it already"
                failure.maybe_done = True
                raise failure from cause
            try:
                delay = retry_delay(
                    status,
                    headers,
                    message,
                    attempt,
                    now=time.time(),
                    max_wait=self.max_wait,
                    where=where,
                )
            except ForgeError as limit:
                limit.method, limit.path = method, path
                raise limit from cause
            if delay is None:
                raise failure from cause
            if recover is not None and (status is None or status >= 500):
                found = _recovered(recover, where, failure)
                if found is not None:
                    return found
            if attempt >= self.retries:
                failure.hint = f"gave up after {attempt + 1} attempts"
                raise failure from cause
            attempt += 1
            log.warning(
                "GitHub: %s failed (%s); retry %d of %d in %.1f s",
                where,
                status or message,
                attempt,
                self.retries,
                delay,
            )
            self._sleep(delay)

    def permission(self, repo: str, login: str) -> str | None:
        user = urllib.parse.quote(login, safe="")
        path = f"/repos/{repo}/collaborators/{user}/permission"

        def read() -> dict[str, Any]:
            url = f"{self._repo(repo).url}/collaborators/{user}/permission"
            _, data = self._gh.requester.requestJsonAndCheck("GET", url)
            return dict(data)

        try:
            data = self._call("GET", path, read, idempotent=True)
        except ForgeError as exc:
            if exc.status == 404:
                return None
            raise
        role = data.get("role_name")
        # role_name tells maintain and triage apart; a custom role falls back to its base level.
        value = role if role in KNOWN_ROLES else data.get("permission")
        return str(value) if value is not None else None

    def comment(
        self, repo: str, number: int, body: str, *, key: str | None = None
    ) -> PostedComment:
        return pygithub_creates.comment(self, repo, number, body, key=key)

    def list_comments(self, repo: str, number: int) -> list[ListedComment]:
        return pygithub_creates.list_comments(self, repo, number)

    def edit_comment(self, repo: str, comment_id: int, body: str) -> PostedComment:
        path = f"/repos/{repo}/issues/comments/{comment_id}"

        def edit() -> IssueComment:
            comment = self._comment(repo, comment_id)
            comment.edit(fit_body(body))
            return comment

        edited = self._call("PATCH", path, edit, idempotent=True)
        return PostedComment(edited.id, edited.html_url)

    def react(self, repo: str, comment_id: int, content: str) -> None:
        path = f"/repos/{repo}/issues/comments/{comment_id}/reactions"
        # GitHub answers an existing reaction with 200 and the same reaction: safe to repeat.
        self._call(
            "POST",
            path,
            lambda: self._comment(repo, comment_id).create_reaction(content),
            idempotent=True,
        )

    def react_to_review_comment(self, repo: str, comment_id: int, content: str) -> None:
        path = f"/repos/{repo}/pulls/comments/{comment_id}/reactions"

        def post() -> None:
            url = f"{self._repo(repo).url}/pulls/comments/{comment_id}/reactions"
            self._gh.requester.requestJsonAndCheck("POST", url, input={"content": content})

        self._call("POST", path, post, idempotent=True)  # a repeat is answered 200, as above

    def open_pull_request(
        self, repo: str, *, head: str, base: str, title: str, body: str, draft: bool
    ) -> PullRequestRef:
        return pygithub_creates.open_pull_request(
            self, repo, head=head, base=base, title=title, body=body, draft=draft
        )

    def edit_pull_request(self, repo: str, number: int, *, body: str) -> None:
        path = f"/repos/{repo}/pulls/{number}"
        self._call(
            "PATCH",
            path,
            lambda: self._repo(repo).get_pull(number).edit(body=fit_body(body)),
            idempotent=True,
        )

    def issue(self, repo: str, number: int) -> IssueDetails:
        path = f"/repos/{repo}/issues/{number}"
        found = self._call("GET", path, lambda: self._repo(repo).get_issue(number), idempotent=True)
        is_pull = found.pull_request is not None
        return IssueDetails(found.number, found.title, found.body or "", found.html_url, is_pull)

    def pull_request(self, repo: str, number: int) -> PullRequestDetails:
        path = f"/repos/{repo}/pulls/{number}"
        pull = self._call("GET", path, lambda: self._repo(repo).get_pull(number), idempotent=True)
        head_repo = pull.head.repo.full_name if pull.head.repo is not None else ""
        return PullRequestDetails(
            pull.number,
            pull.html_url,
            pull.head.ref,
            pull.head.sha,
            pull.base.ref,
            head_repo,
            state=pull.state,
        )

    def pull_request_files(self, repo: str, number: int) -> list[PullFile]:
        return pygithub_reviews.pull_request_files(self, repo, number)

    def create_review(
        self,
        repo: str,
        number: int,
        *,
        commit_id: str,
        body: str,
        event: str,
        comments: Sequence[Mapping[str, Any]],
    ) -> PostedReview:
        return pygithub_reviews.create_review(
            self, repo, number, commit_id=commit_id, body=body, event=event, comments=comments
        )

    def find_pull_request(self, repo: str, *, head: str, base: str) -> PullRequestRef | None:
        # The API filters by "owner:branch"; a bare branch means one in the repository itself.
        qualified = head if ":" in head else f"{repo.split('/', 1)[0]}:{head}"
        path = f"/repos/{repo}/pulls"

        def first() -> PullRequestRef | None:
            pulls = self._repo(repo).get_pulls(state="open", head=qualified, base=base)
            for pull in pulls:
                return PullRequestRef(pull.number, pull.html_url)
            return None

        return self._call("GET", path, first, idempotent=True)

    def pages_url(self, repo: str) -> str | None:
        path = f"/repos/{repo}/pages"

        def read() -> dict[str, Any]:
            _, data = self._gh.requester.requestJsonAndCheck("GET", f"{self._repo(repo).url}/pages")
            return dict(data)

        try:
            data = self._call("GET", path, read, idempotent=True)
        except ForgeError as exc:
            if exc.status in (403, 404):  # no Pages site, or a token without pages: read
                return None
            raise
        url = data.get("html_url")
        return url.rstrip("/") if isinstance(url, str) and url else None

    def dispatch_workflow(
        self, repo: str, workflow: str, ref: str, inputs: Mapping[str, str]
    ) -> str | None:
        name = urllib.parse.quote(workflow, safe="")
        path = f"/repos/{repo}/actions/workflows/{name}/dispatches"

        def post(details: bool) -> Any:
            # Through the requester, not `Workflow.create_dispatch`: the reply's body is read on
            # every PyGithub this supports (create_dispatch returns it only in recent releases).
            body: dict[str, Any] = {"ref": ref, "inputs": dict(inputs)}
            if details:
                body["return_run_details"] = True  # 200 with the run, where GitHub has it
            url = f"{self._repo(repo).url}/actions/workflows/{name}/dispatches"
            _, data = self._gh.requester.requestJsonAndCheck("POST", url, input=body)
            return data

        try:
            data = self._call("POST", path, lambda: post(True), idempotent=False)
        except ForgeError as exc:
            if exc.maybe_done:  # a dispatch leaves nothing to look for: say where to look
                exc.hint = f"not sent again: GitHub may have started it; see the {workflow} runs"
            # A GitHub that validates the body strictly and lacks the parameter refuses it (422)
            # and starts nothing: ask again without it.
            if exc.status != 422 or "return_run_details" not in str(exc):
                raise
            data = self._call("POST", path, lambda: post(False), idempotent=False)
        url = data.get("html_url") if isinstance(data, dict) else None
        return url if isinstance(url, str) and url.startswith(("https://", "http://")) else None
