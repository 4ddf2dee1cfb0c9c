"""`PyGithubForge`'s conversation calls (`freemad.github.forge_conversation.ConversationPort`):
check runs, and replies in a pull request's review threads. Each is created once, as comments are
(`pygithub_creates`): a reply ends with a hidden key, a check run carries one as its `external_id`,
and before a retry that follows a 5xx or a lost answer FREE-MAD looks for it and takes what it
finds instead of creating a second. The caller may give the key (the journal derives it from
the delivery, so a rerun finds what a killed run made: `find_check_run`, `list_review_comments`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from freemad.github.body_limit import fit_body
from freemad.github.forge import ListedComment, PostedComment
from freemad.github.markers import find_key, new_key, with_key

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
            self,
            method: str,
            path: str,
            action: Callable[[], T],
            *,
            idempotent: bool,
            recover: Callable[[], T | None] | None = None,
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
        key: str | None = None,
    ) -> int:
        key = key or new_key()
        body: dict[str, Any] = {"name": name, "head_sha": head_sha, "status": "in_progress"}
        body.update(external_id=key, output={"title": title, "summary": summary})
        if details_url:
            body["details_url"] = details_url
        # A second check run would stand beside the first: a retry looks for this one first.
        data = self._call(
            "POST",
            f"/repos/{repo}/check-runs",
            lambda: self._send("POST", repo, "/check-runs", body),
            idempotent=False,
            recover=lambda: self._check_run_made(repo, name, head_sha, key),
        )
        return int(data["id"])

    def find_check_run(self, repo: str, *, name: str, head_sha: str, key: str) -> int | None:
        found = self._check_run_made(repo, name, head_sha, key)
        return None if found is None else int(found["id"])

    def _check_run_made(
        self, repo: str, name: str, head_sha: str, key: str
    ) -> dict[str, Any] | None:
        """The check run named `name` on `head_sha` whose `external_id` is `key`, if GitHub made
        it: GET .../commits/{head_sha}/check-runs, every run of that name (not only the latest)."""
        path = f"/commits/{head_sha}/check-runs"
        url = f"{self._repo(repo).url}{path}"

        def find() -> dict[str, Any] | None:
            page = 1
            while True:
                asked = {"check_name": name, "filter": "all", "per_page": 100, "page": page}
                _, data = self._gh.requester.requestJsonAndCheck("GET", url, parameters=asked)
                runs = data.get("check_runs") or []
                found = next((run for run in runs if run.get("external_id") == key), None)
                if found is not None or len(runs) < 100:
                    return None if found is None else dict(found)
                page += 1

        return self._call("GET", f"/repos/{repo}{path}", find, idempotent=True)

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
        self, repo: str, number: int, comment_id: int, body: str, *, key: str | None = None
    ) -> PostedComment:
        path = f"/pulls/{number}/comments/{comment_id}/replies"
        key = key or new_key()
        text = with_key(body, key)

        def posted_already() -> dict[str, Any] | None:
            found = find_key(reversed(self.list_review_comments(repo, number)), key)
            return None if found is None else {"id": found.id, "html_url": found.html_url}

        # A second reply would be a duplicate: a retry looks for this one's key first.
        data = self._call(
            "POST",
            f"/repos/{repo}{path}",
            lambda: self._send("POST", repo, path, {"body": text}),
            idempotent=False,
            recover=posted_already,
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
