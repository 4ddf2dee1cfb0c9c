"""A refusal at most once per person per thread: whoever may not steer FREE-MAD is told so the
first time, and later commands of theirs on the same issue or pull request are ignored quietly.
A command on a pull request's diff is refused in its review thread, and a refusal given there or
in the conversation counts for both.

The Action keeps nothing between jobs but the repository, and the bot's executors nothing but
their queue, so the thread itself remembers: each refusal carries a hidden marker naming whom it
refused (`markers.refusal_marker`), and before refusing again FREE-MAD lists the thread's comments
for one that FREE-MAD wrote. Both front doors (the router, for the Action and the local worker;
the actions executor) refuse through `refuse_once`.
"""

from __future__ import annotations

import logging

from freemad.github.comments import render_reply
from freemad.github.forge import Forge, ForgeError, PostedComment
from freemad.github.markers import refusal_marker, refused_before

log = logging.getLogger("freemad.github")


def refuse_once(
    forge: Forge,
    repo: str,
    number: int,
    login: str,
    reason: str,
    *,
    self_login: str | None,
    pull_request: bool = False,
    review_comment: int | None = None,
) -> PostedComment | None:
    """Post the refusal of `login` on `repo`#`number` (in the review thread of `review_comment`,
    a comment on the pull request's diff, when given), unless FREE-MAD refused them there before
    (or cannot tell: it lists the comments first, and a refusal twice is what this prevents);
    the comment posted, or None when none was. On a pull request the comments on its diff are
    looked through too."""
    try:
        listed = forge.list_comments(repo, number)
        if pull_request or review_comment is not None:
            listed += forge.list_review_comments(repo, number)
    except ForgeError as exc:
        log.warning("not refusing %s again unseen: %s", login, exc.one_line())
        return None
    if refused_before(listed, login, self_login):
        return None
    body = f"{render_reply('refused', login=login, reason=reason).rstrip()}\n\n"
    body += refusal_marker(login)
    if review_comment is not None:
        return forge.reply_in_review_thread(repo, number, review_comment, body)
    return forge.comment(repo, number, body)
