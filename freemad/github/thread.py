"""The context every GitHub behaviour takes: the issue or pull request a run is discussed on, the
clients to act there (handed to the router, never built here), and the comment helpers.

Behaviours (`freemad.github.behaviours`) import this module, never the router, so the router can
import them through the verb table without a cycle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from freemad.adapters import Adapters
from freemad.agents.agent_port import AgentPort
from freemad.config.models import FreemadConfig
from freemad.core.commands import Command
from freemad.core.untrusted import clean
from freemad.github.comments import render_reply
from freemad.github.evolve_pr import PullRequestInfo
from freemad.github.forge import Forge, PostedComment
from freemad.github.public_text import without_local_paths
from freemad.store import Store

_NO_CHECKOUT = (
    "{what} needs a checkout of the repository, which this FREE-MAD bot does not keep; run it "
    "on GitHub Actions instead (FREEMAD_EXECUTOR=actions, docs/bot.md)"
)


@dataclass
class Settings:
    self_login: str | None = None
    allowed_bots: tuple[str, ...] = ()
    run_url: Callable[[str, str], str | None] = lambda kind, run_id: None
    # How to turn GitHub Pages on, when there is no site for `run_url` to link (None: nothing
    # to say): said once per repository (`Thread.pages_note_once`).
    pages_note: Callable[[], str | None] = lambda: None
    workspace: Path = field(default_factory=Path.cwd)  # the checkout code tasks branch from
    checkout: bool = True  # False: no checkout of the repository here (the bot's local worker)
    web_url: str = "https://github.com"  # GitHub's web address (a server's on GHES)
    job_url: str | None = None  # the GitHub Actions run doing this work, linked from comments
    # Opt-in: a pull request opened or pushed to is reviewed (the workflow's review-pull-requests).
    review_pull_requests: bool = False


@dataclass
class Outcome:
    """What handling one event did: for logs, the Action's outputs and the bot's records."""

    action: str  # ignored, replied, refused, debate, task, evolve, steered
    reason: str = ""
    run_id: str | None = None
    status: str | None = None
    final_answer: str | None = None
    comment_url: str | None = None
    summary: str = ""  # markdown for the job summary: what was posted


@dataclass(frozen=True)
class Clients:
    """What a front door hands the router, and the router every behaviour: the runs' adapters
    among them (`adapters`; `ports` are agents given as they are, scripted in tests)."""

    config: FreemadConfig
    forge: Forge
    store: Store
    settings: Settings
    ports: Mapping[str, AgentPort]
    adapters: Adapters

    def clean(self, text: str) -> str:
        """Untrusted text as agents are given it: cleaned, and cut at the config's limit."""
        return clean(text, limit=self.config.github.max_text_chars)

    def on(self, **where: Any) -> Thread:
        """These clients on an issue or pull request: `where` is the rest of a `Thread`'s fields
        (repo, number, title, body, is_pull_request, default_branch, pull)."""
        mine = {f.name: getattr(self, f.name) for f in fields(Clients)}
        return Thread(**mine, **where)


@dataclass(frozen=True)
class LinkedRun:
    """A run started on a thread, found again by a later command there."""

    run_id: str
    kind: str  # debate, task, evolve or review
    comment_id: int  # the comment the run keeps up to date on the thread
    in_review_thread: bool = False  # that comment is a reply in a review thread on the diff


# The shapes of behaviours' handlers: one that starts a run (on the text and options of the
# command, or the thread's own text), and one that steers the thread's latest run.
Start = Callable[["Thread", str, Mapping[str, Any]], "Outcome"]
Steer = Callable[["Thread", LinkedRun, Command, str], "Outcome"]


@dataclass(frozen=True)
class Thread(Clients):
    """Where a run is discussed: an issue or a pull request of a repository, with the clients
    (a thread is its router's `Clients` and where they act: `Clients.on` makes one)."""

    repo: str
    number: int
    title: str
    body: str
    is_pull_request: bool
    default_branch: str = "main"
    pull: PullRequestInfo | None = None  # known from a pull_request event's payload
    # The comment on a pull request's diff a command came in: FREE-MAD answers in its review
    # thread, not in the pull request's conversation.
    review_comment: int | None = None
    # Where the comment being edited is, when it is another run's (`for_run`); None: where
    # this thread posts.
    edits_in_review_thread: bool | None = None

    def text(self) -> str:
        """What agents are given of the issue or pull request: its title and body, cleaned."""
        return self.clean(f"{self.title}\n\n{self.body}").strip()

    # --- comments -----------------------------------------------------------------------------

    def comment(self, body: str) -> PostedComment:
        if self.review_comment is not None:
            return self.forge.reply_in_review_thread(
                self.repo, self.number, self.review_comment, body
            )
        return self.forge.comment(self.repo, self.number, body)

    def edit_comment(self, comment_id: int, body: str) -> None:
        in_thread = self.edits_in_review_thread
        if in_thread is None:  # this thread's own comment: where it posts
            in_thread = self.review_comment is not None
        if in_thread:
            self.forge.edit_review_comment(self.repo, comment_id, body)
        else:
            self.forge.edit_comment(self.repo, comment_id, body)

    def for_run(self, run: LinkedRun) -> Thread:
        """This thread, editing `run`'s comment where it is (a command in the conversation may
        steer a run started in a review thread, and the other way round)."""
        return replace(self, edits_in_review_thread=run.in_review_thread)

    def reply(self, kind: str, **values: Any) -> Outcome:
        """Post one of the short replies (`templates/github/reply.md.j2`) and say so; a reason
        never shows a path on this host."""
        if "reason" in values:
            values["reason"] = without_local_paths(str(values["reason"]))
        posted = self.comment(render_reply(kind, **values))
        return Outcome("replied", kind, comment_url=posted.html_url)

    def starting(self, what: str) -> str:
        """The first comment of a run on its thread, linking the Actions run doing the work."""
        job = self.settings.job_url
        follow = f" Follow it in [the GitHub Actions run]({job})." if job else ""
        return f"FREE-MAD is starting {what}…{follow}"

    def refuse_without_checkout(self, what: str, **values: Any) -> Outcome | None:
        """The reply when `what` needs a checkout of the repository and there is none here."""
        if self.settings.checkout:
            return None
        return self.reply("refused_by_run", reason=_NO_CHECKOUT.format(what=what), **values)

    def pages_note_once(self) -> str:
        """How to turn Pages on, the first time a run comment on this repository has no run
        page to link ("" after that, or with a site); the store remembers it was said."""
        note = self.settings.pages_note()
        if not note:
            return ""
        said = "gh-pages-" + hashlib.sha256(self.repo.encode()).hexdigest()[:16]
        if self.store.run(said) is not None:
            return ""
        self.store.create_run(said, "github_notice", {"repo": self.repo, "notice": "no_pages"})
        self.store.append(said, "said", {"repo": self.repo, "number": self.number})
        return f"\n\n{note}\n"

    # --- the link between a thread and its runs -----------------------------------------------
    # Each thread's runs are found again through a small link run of its own, so a
    # `/freemad answer` a week later finds the task it answers.

    def link(self, run_id: str, kind: str, comment_id: int) -> None:
        link_id = self._link_id()
        if self.store.run(link_id) is None:
            self.store.create_run(
                link_id, "github_link", {"repo": self.repo, "number": self.number}
            )
        data = {"repo": self.repo, "number": self.number, "run_id": run_id, "kind": kind}
        data["in_review_thread"] = self.review_comment is not None
        self.store.append(link_id, "linked", {**data, "comment_id": comment_id})

    def latest_run(self) -> LinkedRun | None:
        """The run a steering command is for: the last task or evolve run started here."""
        for event in reversed(self.store.events(self._link_id())):
            data = event.data
            if event.kind == "linked" and data["kind"] in ("task", "evolve"):
                return LinkedRun(
                    str(data["run_id"]),
                    str(data["kind"]),
                    int(data["comment_id"]),
                    bool(data.get("in_review_thread")),
                )
        return None

    def _link_id(self) -> str:
        return "gh-" + hashlib.sha256(f"{self.repo}#{self.number}".encode()).hexdigest()[:16]
