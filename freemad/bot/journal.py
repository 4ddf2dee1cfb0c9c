"""A job's hold on its delivery, and the forge that journals through it: what lets a job complete
once.

A job writes to GitHub only while it holds its delivery's claim (`Claim`, over a `ClaimStore`):
`JournalForge` checks the claim before every write and journals each comment, pull request and
dispatch by order of posting, so a rerun of a killed job edits what the killed run posted instead
of posting it again. A comment, a review-thread reply and a check run also carry a key derived
from the delivery, so a rerun finds one that a killed run made but never journaled. `Renewal`
keeps the claim's lease fresh while the job works.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from freemad.bot.ports import ClaimStore, Effect, Owner
from freemad.errors import FreemadError
from freemad.github.forge import (
    Forge,
    IssueDetails,
    ListedComment,
    PostedComment,
    PostedReview,
    PullFile,
    PullRequestDetails,
    PullRequestRef,
)
from freemad.github.markers import derived_key, find_key, with_key


@dataclass(frozen=True)
class Claim:
    """One job's hold on one delivery: what its forge checks before each write, and journals to."""

    claims: ClaimStore
    delivery_id: str
    owner: Owner
    attempt: int

    def holds(self) -> bool:
        return self.claims.holds(self.delivery_id, self.owner)

    def effect(self, kind: str, seq: int) -> Effect | None:
        return self.claims.effect(self.delivery_id, kind, seq)

    def record(self, kind: str, seq: int, effect: Effect) -> None:
        self.claims.record(self.delivery_id, kind, seq, effect)


class LeaseLost(FreemadError):
    """This job's claim lapsed and may be someone else's now: it must write nothing more."""


class JournalForge:
    """A forge that checks its claim before each write and journals comments, pull requests and
    dispatches by order of posting, so a rerun of the same delivery edits instead of repeating."""

    def __init__(self, inner: Forge, claim: Claim) -> None:
        self.inner, self.claim = inner, claim
        self._counts: dict[str, int] = {}

    def _write(self, kind: str) -> tuple[int, Effect | None]:
        if not self.claim.holds():
            raise LeaseLost(f"the claim on delivery {self.claim.delivery_id} lapsed")
        seq = self._counts[kind] = self._counts.get(kind, 0) + 1
        return seq, self.claim.effect(kind, seq)

    def pages_url(self, repo: str) -> str | None:
        return self.inner.pages_url(repo)

    def permission(self, repo: str, login: str) -> str | None:
        return self.inner.permission(repo, login)

    def comment(
        self, repo: str, number: int, body: str, *, key: str | None = None
    ) -> PostedComment:
        seq, done = self._write("comment")
        if done is not None and (done.repo, done.number) == (repo, number):
            return self.inner.edit_comment(repo, done.ref, body)
        # The same key on every run of this delivery: a run that died (or failed) after GitHub
        # made the comment, before the journal had it, left it findable by this key.
        key = key or derived_key(self.claim.delivery_id, "comment", str(seq))
        found = self._made_before(self.inner.list_comments, repo, number, key)
        posted = found or self.inner.comment(repo, number, body, key=key)
        self.claim.record("comment", seq, Effect(repo, number, posted.id, posted.html_url))
        if found is not None:
            return self.inner.edit_comment(repo, found.id, with_key(body, key))
        return posted

    def _made_before(
        self, listing: Callable[[str, int], list[ListedComment]], repo: str, number: int, key: str
    ) -> PostedComment | None:
        """On a rerun, what `listing` lists with the marker of `key`: a first run made nothing."""
        if self.claim.attempt == 1:
            return None
        listed = find_key(listing(repo, number), key)
        return None if listed is None else PostedComment(listed.id, listed.html_url)

    def edit_comment(self, repo: str, comment_id: int, body: str) -> PostedComment:
        self._write("edit")
        return self.inner.edit_comment(repo, comment_id, body)

    def list_comments(self, repo: str, number: int) -> list[ListedComment]:
        return self.inner.list_comments(repo, number)

    def list_review_comments(self, repo: str, number: int) -> list[ListedComment]:
        return self.inner.list_review_comments(repo, number)

    def reply_in_review_thread(
        self, repo: str, number: int, comment_id: int, body: str, *, key: str | None = None
    ) -> PostedComment:
        seq, done = self._write("thread_reply")
        if done is not None and (done.repo, done.number) == (repo, number):
            return self.inner.edit_review_comment(repo, done.ref, body)
        key = key or derived_key(self.claim.delivery_id, "thread_reply", str(seq))  # as comment's
        found = self._made_before(self.inner.list_review_comments, repo, number, key)
        posted = found or self.inner.reply_in_review_thread(repo, number, comment_id, body, key=key)
        self.claim.record("thread_reply", seq, Effect(repo, number, posted.id, posted.html_url))
        if found is not None:
            return self.inner.edit_review_comment(repo, found.id, with_key(body, key))
        return posted

    def edit_review_comment(self, repo: str, comment_id: int, body: str) -> PostedComment:
        self._write("edit")
        return self.inner.edit_review_comment(repo, comment_id, body)

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
        seq, done = self._write("check_run")
        if done is not None and done.repo == repo:
            return done.ref  # the killed run's check run goes on, not a second one beside it
        # Its `external_id`, the same on every run: one the killed run made unjournaled goes on.
        key = key or derived_key(self.claim.delivery_id, "check_run", str(seq))
        found = (
            self.inner.find_check_run(repo, name=name, head_sha=head_sha, key=key)
            if self.claim.attempt > 1
            else None
        )
        ident = found or self.inner.create_check_run(
            repo,
            name=name,
            head_sha=head_sha,
            title=title,
            summary=summary,
            details_url=details_url,
            key=key,
        )
        self.claim.record("check_run", seq, Effect(repo, 0, ident, ""))
        return ident

    def find_check_run(self, repo: str, *, name: str, head_sha: str, key: str) -> int | None:
        return self.inner.find_check_run(repo, name=name, head_sha=head_sha, key=key)

    def update_check_run(
        self,
        repo: str,
        check_run_id: int,
        *,
        title: str,
        summary: str,
        conclusion: str | None = None,
    ) -> None:
        self._write("edit")
        self.inner.update_check_run(
            repo, check_run_id, title=title, summary=summary, conclusion=conclusion
        )

    def react(self, repo: str, comment_id: int, content: str) -> None:
        self._write("react")
        self.inner.react(repo, comment_id, content)

    def react_to_review_comment(self, repo: str, comment_id: int, content: str) -> None:
        self._write("react")
        self.inner.react_to_review_comment(repo, comment_id, content)

    def open_pull_request(
        self, repo: str, *, head: str, base: str, title: str, body: str, draft: bool
    ) -> PullRequestRef:
        seq, done = self._write("pull")
        if done is not None and done.repo == repo:
            self.inner.edit_pull_request(repo, done.ref, body=body)
            return PullRequestRef(done.ref, done.url)
        ref = self.inner.open_pull_request(
            repo, head=head, base=base, title=title, body=body, draft=draft
        )
        self.claim.record("pull", seq, Effect(repo, ref.number, ref.number, ref.html_url))
        return ref

    def edit_pull_request(self, repo: str, number: int, *, body: str) -> None:
        self._write("edit")
        self.inner.edit_pull_request(repo, number, body=body)

    def pull_request(self, repo: str, number: int) -> PullRequestDetails:
        return self.inner.pull_request(repo, number)

    def issue(self, repo: str, number: int) -> IssueDetails:
        return self.inner.issue(repo, number)

    def pull_request_files(self, repo: str, number: int) -> list[PullFile]:
        return self.inner.pull_request_files(repo, number)

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
        seq, done = self._write("review")
        if done is not None and (done.repo, done.number) == (repo, number):
            return PostedReview(done.ref, done.url)  # posted by the killed run: never twice
        posted = self.inner.create_review(
            repo, number, commit_id=commit_id, body=body, event=event, comments=comments
        )
        self.claim.record("review", seq, Effect(repo, number, posted.id, posted.html_url))
        return posted

    def find_pull_request(self, repo: str, *, head: str, base: str) -> PullRequestRef | None:
        return self.inner.find_pull_request(repo, head=head, base=base)

    def dispatch_workflow(
        self, repo: str, workflow: str, ref: str, inputs: Mapping[str, str]
    ) -> str | None:
        seq, done = self._write("dispatch")
        if done is not None:  # started already: the run it started, if GitHub said so
            return done.url if done.url.startswith(("https://", "http://")) else None
        run_url = self.inner.dispatch_workflow(repo, workflow, ref, inputs)
        self.claim.record("dispatch", seq, Effect(repo, 0, 0, run_url or ""))
        return run_url


class Renewal:
    """Renews a claim every quarter lease while a job runs."""

    def __init__(self, claim: Claim, lease: float) -> None:
        self.claim, self.lease = claim, lease
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="claim-renewal", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.lease / 4):
            if not self.claim.claims.renew(self.claim.delivery_id, self.claim.owner, self.lease):
                return

    def __enter__(self) -> Renewal:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
