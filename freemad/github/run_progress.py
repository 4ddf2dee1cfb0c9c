"""A debate's progress on its thread, as GitHub users expect of a bot: ONE status comment, posted
at once and edited in place as each round finishes (never a comment per round), and on a pull
request a check run on its head commit with the same progress and a conclusion at the end.

The check run needs the token's `checks: write`. A caller that does not grant it (the reusable
workflow's callers decide; an App installed before it asked for it) gets GitHub's 403: there is
then no check run, one log line says so, and everything else goes on. Progress is a courtesy:
a failed edit is logged, never fatal.
"""

from __future__ import annotations

import logging

from freemad.core.run_events import Event
from freemad.github.forge import ForgeError
from freemad.github.thread import Thread

_log = logging.getLogger("freemad.github")
MAX_SUMMARY = 65_535  # GitHub's limit on a check run's output.summary
_CUT = "\n\n[... cut: the whole text is in the comment on the pull request ...]"


class RunProgress:
    """The status comment of one run (`comment_id`, `html_url` once posted) and, on a pull
    request, its check run. It is an event sink: `round_finished` events move it on."""

    def __init__(self, thread: Thread, name: str, doing: str, rounds: int) -> None:
        """`name` names the check run ("FREE-MAD debate"); `doing` says what the run does, for
        the status line ("debating this issue"); `rounds` counts the rounds after the first."""
        self.thread, self.name, self.doing, self.rounds = thread, name, doing, rounds
        self.comment_id, self.html_url = 0, ""
        self.check_run: int | None = None

    def post(self, text: str, *, head_sha: str | None = None) -> None:
        """The status comment, and on a pull request the check run (on `head_sha`, else on the
        pull request's head as GitHub has it now)."""
        posted = self.thread.comment(text)
        self.comment_id, self.html_url = posted.id, posted.html_url
        if self.thread.is_pull_request:
            self._start_check(text, head_sha)

    def _start_check(self, text: str, head_sha: str | None) -> None:
        thread = self.thread
        try:
            if head_sha is None:
                known = thread.pull.head_sha if thread.pull is not None else ""
                head_sha = known or thread.forge.pull_request(thread.repo, thread.number).head_sha
            self.check_run = thread.forge.create_check_run(
                thread.repo,
                name=self.name,
                head_sha=head_sha,
                title="In progress",
                summary=_fit(text),
                details_url=self._details_url(),
            )
        except ForgeError as exc:  # 403: the token lacks checks: write; the run goes on
            _log.warning(
                "no check run on %s#%d (%s): %s",
                thread.repo,
                thread.number,
                "the token lacks checks: write" if exc.status == 403 else "GitHub refused it",
                exc.message,  # without the hint, which names other permissions
            )

    def _details_url(self) -> str | None:
        url = self.thread.settings.job_url
        return url if url and url.startswith(("https://", "http://")) else None

    def edit(self, text: str, *, title: str | None = None, conclusion: str | None = None) -> None:
        """The status comment says `text` now; the check run too (with `title`), and ends with
        `conclusion` when one is given."""
        try:
            self.thread.edit_comment(self.comment_id, text)
        except ForgeError as exc:
            _log.warning("could not update the status comment: %s", exc.one_line())
        if self.check_run is None:
            return
        try:
            self.thread.forge.update_check_run(
                self.thread.repo,
                self.check_run,
                title=title or ("Done" if conclusion else "In progress"),
                summary=_fit(text),
                conclusion=conclusion,
            )
        except ForgeError as exc:
            _log.warning("could not update the check run, left alone: %s", exc.one_line())
            self.check_run = None

    def __call__(self, event: Event) -> None:
        if event.kind != "round_finished":
            return
        done = int(event.data.get("round", 0)) + 1
        turns = event.data.get("turns") or {}
        answered = sum(1 for turn in turns.values() if turn.get("answer_id"))
        text = (
            f"FREE-MAD is {self.doing}: round {done} of {self.rounds + 1} finished, "
            f"{answered} of {len(turns)} agent(s) holding an answer."
        )
        job = self.thread.settings.job_url
        text += f" Follow it in [the GitHub Actions run]({job})." if job else ""
        self.edit(text, title=f"Round {done} of {self.rounds + 1}")


def _fit(text: str) -> str:
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - len(_CUT)] + _CUT
