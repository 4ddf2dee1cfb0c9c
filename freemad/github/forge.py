"""The forge port: the few things FREE-MAD asks of GitHub, and a recording fake for unit tests.

`Forge` is the whole surface: the router and the handlers take one and never build it. The real
adapter is `freemad.github.pygithub_forge.PyGithubForge`; `RecordingForge` keeps state in memory
and records every call, so router tests can assert on what would have been posted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from freemad.errors import FreemadError
from freemad.github.forge_conversation import ConversationPort, RecordingConversation

PERMISSIONS = ("admin", "maintain", "write", "triage", "read", "none")
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


class ForgeError(FreemadError):
    """GitHub refused or failed a request; the message is one line: status, method, path, why.
    `maybe_done`: GitHub may have carried it out all the same (a 5xx, a lost answer) and it
    cannot be looked for, so asking again might do it twice (a workflow dispatch)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        method: str = "",
        path: str = "",
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.method = method
        self.path = path
        self.maybe_done = False


@dataclass(frozen=True)
class PostedComment:
    id: int
    html_url: str


@dataclass(frozen=True)
class ListedComment:
    """A comment (or a review) as GitHub lists it: enough to find a hidden marker in it
    (`freemad.github.markers`), and whose it is."""

    id: int
    html_url: str
    body: str
    author: str  # the login; "" for a deleted account
    author_type: str = "User"  # "Bot" for a GitHub App's account, github-actions[bot] among them


@dataclass(frozen=True)
class PullRequestRef:
    number: int
    html_url: str


@dataclass(frozen=True)
class IssueDetails:
    """An issue (or a pull request, seen as an issue) as a dispatched job reads it back."""

    number: int
    title: str
    body: str
    html_url: str
    is_pull_request: bool


@dataclass(frozen=True)
class PullRequestDetails:
    """What an evolve run needs of a pull request: where its head is, and whose it is."""

    number: int
    html_url: str
    head_ref: str
    head_sha: str
    base_ref: str
    head_repo: str  # "owner/name"; "" when the fork was deleted
    state: str = "open"  # or "closed" (merged ones too)


@dataclass(frozen=True)
class PullFile:
    """One file a pull request changes, as GitHub lists it: `patch` is its part of the diff
    (hunks only), None where GitHub gives none (a binary file, or a diff too large to show)."""

    filename: str
    status: str  # added, removed, modified, renamed, copied, changed, unchanged
    patch: str | None
    previous_filename: str | None = None
    additions: int = 0
    deletions: int = 0


@dataclass(frozen=True)
class PostedReview:
    id: int
    html_url: str


class Forge(ConversationPort, Protocol):
    """How FREE-MAD talks to GitHub. `repo` is always "owner/name"; check runs and review-thread
    replies are `ConversationPort`'s."""

    def permission(self, repo: str, login: str) -> str | None:
        """One of `PERMISSIONS`, or None when `login` is not a collaborator (GitHub's 404)."""
        ...

    def comment(
        self, repo: str, number: int, body: str, *, key: str | None = None
    ) -> PostedComment:
        """A new comment; `key` (a 32-hex-digit `markers` key) is the hidden key its body ends
        with, a fresh one when None."""
        ...

    def edit_comment(self, repo: str, comment_id: int, body: str) -> PostedComment: ...

    def list_comments(self, repo: str, number: int) -> list[ListedComment]:
        """Every comment of an issue or a pull request's conversation, oldest first."""
        ...

    def react(self, repo: str, comment_id: int, content: str) -> None:
        """`content` is one of `REACTIONS`; "eyes" is the 👀 that acknowledges a command."""
        ...

    def react_to_review_comment(self, repo: str, comment_id: int, content: str) -> None:
        """`react` on a comment on a pull request's diff (`pull_request_review_comment`): GitHub
        keeps those apart from issue comments, with reactions of their own."""
        ...

    def open_pull_request(
        self, repo: str, *, head: str, base: str, title: str, body: str, draft: bool
    ) -> PullRequestRef: ...

    def edit_pull_request(self, repo: str, number: int, *, body: str) -> None: ...

    def pull_request(self, repo: str, number: int) -> PullRequestDetails:
        """A pull request's head and base (a comment's payload does not carry them)."""
        ...

    def issue(self, repo: str, number: int) -> IssueDetails:
        """An issue's title and body (a workflow_dispatch payload carries only its number)."""
        ...

    def pull_request_files(self, repo: str, number: int) -> list[PullFile]:
        """Every file the pull request changes, with its patch (GitHub lists up to 3,000)."""
        ...

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
        """One pull-request review, submitted at once: `event` is COMMENT, APPROVE or
        REQUEST_CHANGES; each comment is {path, line, side: RIGHT, body} on a line of the diff
        (GitHub refuses the whole review, 422, when one is not)."""
        ...

    def find_pull_request(self, repo: str, *, head: str, base: str) -> PullRequestRef | None:
        """An open pull request from `head` (a branch, or "owner:branch") into `base`, if any."""
        ...

    def dispatch_workflow(
        self, repo: str, workflow: str, ref: str, inputs: Mapping[str, str]
    ) -> str | None:
        """Start `workflow` (a file name) on `ref`; the web address of the run it started, or
        None where GitHub does not say (GitHub Enterprise Server, older GitHub: 204 No Content)."""
        ...

    def pages_url(self, repo: str) -> str | None:
        """The address of the repository's GitHub Pages site (its own domain, or
        `OWNER.github.io[/REPO]`); None when it has none or the token may not read it."""
        ...


@dataclass(frozen=True)
class ForgeCall:
    """One call made on a `RecordingForge`: the method's name and its arguments by name."""

    method: str
    args: dict[str, Any]


@dataclass
class _FakePull:
    repo: str
    head: str
    base: str
    title: str
    body: str
    draft: bool
    ref: PullRequestRef
    state: str = "open"


@dataclass
class RecordingForge(RecordingConversation):
    """An in-memory `Forge`: keeps comments, reactions, pull requests and dispatches, records calls.

    `permissions` maps a login (any repository) or "owner/name:login" to its permission; a login
    in neither is not a collaborator. `fail(method, error)` makes the next call of `method` raise.
    """

    permissions: dict[str, str] = field(default_factory=dict)
    web_url: str = "https://github.com"
    calls: list[ForgeCall] = field(default_factory=list)
    comments: dict[int, tuple[str, int, str]] = field(default_factory=dict)
    reactions: list[tuple[str, int, str]] = field(default_factory=list)
    review_reactions: list[tuple[str, int, str]] = field(default_factory=list)
    pulls: dict[tuple[str, int], _FakePull] = field(default_factory=dict)
    dispatches: list[tuple[str, str, str, dict[str, str]]] = field(default_factory=list)
    details: dict[tuple[str, int], PullRequestDetails] = field(default_factory=dict)
    issues: dict[tuple[str, int], IssueDetails] = field(default_factory=dict)
    files: dict[tuple[str, int], list[PullFile]] = field(default_factory=dict)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    # The repository settings GitHub checks when a job's token opens a pull request.
    actions_may_open_pulls: bool = True
    drafts_supported: bool = True
    pages: dict[str, str] = field(default_factory=dict)  # repo -> its Pages site's address
    # Whether a dispatch names the run it started (github.com), or not (GHES, older GitHub).
    dispatch_run_details: bool = True
    author: str = "github-actions[bot]"  # who the comments it keeps were posted by
    _failures: dict[str, list[Exception]] = field(default_factory=dict)
    _next_id: int = 1000

    def fail(self, method: str, error: Exception) -> None:
        self._failures.setdefault(method, []).append(error)

    def calls_to(self, method: str) -> list[ForgeCall]:
        return [call for call in self.calls if call.method == method]

    def _record(self, method: str, **args: Any) -> None:
        self.calls.append(ForgeCall(method, args))
        pending = self._failures.get(method)
        if pending:
            raise pending.pop(0)

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _comment_ref(self, comment_id: int) -> PostedComment:
        repo, number, _ = self.comments[comment_id]
        return PostedComment(
            comment_id, f"{self.web_url}/{repo}/issues/{number}#issuecomment-{comment_id}"
        )

    def _missing(self, method: str, path: str) -> ForgeError:
        return self._refusal(404, method, path, "Not Found")

    def _refusal(self, status: int, method: str, path: str, message: str) -> ForgeError:
        said = f"GitHub answered {status} to {method} {path}: {message}"
        return ForgeError(said, status=status, method=method, path=path)

    def _author(self) -> str:
        return self.author

    def _in_thread(self, repo: str, number: int, comment_id: int) -> PostedComment:
        return PostedComment(
            comment_id, f"{self.web_url}/{repo}/pull/{number}#discussion_r{comment_id}"
        )

    def permission(self, repo: str, login: str) -> str | None:
        self._record("permission", repo=repo, login=login)
        return self.permissions.get(f"{repo}:{login}", self.permissions.get(login))

    def comment(
        self, repo: str, number: int, body: str, *, key: str | None = None
    ) -> PostedComment:
        self._record("comment", repo=repo, number=number, body=body)
        if key is not None:
            body = f"{body}\n\n<!-- freemad:key={key} -->"  # as the real forge marks it
        comment_id = self._new_id()
        self.comments[comment_id] = (repo, number, body)
        return self._comment_ref(comment_id)

    def list_comments(self, repo: str, number: int) -> list[ListedComment]:
        self._record("list_comments", repo=repo, number=number)
        kind = "Bot" if self.author.endswith("[bot]") else "User"
        return [
            ListedComment(cid, self._comment_ref(cid).html_url, body, self.author, kind)
            for cid, (where, on, body) in sorted(self.comments.items())
            if (where, on) == (repo, number)
        ]

    def edit_comment(self, repo: str, comment_id: int, body: str) -> PostedComment:
        self._record("edit_comment", repo=repo, comment_id=comment_id, body=body)
        if self.comments.get(comment_id, ("",))[0] != repo:
            raise self._missing("PATCH", f"/repos/{repo}/issues/comments/{comment_id}")
        _, number, _ = self.comments[comment_id]
        self.comments[comment_id] = (repo, number, body)
        return self._comment_ref(comment_id)

    def react(self, repo: str, comment_id: int, content: str) -> None:
        self._record("react", repo=repo, comment_id=comment_id, content=content)
        if content not in REACTIONS:
            raise ForgeError(f"GitHub answered 422 to reaction {content!r}", status=422)
        self.reactions.append((repo, comment_id, content))

    def react_to_review_comment(self, repo: str, comment_id: int, content: str) -> None:
        self._record("react_to_review_comment", repo=repo, comment_id=comment_id, content=content)
        if content not in REACTIONS:
            raise ForgeError(f"GitHub answered 422 to reaction {content!r}", status=422)
        self.review_reactions.append((repo, comment_id, content))

    def open_pull_request(
        self, repo: str, *, head: str, base: str, title: str, body: str, draft: bool
    ) -> PullRequestRef:
        self._record(
            "open_pull_request",
            repo=repo,
            head=head,
            base=base,
            title=title,
            body=body,
            draft=draft,
        )
        where = f"GitHub answered {{}} to POST /repos/{repo}/pulls: "
        if not self.actions_may_open_pulls:
            message = "GitHub Actions is not permitted to create or approve pull requests."
            raise ForgeError(where.format(403) + message, status=403)
        if draft and not self.drafts_supported:
            message = "Draft pull requests are not supported in this repository."
            raise ForgeError(where.format(422) + message, status=422)
        if self._open_pull(repo, head, base) is not None:
            message = f"A pull request already exists for {head}."
            raise ForgeError(where.format(422) + message, status=422)
        number = self._new_id()
        ref = PullRequestRef(number, f"{self.web_url}/{repo}/pull/{number}")
        self.pulls[(repo, number)] = _FakePull(repo, head, base, title, body, draft, ref)
        return ref

    def edit_pull_request(self, repo: str, number: int, *, body: str) -> None:
        self._record("edit_pull_request", repo=repo, number=number, body=body)
        pull = self.pulls.get((repo, number))
        if pull is None:
            raise self._missing("PATCH", f"/repos/{repo}/pulls/{number}")
        pull.body = body

    def issue(self, repo: str, number: int) -> IssueDetails:
        self._record("issue", repo=repo, number=number)
        found = self.issues.get((repo, number))
        if found is None:
            raise self._missing("GET", f"/repos/{repo}/issues/{number}")
        return found

    def pull_request(self, repo: str, number: int) -> PullRequestDetails:
        self._record("pull_request", repo=repo, number=number)
        found = self.details.get((repo, number))
        if found is None:
            raise self._missing("GET", f"/repos/{repo}/pulls/{number}")
        return found

    def pull_request_files(self, repo: str, number: int) -> list[PullFile]:
        self._record("pull_request_files", repo=repo, number=number)
        found = self.files.get((repo, number))
        if found is None:
            raise self._missing("GET", f"/repos/{repo}/pulls/{number}/files")
        return list(found)

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
        given = [dict(c) for c in comments]
        self._record(
            "create_review",
            repo=repo,
            number=number,
            commit_id=commit_id,
            body=body,
            event=event,
            comments=given,
        )
        review_id = self._new_id()
        self.reviews.append(
            {"repo": repo, "number": number, "commit_id": commit_id, "body": body}
            | {"event": event, "comments": given, "id": review_id}
        )
        url = f"{self.web_url}/{repo}/pull/{number}#pullrequestreview-{review_id}"
        return PostedReview(review_id, url)

    def pages_url(self, repo: str) -> str | None:
        self._record("pages_url", repo=repo)
        return self.pages.get(repo)

    def find_pull_request(self, repo: str, *, head: str, base: str) -> PullRequestRef | None:
        self._record("find_pull_request", repo=repo, head=head, base=base)
        pull = self._open_pull(repo, head, base)
        return pull.ref if pull else None

    def _open_pull(self, repo: str, head: str, base: str) -> _FakePull | None:
        branch = head.split(":", 1)[-1]
        for pull in self.pulls.values():
            if (pull.repo, pull.base, pull.state) == (repo, base, "open") and (
                pull.head.split(":", 1)[-1] == branch
            ):
                return pull
        return None

    def dispatch_workflow(
        self, repo: str, workflow: str, ref: str, inputs: Mapping[str, str]
    ) -> str | None:
        self._record(
            "dispatch_workflow", repo=repo, workflow=workflow, ref=ref, inputs=dict(inputs)
        )
        self.dispatches.append((repo, workflow, ref, dict(inputs)))
        if not self.dispatch_run_details:
            return None
        return f"{self.web_url}/{repo}/actions/runs/{self._new_id()}"
