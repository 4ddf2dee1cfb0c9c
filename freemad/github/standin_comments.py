"""The stand-in's issue comments: seeded, posted, listed (paged as GitHub pages them) and
edited, each body held to GitHub's limit as GitHub holds it (422 past 65,536 characters)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from freemad.github import standin_shapes as shapes
from freemad.github.body_limit import MAX_BODY
from freemad.github.standin_replies import NOT_FOUND, Reply, invalid

Query = Mapping[str, str]
TOO_LONG = f"Body is too long (maximum is {MAX_BODY} characters)"  # GitHub's words


def public(item: dict[str, Any]) -> dict[str, Any]:
    """The JSON GitHub would send: the stand-in's own bookkeeping keys left out."""
    return {k: v for k, v in item.items() if k not in ("repo", "comment_id")}


def too_long(resource: str, text: object) -> Reply | None:
    """GitHub's refusal of a body over its limit (it counts characters), or None."""
    if isinstance(text, str) and len(text) > MAX_BODY:
        code, field = (
            ("unprocessable", "data") if resource == "IssueComment" else ("custom", "body")
        )
        return invalid(resource, code, field, TOO_LONG)
    return None


def paged(items: list[Any], query: Query, url: str, headers: dict[str, str]) -> list[Any]:
    """One page of `items` as GitHub pages a list: `per_page` (30, at most 100) from `page`, and
    a `Link` header (into `headers`) to the next and the last."""
    per_page = min(max(int(query.get("per_page", "30") or 30), 1), 100)
    page = max(int(query.get("page", "1") or 1), 1)
    pages = max(1, -(-len(items) // per_page))
    if page < pages:
        link = f"{url}?per_page={per_page}"
        headers["Link"] = f'<{link}&page={page + 1}>; rel="next", <{link}&page={pages}>; rel="last"'
    return items[(page - 1) * per_page : page * per_page]


class CommentEndpoints:
    """Mixed into `StandIn`: what it keeps of issue comments."""

    comments: dict[int, dict[str, Any]]
    login: str
    reply_headers: dict[str, str]
    _ids: Iterator[int]

    @property
    def site(self) -> shapes.Site:
        raise NotImplementedError  # StandIn's

    def _exists(self, repo: str, number: int) -> bool:
        raise NotImplementedError  # StandIn's

    def add_comment(
        self,
        repo: str,
        number: int,
        body: str,
        comment_id: int,
        *,
        author: str = "octocat",
        association: str = "MEMBER",
    ) -> None:
        """Seed a comment someone else wrote (the one a webhook payload is about)."""
        comment = shapes.comment(
            self.site, repo, number, comment_id, body=body, author=author, association=association
        )
        self.comments[comment_id] = {**comment, "repo": repo}

    def _post_comment(self, method: str, repo: str, number: str, body: Any, query: Query) -> Reply:
        text = body.get("body") if isinstance(body, dict) else None
        if not self._exists(repo, int(number)):
            return NOT_FOUND  # GitHub: 404 for an issue or pull request that does not exist
        if not isinstance(text, str):
            return invalid("IssueComment", "missing_field", "body")
        refused = too_long("IssueComment", text)
        if refused is not None:
            return refused
        cid = next(self._ids)
        comment = shapes.comment(
            self.site, repo, int(number), cid, body=text, author=self.login, association="NONE"
        )
        self.comments[cid] = {**comment, "repo": repo}
        return 201, comment

    def _list_comments(self, method: str, repo: str, number: str, body: Any, query: Query) -> Reply:
        """GET .../issues/N/comments: oldest first, paged."""
        if not self._exists(repo, int(number)):
            return NOT_FOUND
        issue_url = f"{self.site.api}/repos/{repo}/issues/{number}"
        found = [
            public(c)
            for _, c in sorted(self.comments.items())
            if c["repo"] == repo and c["issue_url"] == issue_url
        ]
        return 200, paged(found, query, f"{issue_url}/comments", self.reply_headers)

    def _comment(self, method: str, repo: str, cid: str, body: Any, query: Query) -> Reply:
        comment = self.comments.get(int(cid))
        if comment is None or comment["repo"] != repo:
            return NOT_FOUND
        if method == "PATCH":
            if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                return invalid("IssueComment", "missing_field", "body")
            refused = too_long("IssueComment", body["body"])
            if refused is not None:
                return refused
            comment.update(body=body["body"], updated_at=shapes.now())
        return 200, public(comment)
