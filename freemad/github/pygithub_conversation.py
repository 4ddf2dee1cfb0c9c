"""`PyGithubForge`'s conversation calls (`freemad.github.forge_conversation.ConversationPort`):
check runs, and replies in a pull request's review threads."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from freemad.github.body_limit import fit_body
from freemad.github.forge import ListedComment, PostedComment

if TYPE_CHECKING:
    import github
    from github.Repository import Repository

T = TypeVar("T")


class ConversationCalls:
    """Mixed into `PyGithubForge`, whose `_call` retries and words GitHub's refusals."""

    if TYPE_CHECKING:  # PyGithubForge's
        _gh: github.Github

        def _repo(self, repo: str) -> Repository: ...

        def _call(
            self, method: str, path: str, action: Callable[[], T], *, idempotent: bool
        ) -> T: ...

    def _send(self, method: str, repo: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """One JSON request below the repository's address (`path` starts with "/")."""
        url = f"{self._repo(repo).url}{path}"
        _, data = self._gh.requester.requestJsonAndCheck(method, url, input=body)
        return dict(data)

    def create_check_run(
        self,
        repo: str,
        *,
        name: str,
        head_sha: str,
        title: str,
        summary: str,
        details_url: str | None = None,
    ) -> int:
        body: dict[str, Any] = {"name": name, "head_sha": head_sha, "status": "in_progress"}
        body["output"] = {"title": title, "summary": summary}
        if details_url:
            body["details_url"] = details_url
        # Not repeated on a read timeout: a second check run would stand beside the first.
        data = self._call(
            "POST",
            f"/repos/{repo}/check-runs",
            lambda: self._send("POST", repo, "/check-runs", body),
            idempotent=False,
        )
        return int(data["id"])

    def update_check_run(
        self,
        repo: str,
        check_run_id: int,
        *,
        title: str,
        summary: str,
        conclusion: str | None = None,
    ) -> None:
        body: dict[str, Any] = {"output": {"title": title, "summary": summary}}
        if conclusion is not None:
            body.update(status="completed", conclusion=conclusion)
        path = f"/check-runs/{check_run_id}"
        self._call(
            "PATCH",
            f"/repos/{repo}{path}",
            lambda: self._send("PATCH", repo, path, body),
            idempotent=True,
        )

    def reply_in_review_thread(
        self, repo: str, number: int, comment_id: int, body: str
    ) -> PostedComment:
        path = f"/pulls/{number}/comments/{comment_id}/replies"
        data = self._call(
            "POST",
            f"/repos/{repo}{path}",
            lambda: self._send("POST", repo, path, {"body": fit_body(body)}),
            idempotent=False,  # a second reply would be a duplicate
        )
        return PostedComment(int(data["id"]), str(data.get("html_url", "")))

    def edit_review_comment(self, repo: str, comment_id: int, body: str) -> PostedComment:
        path = f"/pulls/comments/{comment_id}"
        data = self._call(
            "PATCH",
            f"/repos/{repo}{path}",
            lambda: self._send("PATCH", repo, path, {"body": fit_body(body)}),
            idempotent=True,
        )
        return PostedComment(int(data["id"]), str(data.get("html_url", "")))

    def list_review_comments(self, repo: str, number: int) -> list[ListedComment]:
        """GET /repos/{repo}/pulls/{number}/comments, every page, oldest first."""

        def read() -> list[ListedComment]:
            listed = self._repo(repo).get_pull(number).get_review_comments()  # every page
            return [
                ListedComment(
                    c.id,
                    c.html_url,
                    c.body or "",
                    c.user.login if c.user is not None else "",
                    c.user.type if c.user is not None else "User",
                )
                for c in listed
            ]

        return self._call("GET", f"/repos/{repo}/pulls/{number}/comments", read, idempotent=True)
