"""`/freemad review` and the `freemad:review` label: a review debate on the pull request's diff,
posted as one pull-request review.

The status comment is posted before the agents start and edited in place as rounds finish (never
a comment per round), and at the end says where the review is. Nothing is posted half-way: a pull
request with nothing to review (an empty or binary-only diff) or closed (before or while the
agents worked) gets a reply and no review; GitHub takes the review whole or refuses it whole,
and a refused inline comment sends every finding into the body instead.
"""

from __future__ import annotations

import uuid
from typing import Any

from freemad.core.commands import Command
from freemad.core.run_events import fan_out
from freemad.debate.debate_record import DebateResult
from freemad.debate.review_debate import ReviewRequest, ReviewResult, fold_review, review_request
from freemad.errors import FreemadError
from freemad.github.forge import ForgeError, PostedReview, PullRequestDetails
from freemad.github.public_text import public_reason
from freemad.github.review_post import diff_from_files, everything_in_body, review_payload
from freemad.github.run_progress import RunProgress
from freemad.github.thread import Outcome, Thread
from freemad.markdown import escape_markdown


def handle(thread: Thread, command: Command, login: str) -> Outcome:
    """Review the thread's pull request; the command's text (if any) is a focus for the agents."""
    if not thread.is_pull_request:
        reason = "`/freemad review` reviews a pull request; this is an issue."
        return thread.reply("refused_by_run", login=login, reason=reason)
    try:
        pull = thread.forge.pull_request(thread.repo, thread.number)
        if pull.state != "open":
            reason = f"pull request #{thread.number} is {pull.state}: there is nothing to review."
            return thread.reply("refused_by_run", login=login, reason=reason)
        files = thread.forge.pull_request_files(thread.repo, thread.number)
        focus = thread.clean(command.full_text)
        context = thread.text() + (f"\n\nWhat to look at, says {login}: {focus}" if focus else "")
        diff, unseen = diff_from_files(files)
        request = review_request(diff, thread.config, context, unseen)
    except FreemadError as exc:  # ReviewRefused, or GitHub's refusal: said, nothing started
        return thread.reply("refused_by_run", login=login, reason=exc.one_line())
    rounds = command.options.get("rounds")  # the grammar makes it an int
    total = thread.config.debate.rounds if rounds is None else int(rounds)
    status = RunProgress(thread, "FREE-MAD review", "reviewing this pull request", total)
    status.post(thread.starting("a review debate on this pull request"), head_sha=pull.head_sha)
    try:
        result = _debate(thread, request, rounds, status)
    except FreemadError as exc:
        said = f"FREE-MAD could not review this pull request: {escape_markdown(public_reason(exc), 500)}"
        status.edit(said, title="Could not review", conclusion="failure")
        return Outcome("refused", exc.one_line())
    thread.link(result.debate.run_id, "review", status.comment_id)
    if result.score is None:
        reason = result.debate.error or "no agent gave a review"
        said = f"The review debate gave no review: {escape_markdown(reason, 500)}"
        status.edit(said, title="No review", conclusion="failure")
        return Outcome("review", reason, run_id=result.debate.run_id, status="failed")
    return _post(thread, pull, result, status)


def _debate(
    thread: Thread, request: ReviewRequest, rounds: int | str | None, status: RunProgress
) -> ReviewResult:
    """The review debate, kept in the store as it goes (as a debate is), then folded."""
    from freemad.debate import run_debate
    from freemad.debate.live_store import StoreJournal
    from freemad.debate.review_debate import check_solution, for_review

    run_id = uuid.uuid4().hex
    summary: dict[str, Any] = {"goal": f"review of {thread.repo}#{thread.number}"[:200]}
    summary.update(kind="review", issue={"repo": thread.repo, "number": thread.number})
    with StoreJournal(thread.store, thread.config, run_id, request.requirement, summary) as journal:
        result = run_debate(
            request.requirement,
            for_review(thread.config),
            rounds=int(rounds) if rounds is not None else None,
            agents=thread.ports or None,
            on_event=fan_out(journal, status),
            run_id=run_id,
            adapters=thread.adapters,
            check=check_solution(thread.config),
        )
        result = DebateResult.model_validate(journal.finish(result))
    return fold_review(request, result, thread.config)


def _post(
    thread: Thread, pull: PullRequestDetails, result: ReviewResult, status: RunProgress
) -> Outcome:
    """Post the review, unless the pull request closed while the agents worked."""
    run_id = result.debate.run_id
    now = thread.forge.pull_request(thread.repo, thread.number)
    if now.state != "open":
        said = f"Pull request #{thread.number} was closed while the agents reviewed it: nothing was posted."
        status.edit(said, title="Closed meanwhile", conclusion="skipped")
        return Outcome("refused", "closed meanwhile", run_id=run_id, status="closed")
    payload = review_payload(result, thread.config, pull.head_sha)
    try:
        posted = _create(thread, payload)
    except ForgeError as exc:
        said = f"GitHub refused the review: {escape_markdown(public_reason(exc), 500)}"
        status.edit(said, title="Refused by GitHub", conclusion="failure")
        return Outcome("refused", exc.one_line(), run_id=run_id, status="refused")
    inline = len(payload["comments"])
    found = len(result.surviving)
    status.edit(
        f"FREE-MAD's review is posted: [{found} finding(s)]({posted.html_url}), "
        f"{inline} inline; run `{run_id}`.",
        title=f"{found} finding(s)",
        conclusion="success",
    )
    return Outcome(
        "review",
        str(payload["event"]),  # COMMENT, or what the config asked and GitHub took
        run_id=run_id,
        status=result.debate.status,
        comment_url=posted.html_url,
        summary=payload["body"],
    )


def _create(thread: Thread, payload: dict[str, Any]) -> PostedReview:
    """One review; if GitHub refuses an inline comment or the event (a job's token may not
    approve), once more as it will take it: findings in the body, or a COMMENT."""

    def send(sent: dict[str, Any]) -> PostedReview:
        return thread.forge.create_review(
            thread.repo,
            thread.number,
            commit_id=sent["commit_id"],
            body=sent["body"],
            event=sent["event"],
            comments=sent["comments"],
        )

    try:
        return send(payload)
    except ForgeError as exc:
        if exc.status != 422:
            raise
        said = exc.one_line()
        if payload["event"] == "APPROVE" and "approve" in said.lower():
            note = (
                f"(Posted as a comment: GitHub refused the approval: {escape_markdown(said, 300)}.)"
            )
            return send({**payload, "event": "COMMENT", "body": payload["body"] + f"\n{note}\n"})
        if payload["comments"]:
            why = f"(GitHub refused the inline comments: {escape_markdown(said, 300)}; they are here.)"
            return send(everything_in_body(payload, why))
        raise
