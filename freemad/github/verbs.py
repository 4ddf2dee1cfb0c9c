"""The verb table: for each `/freemad` verb (and `freemad:` label), the least permission it needs
on the repository and the behaviour that carries it out.

A verb starts a run (`starting`), steers the thread's latest run (`steering`: the task handler or
the evolve handler, by the run's kind), or replies at once. `approve publish` has an entry of its
own: a verb with a stage is looked up as "VERB STAGE" first. Who may act is decided by
`freemad.core.permissions.may_act`; `needs` here says the same, for a reader (a test holds the two
together).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from freemad.core.commands import Command, help_text
from freemad.core.permissions import Actor, Permission, may_act
from freemad.github.behaviours import approve_publish, debate, evolve, review, tasks
from freemad.github.thread import Outcome, Start, Steer, Thread

Handler = Callable[[Thread, Command, str], Outcome]  # (thread, command, the commenter's login)


@dataclass(frozen=True)
class Verb:
    needs: Permission
    handle: Handler
    marks_comment: bool = True  # 👀 on the command's comment: FREE-MAD took it up


def starting(start: Start) -> Handler:
    """A verb that starts a run on the command's text, else on the issue's title and body (a
    label starts one as the bare command does)."""

    def handle(thread: Thread, command: Command, login: str) -> Outcome:
        text = thread.clean(command.full_text) or thread.text()
        return start(thread, text, command.options)

    return handle


def steering(*, task: Steer, evolve: Steer) -> Handler:
    """A verb for the latest task or evolve run on the thread, handled as that run's kind is."""

    def handle(thread: Thread, command: Command, login: str) -> Outcome:
        run = thread.latest_run()
        if run is None:
            what = "pull request" if thread.is_pull_request else "issue"
            return thread.reply("no_run", login=login, thing=what, verb=command.verb)
        steer = evolve if run.kind == "evolve" else task
        return steer(thread.for_run(run), run, command, login)

    return handle


def _help(thread: Thread, command: Command, login: str) -> Outcome:
    """The commands the sender may use here: their permission read as every command checks it."""
    held = thread.forge.permission(thread.repo, login)

    def may_use(verb: str) -> bool:
        return may_act(Actor(login, "User"), held, verb).allowed  # type: ignore[arg-type]

    return thread.reply("help", text=help_text(may_use))


VERBS: Mapping[str, Verb] = MappingProxyType(
    {
        "help": Verb("none", _help, marks_comment=False),
        "status": Verb("read", steering(task=tasks.status, evolve=evolve.status)),
        "debate": Verb("write", starting(debate.start)),
        "plan": Verb("write", starting(tasks.plan)),
        "code": Verb("write", starting(tasks.code)),
        "evolve": Verb("write", starting(evolve.start)),
        "review": Verb("write", review.handle),
        "answer": Verb("write", steering(task=tasks.answer, evolve=evolve.answer)),
        "approve": Verb("write", steering(task=tasks.approve, evolve=evolve.refuse)),
        "approve publish": Verb(
            "write", steering(task=approve_publish.approve, evolve=evolve.refuse)
        ),
        "reject": Verb("write", steering(task=tasks.reject, evolve=evolve.refuse)),
        "resume": Verb("write", steering(task=tasks.resume, evolve=evolve.resume)),
        "pause": Verb("write", steering(task=tasks.pause, evolve=evolve.pause)),
        "stop": Verb("write", steering(task=tasks.cancel, evolve=evolve.stop)),
        "decline": Verb("write", steering(task=tasks.cancel, evolve=evolve.decline)),
    }
)


def verb_of(command: Command) -> Verb:
    """The table's entry for `command`: "VERB STAGE" when the table has one, else "VERB"."""
    return VERBS.get(f"{command.verb} {command.stage}") or VERBS[command.verb]
