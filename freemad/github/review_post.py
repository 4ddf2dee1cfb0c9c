"""A review debate's result as the one pull-request review FREE-MAD posts, and a pull request's
diff rebuilt from the files GitHub lists.

The review is one request (`POST /repos/{o}/{r}/pulls/{n}/reviews`), submitted at once: the
summary as its body, each surviving finding on a line of the diff as an inline comment
(`line`, `side: RIGHT`), the others in the body. GitHub takes all of it or none, so nothing is
ever posted half-way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from freemad.config.models import FreemadConfig
from freemad.core.review_diff import LeftOut
from freemad.debate.review_debate import ReviewResult
from freemad.debate.review_markdown import finding_comment, render_summary
from freemad.github.forge import PullFile


def review_payload(
    result: ReviewResult, config: FreemadConfig, commit_id: str, *, note: str = ""
) -> dict[str, Any]:
    """The request body of the review: `commit_id` is the head the diff was read at (a later
    push leaves the comments on the lines they were about, marked outdated)."""
    inline, _outside = result.placed()
    body = render_summary(result, config)
    if note:
        body += f"\n{note}\n"
    return {
        "commit_id": commit_id,
        "body": body,
        "event": result.event(config),
        "comments": [
            {
                "path": scored.finding.path,
                "line": scored.finding.line,
                "side": "RIGHT",
                "body": finding_comment(scored),
            }
            for scored in inline
        ],
    }


def everything_in_body(payload: dict[str, Any], why: str) -> dict[str, Any]:
    """The review again with its inline comments moved into the body (GitHub refused one)."""
    moved = "\n\n".join(
        f"#### `{c['path']}:{c['line']}`\n\n{c['body']}" for c in payload["comments"]
    )
    body = payload["body"] + f"\n{why}\n\n{moved}\n" if moved else payload["body"]
    return {**payload, "body": body, "comments": []}


def diff_from_files(files: Sequence[PullFile]) -> tuple[str, list[LeftOut]]:
    """A unified diff of the files, as `git diff` prints it, and the text files GitHub shows no
    patch for (too large), which the review lists as not read. A binary file (no patch, no line
    counted) is a "Binary files ... differ" entry, so the review lists it too."""
    parts = []
    unseen: list[LeftOut] = []
    for changed in files:
        new = changed.filename
        old = changed.previous_filename or new
        source = "/dev/null" if changed.status == "added" else f"a/{old}"
        target = "/dev/null" if changed.status == "removed" else f"b/{new}"
        head = f"diff --git a/{old} b/{new}\n"
        if changed.status == "added":
            head += "new file mode 100644\n"
        elif changed.status == "removed":
            head += "deleted file mode 100644\n"
        if old != new:
            head += f"rename from {old}\nrename to {new}\n"
        if changed.patch is None and (changed.additions or changed.deletions):
            counts = f"+{changed.additions} -{changed.deletions} lines"
            unseen.append(LeftOut(new, "no_patch", f"{new} ({changed.status}, {counts})"))
        elif changed.patch is None:
            parts.append(head + f"Binary files {source} and {target} differ\n")
        elif changed.patch.strip():
            parts.append(head + f"--- {source}\n+++ {target}\n{changed.patch.rstrip(chr(10))}\n")
    return "".join(parts), unseen
