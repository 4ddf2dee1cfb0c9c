"""The stand-in's check runs (created, listed by commit, updated) and review-thread replies,
refused as GitHub refuses them: a check run without `checks: write` (403), on a commit the
repository lacks or without a name (422), a completion without a conclusion (422); a reply to a
comment that is not on that pull request's diff (404)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from freemad.github import standin_shapes as shapes
from freemad.github.forge_conversation import CONCLUSIONS, NOT_ACCESSIBLE
from freemad.github.standin_comments import paged
from freemad.github.standin_replies import NOT_FOUND, Reply, error_body, invalid

Query = Mapping[str, str]
STATUSES = ("queued", "in_progress", "completed")
MAX_SUMMARY = 65_535  # GitHub's limit on a check run's output.summary


class ConversationEndpoints:
    """Mixed into `StandIn`: the check runs and the replies in review threads it keeps."""

    pulls: dict[tuple[str, int], dict[str, Any]]
    review_comments: dict[int, dict[str, Any]]
    login: str
    reply_headers: dict[str, str]

    @property
    def site(self) -> shapes.Site:
        raise NotImplementedError  # StandIn's

    def _init_conversation(self) -> None:
        self.check_runs: dict[int, dict[str, Any]] = {}
        # Whether the token may write checks: a workflow or App without `checks: write` is 403.
        self.checks_writable = True
        self._check_ids = iter(range(5000, 10**9))

    # -- check runs ---------------------------------------------------------------------------
    def _commits(self, repo: str) -> set[str]:
        """The commits the stand-in knows of `repo`: its pull requests' heads."""
        return {p["head"]["sha"] for (where, _), p in self.pulls.items() if where == repo}

    def _post_check_run(self, method: str, repo: str, _: str, body: Any, query: Query) -> Reply:
        if not self.checks_writable:
            return 403, error_body(NOT_ACCESSIBLE)
        data = body if isinstance(body, dict) else {}
        for name in ("name", "head_sha"):
            if not isinstance(data.get(name), str) or not data[name]:
                return invalid("CheckRun", "missing_field", name)
        if data["head_sha"] not in self._commits(repo):
            return 422, error_body(f"No commit found for SHA: {data['head_sha']}")
        refused = _refused_progress(data)
        output = data.get("output")
        if refused is None and output is not None and not isinstance(output.get("title"), str):
            refused = invalid("CheckRun", "missing_field", "output.title")
        if refused is not None:
            return refused
        ident = next(self._check_ids)
        run = shapes.check_run(self.site, repo, ident, name=data["name"], head_sha=data["head_sha"])
        if isinstance(data.get("external_id"), str):
            run["external_id"] = data["external_id"]
        self.check_runs[ident] = {**run, "repo": repo}
        return 201, self._progress(ident, data)

    def _list_check_runs(self, method: str, repo: str, ref: str, body: Any, query: Query) -> Reply:
        """GET .../commits/REF/check-runs: REF's check runs, `check_name`'s only when given,
        paged. Every run is a latest one here (the stand-in reruns nothing), so `filter` is moot."""
        if ref not in self._commits(repo):
            return 422, error_body(f"No commit found for SHA: {ref}")
        name = query.get("check_name")
        found = [
            _public(run)
            for _, run in sorted(self.check_runs.items())
            if (run["repo"], run["head_sha"]) == (repo, ref) and name in (None, run["name"])
        ]
        url = f"{self.site.api}/repos/{repo}/commits/{ref}/check-runs"
        page = paged(found, query, url, self.reply_headers)
        return 200, {"total_count": len(found), "check_runs": page}

    def _check_run(self, method: str, repo: str, cid: str, body: Any, query: Query) -> Reply:
        run = self.check_runs.get(int(cid))
        if run is None or run["repo"] != repo:
            return NOT_FOUND
        if method == "PATCH":
            if not self.checks_writable:
                return 403, error_body(NOT_ACCESSIBLE)
            data = body if isinstance(body, dict) else {}
            refused = _refused_progress(data)
            if refused is not None:
                return refused
            return 200, self._progress(int(cid), data)
        return 200, _public(run)

    def _progress(self, ident: int, data: dict[str, Any]) -> dict[str, Any]:
        """The check run with `data`'s status, conclusion and output taken in."""
        run = self.check_runs[ident]
        status = data.get("status") or ("completed" if data.get("conclusion") else run["status"])
        run["status"] = status
        if data.get("conclusion"):
            run.update(conclusion=data["conclusion"], completed_at=shapes.now())
        output = data.get("output")
        if isinstance(output, dict):
            run["output"].update(
                title=output.get("title", run["output"]["title"]),
                summary=output["summary"],
                text=output.get("text"),
            )
        return _public(run)

    # -- replies in a review thread -----------------------------------------------------------
    def _reply_in_thread(
        self, method: str, repo: str, where: str, body: Any, query: Query
    ) -> Reply:
        """POST .../pulls/N/comments/ID/replies: ID must be a comment on N's diff."""
        number, _, cid = where.partition("/comments/")
        parent = self.review_comments.get(int(cid))
        if parent is None or (parent["repo"], parent["number"]) != (repo, int(number)):
            return NOT_FOUND
        text = body.get("body") if isinstance(body, dict) else None
        if not isinstance(text, str):
            return invalid("PullRequestReviewComment", "missing_field", "body")
        ident = next(self._check_ids)
        head = self.pulls.get((repo, int(number)), {}).get("head", {}).get("sha", shapes.ZERO_SHA)
        reply = shapes.review_comment(
            self.site,
            repo,
            int(number),
            ident,
            body=text,
            author=self.login,
            commit_id=head,
            path=str(parent.get("path", "README.md")),
            in_reply_to=parent.get("in_reply_to_id") or int(cid),
        )
        self.review_comments[ident] = {
            **reply,
            "repo": repo,
            "number": int(number),
            "reactions": [],
        }
        return 201, reply

    def _list_review_comments(
        self, method: str, repo: str, number: str, body: Any, query: Query
    ) -> Reply:
        """GET .../pulls/N/comments: every comment on N's diff, oldest first, paged."""
        on_it = [
            c
            for c in self.review_comments.values()
            if (c["repo"], c["number"]) == (repo, int(number))
        ]
        if (repo, int(number)) not in self.pulls and not on_it:
            return NOT_FOUND
        found = [
            _public(c)
            for _, c in sorted(self.review_comments.items())
            if (c["repo"], c["number"]) == (repo, int(number))
        ]
        url = f"{self.site.api}/repos/{repo}/pulls/{number}/comments"
        return 200, paged(found, query, url, self.reply_headers)

    def _review_comment(self, method: str, repo: str, cid: str, body: Any, query: Query) -> Reply:
        """PATCH .../pulls/comments/ID: a comment on a diff, edited (FREE-MAD's own replies)."""
        comment = self.review_comments.get(int(cid))
        if comment is None or comment["repo"] != repo:
            return NOT_FOUND
        if comment["user"]["login"] != self.login:
            return NOT_FOUND  # someone else's comment: FREE-MAD edits only its own
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            return invalid("PullRequestReviewComment", "missing_field", "body")
        comment.update(body=body["body"], updated_at=shapes.now())
        return 200, _public(comment)


def _refused_progress(data: dict[str, Any]) -> Reply | None:
    """GitHub's 422 for a check run's status, conclusion or output it does not take."""
    status, conclusion = data.get("status"), data.get("conclusion")
    if status is not None and status not in STATUSES:
        return invalid("CheckRun", "invalid", "status")
    if conclusion is not None and conclusion not in CONCLUSIONS:
        return invalid("CheckRun", "invalid", "conclusion")
    if status == "completed" and conclusion is None:
        return invalid("CheckRun", "missing_field", "conclusion")
    output = data.get("output")
    if output is not None:
        if not isinstance(output, dict) or not isinstance(output.get("summary"), str):
            return invalid("CheckRun", "missing_field", "output.summary")
        if len(output["summary"]) > MAX_SUMMARY:
            return invalid("CheckRun", "too_long", "output.summary")
    return None


def _public(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in ("repo", "number", "reactions")}
