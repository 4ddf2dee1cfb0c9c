"""The pull-request review calls of `PyGithubForge`: the files a pull request changes, and one
review posted whole (`POST /repos/{o}/{r}/pulls/{n}/reviews`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from freemad.github.forge import PostedReview, PullFile

if TYPE_CHECKING:
    from freemad.github.pygithub_forge import PyGithubForge


def pull_request_files(forge: PyGithubForge, repo: str, number: int) -> list[PullFile]:
    path = f"/repos/{repo}/pulls/{number}/files"

    def read() -> list[PullFile]:
        listed = forge._repo(repo).get_pull(number).get_files()  # follows GitHub's pages
        return [
            PullFile(
                f.filename,
                f.status,
                f.patch,
                f.previous_filename,
                f.additions,
                f.deletions,
            )
            for f in listed
        ]

    return forge._call("GET", path, read, idempotent=True)


def create_review(
    forge: PyGithubForge,
    repo: str,
    number: int,
    *,
    commit_id: str,
    body: str,
    event: str,
    comments: Sequence[Mapping[str, Any]],
) -> PostedReview:
    path = f"/repos/{repo}/pulls/{number}/reviews"

    def post() -> dict[str, Any]:
        url = f"{forge._repo(repo).url}/pulls/{number}/reviews"
        sent: dict[str, Any] = {"commit_id": commit_id, "body": body, "event": event}
        sent["comments"] = [dict(c) for c in comments]
        _, data = forge._gh.requester.requestJsonAndCheck("POST", url, input=sent)
        return dict(data)

    # Not repeated on a read timeout: a second review would be a duplicate.
    data = forge._call("POST", path, post, idempotent=False)
    return PostedReview(int(data["id"]), str(data.get("html_url", "")))
