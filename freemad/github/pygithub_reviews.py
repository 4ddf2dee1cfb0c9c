"""The pull-request review calls of `PyGithubForge`: the files a pull request changes, and one
review posted whole (`POST /repos/{o}/{r}/pulls/{n}/reviews`), once, its bodies within GitHub's
limit (`markers`, `body_limit`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from freemad.github.body_limit import fit_body
from freemad.github.forge import PostedReview, PullFile
from freemad.github.markers import key_of, new_key, with_key

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
    key = new_key()
    text = with_key(body, key)

    def post() -> dict[str, Any]:
        url = f"{forge._repo(repo).url}/pulls/{number}/reviews"
        sent: dict[str, Any] = {"commit_id": commit_id, "body": text, "event": event}
        sent["comments"] = [{**c, "body": fit_body(str(c.get("body", "")))} for c in comments]
        _, data = forge._gh.requester.requestJsonAndCheck("POST", url, input=sent)
        return dict(data)

    def posted_already() -> dict[str, Any] | None:
        def find() -> dict[str, Any] | None:
            for review in forge._repo(repo).get_pull(number).get_reviews():
                if key_of(review.body) == key:
                    return {"id": review.id, "html_url": review.html_url}
            return None

        return forge._call("GET", path, find, idempotent=True)

    # A second review would be a duplicate: a retry looks for this one's key first.
    data = forge._call("POST", path, post, idempotent=False, recover=posted_already)
    return PostedReview(int(data["id"]), str(data.get("html_url", "")))
