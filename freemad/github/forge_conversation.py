"""The forge port's conversation calls beside comments: check runs (a run's progress on a pull
request's head) and replies in a pull request's review threads, with their recording fake.

`Forge` (`freemad.github.forge`) takes `ConversationPort` in; `RecordingForge` takes
`RecordingConversation` in. A check run needs the token's `checks: write`, which a caller may not
grant: GitHub answers 403 then, and FREE-MAD goes on without the check run
(`freemad.github.run_progress`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # forge.py takes this module in; its types are only named here
    from freemad.github.forge import ForgeError, ListedComment, PostedComment

CONCLUSIONS = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
)
NOT_ACCESSIBLE = "Resource not accessible by integration"  # GitHub's 403 for a missing permission


class ConversationPort(Protocol):
    def create_check_run(
        self,
        repo: str,
        *,
        name: str,
        head_sha: str,
        title: str,
        summary: str,
        details_url: str | None = None,
        key: str | None = None,
    ) -> int:
        """A check run in progress on commit `head_sha` (POST .../check-runs), `key` (a new one
        when None) its `external_id`; its id. GitHub answers 403 when the token lacks
        `checks: write`."""
        ...

    def find_check_run(self, repo: str, *, name: str, head_sha: str, key: str) -> int | None:
        """The id of the check run named `name` on `head_sha` whose `external_id` is `key`, if
        there is one (GET .../commits/SHA/check-runs, every run of that name)."""
        ...

    def update_check_run(
        self,
        repo: str,
        check_run_id: int,
        *,
        title: str,
        summary: str,
        conclusion: str | None = None,
    ) -> None:
        """New progress (PATCH .../check-runs/ID), or with `conclusion` (one of `CONCLUSIONS`)
        the end: the check run is completed."""
        ...

    def reply_in_review_thread(
        self, repo: str, number: int, comment_id: int, body: str, *, key: str | None = None
    ) -> PostedComment:
        """A reply in the review thread of comment `comment_id` on pull request `number`'s diff
        (POST .../pulls/N/comments/ID/replies), ending with the marker of `key` (a new one when
        None), so `list_review_comments` and `find_key` find it again."""
        ...

    def edit_review_comment(self, repo: str, comment_id: int, body: str) -> PostedComment:
        """Edit a comment on a pull request's diff (PATCH .../pulls/comments/ID)."""
        ...

    def list_review_comments(self, repo: str, number: int) -> list[ListedComment]:
        """Every comment on pull request `number`'s diff, replies included, oldest first
        (GET .../pulls/N/comments)."""
        ...


@dataclass(kw_only=True)
class RecordingConversation:
    """`RecordingForge`'s check runs and review-thread replies, kept in memory and recorded.
    `checks_allowed=False` is a token without `checks: write`: GitHub's 403."""

    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    checks_allowed: bool = True
    # comment id -> (repo, pull request number, the comment replied to, body)
    thread_replies: dict[int, tuple[str, int, int, str]] = field(default_factory=dict)

    # RecordingForge's own
    def _record(self, method: str, **args: Any) -> None:
        raise NotImplementedError

    def _new_id(self) -> int:
        raise NotImplementedError

    def _refusal(self, status: int, method: str, path: str, message: str) -> ForgeError:
        raise NotImplementedError

    def _in_thread(self, repo: str, number: int, comment_id: int) -> PostedComment:
        raise NotImplementedError

    def _author(self) -> str:
        raise NotImplementedError

    def create_check_run(
        self,
        repo: str,
        *,
        name: str,
        head_sha: str,
        title: str,
        summary: str,
        details_url: str | None = None,
        key: str | None = None,
    ) -> int:
        args = {"name": name, "head_sha": head_sha, "title": title, "summary": summary}
        self._record("create_check_run", repo=repo, details_url=details_url, **args)
        if not self.checks_allowed:
            raise self._refusal(403, "POST", f"/repos/{repo}/check-runs", NOT_ACCESSIBLE)
        ident = self._new_id()
        self.check_runs[ident] = {"repo": repo, "status": "in_progress", "conclusion": None, **args}
        self.check_runs[ident]["external_id"] = key
        return ident

    def find_check_run(self, repo: str, *, name: str, head_sha: str, key: str) -> int | None:
        self._record("find_check_run", repo=repo, name=name, head_sha=head_sha, key=key)
        wanted = {"repo": repo, "name": name, "head_sha": head_sha, "external_id": key}
        return next(
            (
                ident
                for ident, run in sorted(self.check_runs.items())
                if wanted.items() <= run.items()
            ),
            None,
        )

    def update_check_run(
        self,
        repo: str,
        check_run_id: int,
        *,
        title: str,
        summary: str,
        conclusion: str | None = None,
    ) -> None:
        self._record(
            "update_check_run",
            repo=repo,
            check_run_id=check_run_id,
            title=title,
            summary=summary,
            conclusion=conclusion,
        )
        run = self.check_runs.get(check_run_id)
        path = f"/repos/{repo}/check-runs/{check_run_id}"
        if run is None or run["repo"] != repo:
            raise self._refusal(404, "PATCH", path, "Not Found")
        if conclusion is not None and conclusion not in CONCLUSIONS:
            raise self._refusal(422, "PATCH", path, f"conclusion {conclusion!r} is not valid")
        run.update(title=title, summary=summary)
        if conclusion is not None:
            run.update(status="completed", conclusion=conclusion)

    def reply_in_review_thread(
        self, repo: str, number: int, comment_id: int, body: str, *, key: str | None = None
    ) -> PostedComment:
        self._record(
            "reply_in_review_thread", repo=repo, number=number, comment_id=comment_id, body=body
        )
        if key is not None:
            body = f"{body}\n\n<!-- freemad:key={key} -->"  # as the real forge marks it
        ident = self._new_id()
        self.thread_replies[ident] = (repo, number, comment_id, body)
        return self._in_thread(repo, number, ident)

    def edit_review_comment(self, repo: str, comment_id: int, body: str) -> PostedComment:
        self._record("edit_review_comment", repo=repo, comment_id=comment_id, body=body)
        found = self.thread_replies.get(comment_id)
        if found is None or found[0] != repo:
            raise self._refusal(
                404, "PATCH", f"/repos/{repo}/pulls/comments/{comment_id}", "Not Found"
            )
        self.thread_replies[comment_id] = (found[0], found[1], found[2], body)
        return self._in_thread(repo, found[1], comment_id)

    def list_review_comments(self, repo: str, number: int) -> list[ListedComment]:
        from freemad.github.forge import ListedComment

        self._record("list_review_comments", repo=repo, number=number)
        author = self._author()
        kind = "Bot" if author.endswith("[bot]") else "User"
        return [
            ListedComment(ident, self._in_thread(repo, number, ident).html_url, body, author, kind)
            for ident, (where, on, _, body) in sorted(self.thread_replies.items())
            if (where, on) == (repo, number)
        ]
