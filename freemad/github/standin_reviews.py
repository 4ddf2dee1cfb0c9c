"""The stand-in's pull-request review endpoints: a pull request's files (from the diff a test or
`freemad github simulate --pr-diff` gives it, paged as GitHub pages them) and reviews, refused
as GitHub refuses them (a comment off the diff, a body missing, an event it does not know)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from freemad.core.review_diff import Diff, DiffError, parse_diff
from freemad.github import standin_shapes as shapes
from freemad.github.standin_comments import TOO_LONG, paged, too_long
from freemad.github.standin_replies import DOCS, NOT_FOUND, Reply, error_body

EVENTS = ("APPROVE", "REQUEST_CHANGES", "COMMENT")
Query = Mapping[str, str]
_STATUS = {"added": "added", "deleted": "removed", "renamed": "renamed", "modified": "modified"}


def _unprocessable(*errors: str) -> Reply:
    """GitHub's 422 for a review: `validation-error-simple`, its errors plain strings."""
    return 422, {
        "message": "Unprocessable Entity",
        "errors": list(errors),
        "documentation_url": DOCS,
    }


class ReviewEndpoints:
    """Mixed into `StandIn`: what it keeps of pull requests' diffs and reviews."""

    pulls: dict[tuple[str, int], dict[str, Any]]
    review_comments: dict[int, dict[str, Any]]
    login: str

    @property
    def site(self) -> shapes.Site:
        raise NotImplementedError  # StandIn's

    def _reaction(
        self, body: Any, exists: bool, kept: list[dict[str, Any]], key: dict[str, Any]
    ) -> Reply:
        raise NotImplementedError  # StandIn's

    def _init_reviews(self) -> None:
        self.pull_diffs: dict[tuple[str, int], str] = {}
        self.reviews: list[dict[str, Any]] = []
        self.reply_headers: dict[str, str] = {}  # extra headers of the reply being made

    def add_review_comment(
        self, repo: str, number: int, body: str, comment_id: int, author: str = "octocat"
    ) -> None:
        """Seed a comment someone wrote on pull request `number`'s diff (the one a
        pull_request_review_comment payload is about), in the shape GitHub lists it."""
        head = self.pulls.get((repo, number), {}).get("head", {}).get("sha", shapes.ZERO_SHA)
        comment = shapes.review_comment(
            self.site,
            repo,
            number,
            comment_id,
            body=body,
            author=author,
            commit_id=head,
            path="README.md",
        )
        self.review_comments[comment_id] = {
            **comment,
            "repo": repo,
            "number": number,
            "reactions": [],
        }

    def _react_review(self, method: str, repo: str, cid: str, body: Any, query: Query) -> Reply:
        """A reaction on a comment on a pull request's diff (kept with the comment)."""
        comment = self.review_comments.get(int(cid)) or {}
        exists = comment.get("repo") == repo
        return self._reaction(body, exists, comment.get("reactions", []), {})

    def set_pull_diff(self, repo: str, number: int, diff: str) -> None:
        """The diff pull request `number` shows (its files and patches are read from it)."""
        self.pull_diffs[(repo, number)] = diff

    def _diff_entries(self, repo: str, number: int) -> list[dict[str, Any]]:
        text = self.pull_diffs.get((repo, number), "")
        try:
            diff, patches = parse_diff(text), list(PatchSet(text))
        except (DiffError, UnidiffParseError):
            return []
        head = self.pulls[(repo, number)]["head"]["sha"]
        entries = []
        for changed, patched in zip(diff.files, patches, strict=True):
            sha = hashlib.sha1(changed.patch.encode(), usedforsecurity=False).hexdigest()
            entry = shapes.diff_entry(self.site, repo, head, changed.path, sha)
            entry.update(status=_STATUS[changed.status], additions=changed.added)
            entry.update(deletions=changed.removed, changes=changed.added + changed.removed)
            if not changed.binary:  # GitHub gives no patch for a binary file
                entry["patch"] = "".join(str(hunk) for hunk in patched).rstrip("\n")
            if changed.status == "renamed":
                entry["previous_filename"] = changed.old_path
            entries.append(entry)
        return entries

    def _pull_files(self, method: str, repo: str, number: str, body: Any, query: Query) -> Reply:
        """GET .../pulls/N/files, `per_page` (30, at most 100) a page, `Link` to the next."""
        if (repo, int(number)) not in self.pulls:
            return NOT_FOUND
        entries = self._diff_entries(repo, int(number))
        per_page = min(max(int(query.get("per_page", "30") or 30), 1), 100)
        page = max(int(query.get("page", "1") or 1), 1)
        shown = entries[(page - 1) * per_page : page * per_page]
        pages = max(1, -(-len(entries) // per_page))
        if page < pages:
            url = f"{self.site.api}/repos/{repo}/pulls/{number}/files?per_page={per_page}"
            self.reply_headers["Link"] = (
                f'<{url}&page={page + 1}>; rel="next", <{url}&page={pages}>; rel="last"'
            )
        return 200, shown

    def _post_review(self, method: str, repo: str, number: str, body: Any, query: Query) -> Reply:
        """POST .../pulls/N/reviews: submitted at once, every comment on a line of the diff."""
        pull = self.pulls.get((repo, int(number)))
        if pull is None:
            return NOT_FOUND
        data = body if isinstance(body, dict) else {}
        comments = [c for c in data.get("comments") or [] if isinstance(c, dict)]
        event = data.get("event")
        if event is not None and event not in EVENTS:
            return _unprocessable(f"Unknown review event {event!r}")
        if too_long("PullRequestReview", data.get("body")) is not None:
            return _unprocessable(TOO_LONG)
        if any(too_long("PullRequestReviewComment", c.get("body")) for c in comments):
            return _unprocessable(TOO_LONG)
        if event in ("COMMENT", "REQUEST_CHANGES") and not data.get("body"):
            return _unprocessable(f"Review body is required for {event}")  # GitHub's rule
        if event == "APPROVE" and pull["user"]["login"] == self.login:
            return _unprocessable("Can not approve your own pull request")
        try:
            diff = parse_diff(self.pull_diffs.get((repo, int(number)), ""))
        except DiffError:
            diff = Diff(())
        for comment in data.get("comments") or []:
            path, line = comment.get("path"), comment.get("line")
            if diff.file(str(path)) is None:
                return _unprocessable("Path could not be resolved")
            if comment.get("side", "RIGHT") != "RIGHT" or not diff.in_diff(str(path), line):
                return _unprocessable("Pull request review thread line must be part of the diff")
        ident = len(self.reviews) + 1000
        review = shapes.review(
            self.site,
            repo,
            int(number),
            ident,
            body=str(data.get("body", "")),
            state={"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED"}.get(
                str(event), "COMMENTED" if event else "PENDING"
            ),
            commit_id=str(data.get("commit_id") or pull["head"]["sha"]),
            author=self.login,
        )
        self.reviews.append({**review, "repo": repo, "comments": list(data.get("comments") or [])})
        return 200, review

    def _list_reviews(self, method: str, repo: str, number: str, body: Any, query: Query) -> Reply:
        """GET .../pulls/N/reviews: oldest first, paged."""
        if (repo, int(number)) not in self.pulls:
            return NOT_FOUND
        url = f"{self.site.api}/repos/{repo}/pulls/{number}"
        found = [
            {k: v for k, v in r.items() if k not in ("repo", "comments")}
            for r in self.reviews
            if r["repo"] == repo and r["pull_request_url"] == url
        ]
        return 200, paged(found, query, f"{url}/reviews", self.reply_headers)


__all__ = ["EVENTS", "ReviewEndpoints", "error_body"]
