"""The creates of `PyGithubForge` that GitHub may carry out and still answer 5xx: a comment, a
pull request. Each body ends with a hidden key (`markers`); before a retry FREE-MAD lists what is
there and takes the one with its key, so a create is never done twice. Every body is kept within
GitHub's limit (`body_limit`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from freemad.github.forge import ListedComment, PostedComment, PullRequestRef
from freemad.github.markers import find_key, key_of, new_key, with_key

if TYPE_CHECKING:
    from freemad.github.pygithub_forge import PyGithubForge


def list_comments(forge: PyGithubForge, repo: str, number: int) -> list[ListedComment]:
    """GET /repos/{repo}/issues/{number}/comments, every page, oldest first."""
    path = f"/repos/{repo}/issues/{number}/comments"

    def read() -> list[ListedComment]:
        listed = forge._repo(repo).get_issue(number).get_comments()  # follows GitHub's pages
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

    return forge._call("GET", path, read, idempotent=True)


def comment(
    forge: PyGithubForge, repo: str, number: int, body: str, *, key: str | None = None
) -> PostedComment:
    """POST /repos/{repo}/issues/{number}/comments, once; `key` as `Forge.comment`'s."""
    path = f"/repos/{repo}/issues/{number}/comments"
    key = key or new_key()
    text = with_key(body, key)

    def post() -> PostedComment:
        posted = forge._repo(repo).get_issue(number).create_comment(text)
        return PostedComment(posted.id, posted.html_url)

    def posted_already() -> PostedComment | None:
        found = find_key(reversed(list_comments(forge, repo, number)), key)
        return None if found is None else PostedComment(found.id, found.html_url)

    return forge._call("POST", path, post, idempotent=False, recover=posted_already)


def open_pull_request(
    forge: PyGithubForge, repo: str, *, head: str, base: str, title: str, body: str, draft: bool
) -> PullRequestRef:
    """POST /repos/{repo}/pulls, once: a repeat would be refused (422, "already exists")."""
    path = f"/repos/{repo}/pulls"
    key = new_key()
    text = with_key(body, key)
    qualified = head if ":" in head else f"{repo.split('/', 1)[0]}:{head}"

    def post() -> PullRequestRef:
        pull = forge._repo(repo).create_pull(
            base=base, head=head, title=title, body=text, draft=draft
        )
        return PullRequestRef(pull.number, pull.html_url)

    def opened_already() -> PullRequestRef | None:
        def first() -> PullRequestRef | None:
            for pull in forge._repo(repo).get_pulls(state="open", head=qualified, base=base):
                if key_of(pull.body) == key:
                    return PullRequestRef(pull.number, pull.html_url)
            return None

        return forge._call("GET", path, first, idempotent=True)

    return forge._call("POST", path, post, idempotent=False, recover=opened_already)
