"""Task runs on GitHub: `/freemad plan` and `/freemad code` (or their labels) start a task; answer,
approve, reject, resume, pause, stop, decline and status steer the thread's task. A task keeps one
progress comment on its thread, edited in place as its stages pass.

Publishing an approved code task (`/freemad approve publish`) is `approve_publish`'s.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from freemad.core.commands import Command
from freemad.core.task_machine import RoleError, TaskState, assign_roles
from freemad.errors import FreemadError
from freemad.github.comments import render_task
from freemad.github.public_text import public_reason, without_local_paths
from freemad.github.publish import stash_task_branch
from freemad.github.thread import LinkedRun, Outcome, Steer, Thread
from freemad.markdown import escape_markdown
from freemad.tasks.task_runner import TaskRunner

Act = Callable[[Thread, TaskRunner, str, Command], TaskState]


# --- starting a task --------------------------------------------------------------------------


def plan(thread: Thread, goal: str, options: Mapping[str, Any]) -> Outcome:
    """A planning task on `goal`."""
    return _start(thread, "plan", goal)


def code(thread: Thread, goal: str, options: Mapping[str, Any]) -> Outcome:
    """A coding task on `goal`: it commits on a branch of the checkout, published only later."""
    refused = thread.refuse_without_checkout("code")
    if refused is not None:
        return refused
    return _start(thread, "code", goal)


def _start(thread: Thread, task_type: str, goal: str) -> Outcome:
    # A config that cannot run this task is said at once: no "starting" comment, no task.
    try:
        assign_roles(task_type, {a.id: a.roles for a in thread.config.enabled_agents})
    except RoleError as exc:
        reason = f"this FREE-MAD cannot run a {task_type} task: {exc}"
        return thread.reply("refused_by_run", reason=without_local_paths(reason))
    posted = thread.comment(thread.starting(f"a {task_type} task"))
    progress = ProgressComment(thread, posted.id, uuid.uuid4().hex[:16], link=True)
    progress.note = thread.pages_note_once()  # no run page to link: how to get one, said once
    try:
        state = progress.runner.start(
            task_type, goal, thread.settings.workspace, task_id=progress.task_id
        )
    except FreemadError as exc:
        if thread.store.run(progress.task_id) is not None:
            raise  # the task exists and failed on the way: as any failure of a run
        # Refused before the task was made (the workspace, the goal): the comment says so.
        thread.edit_comment(
            posted.id, f"FREE-MAD could not start the {task_type} task: {_said(exc)}"
        )
        return Outcome("refused", public_reason(exc), comment_url=posted.html_url)
    progress.refresh()
    keep_branch(thread, state)
    view = state.view()
    return Outcome(
        "task",
        run_id=state.task_id,
        status=view["status"],
        comment_url=posted.html_url,
        summary=progress.shown,
    )


def _said(exc: FreemadError) -> str:
    return escape_markdown(public_reason(exc), 500)


# --- steering the thread's task ---------------------------------------------------------------


def _steering(act: Act) -> Steer:
    """A steering handler from what its verb does to the task: the progress comment, keeping a
    code task's branch, and a refusal when the task cannot take the command, as for every verb."""

    @functools.wraps(act)
    def steer(thread: Thread, run: LinkedRun, command: Command, login: str) -> Outcome:
        progress = ProgressComment(thread, run.comment_id, run.run_id)
        try:
            state = act(thread, progress.runner, run.run_id, command)
            keep_branch(thread, state)
        except FreemadError as exc:
            return thread.reply("refused_by_run", login=login, reason=public_reason(exc))
        progress.refresh()
        return progress.steered(command, state)

    return steer


@_steering
def answer(thread: Thread, runner: TaskRunner, task_id: str, command: Command) -> TaskState:
    """`/freemad answer TEXT`: the answer to the waiting task's question; the task goes on."""
    runner.answer(task_id, thread.clean(command.full_text))
    return runner.resume(task_id)


@_steering
def approve(thread: Thread, runner: TaskRunner, task_id: str, command: Command) -> TaskState:
    """`/freemad approve [STAGE]`: the waiting stage (or the one named) passes; the task goes on.
    (`/freemad approve publish` is `approve_publish.approve`'s.)"""
    runner.approve(task_id, command.stage or runner.state(task_id).current_stage)
    return runner.resume(task_id)


@_steering
def reject(thread: Thread, runner: TaskRunner, task_id: str, command: Command) -> TaskState:
    """`/freemad reject REASON`: the waiting stage goes back with the reason; the task goes on."""
    state = runner.state(task_id)
    runner.reject(task_id, state.current_stage, thread.clean(command.full_text))
    return runner.resume(task_id)


def _by_runner(method: Callable[[TaskRunner, str], TaskState], doc: str) -> Steer:
    """A steering handler that is one call of the task's runner."""

    def act(thread: Thread, runner: TaskRunner, task_id: str, command: Command) -> TaskState:
        return method(runner, task_id)

    act.__name__, act.__qualname__, act.__doc__ = method.__name__, method.__name__, doc
    return _steering(act)


resume = _by_runner(TaskRunner.resume, "`/freemad resume`: the paused task goes on.")
pause = _by_runner(TaskRunner.pause, "`/freemad pause`: the task stops after its current step.")
cancel = _by_runner(TaskRunner.cancel, "`/freemad stop` and `/freemad decline`: the task ends.")
status = _by_runner(
    TaskRunner.state, "`/freemad status`: the progress comment is brought up to date."
)


# --- shared with publishing -------------------------------------------------------------------


class ProgressComment:
    """The one comment a task keeps on its thread, edited in place as the task moves, and the
    task's runner, which tells it of every step."""

    def __init__(
        self, thread: Thread, comment_id: int, task_id: str, *, link: bool = False
    ) -> None:
        """`link`: the thread is linked to the task once the task exists (its first step), so
        a later command never finds a task that was never made."""
        self.thread, self.comment_id, self.task_id = thread, comment_id, task_id
        self.link = link
        self.note = ""  # said below the progress while this process keeps the comment
        self.shown = ""
        self.runner = TaskRunner(
            thread.config,
            thread.store,
            ports=thread.ports,
            on_step=self.step,
            adapters=thread.adapters,
        )

    def step(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "task_created" and self.link:
            self.thread.link(self.task_id, "task", self.comment_id)
        if kind in ("stage_advanced", "waiting_for_human", "completed", "cancelled"):
            self.refresh()

    def refresh(self) -> None:
        state = self.runner.state(self.task_id)
        settings = self.thread.settings
        body = render_task(state, settings.run_url("task", self.task_id), settings.job_url)
        body += self.note
        if body != self.shown:
            self.thread.edit_comment(self.comment_id, body)
            self.shown = body

    def steered(self, command: Command, state: TaskState, **more: Any) -> Outcome:
        """What steering the task with `command` did, the comment as it now shows."""
        return Outcome(
            "steered",
            command.verb,
            run_id=self.task_id,
            status=state.status.value,
            summary=self.shown,
            **more,
        )


def keep_branch(thread: Thread, state: TaskState) -> None:
    """A code task's branch is kept on origin under a hidden ref (not a branch, no pull request)
    so a later job can publish it once someone approves."""
    if state.task_type == "code":
        stash_task_branch(thread.settings.workspace, state.task_id)
