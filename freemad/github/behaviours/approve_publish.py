"""Publishing a code task on GitHub: `/freemad approve publish`, the whole of it.

A `freemad:code` task's work waits on origin under a hidden ref (`tasks.keep_branch`); once someone
with write access approves, it is pushed as the task's branch and a pull request is opened, or,
where GitHub refuses the job one, the reply links the pushed branch and names the setting. The git
and pull-request work is in `freemad.github.publish`.
"""

from __future__ import annotations

from freemad.core.commands import Command
from freemad.errors import FreemadError
from freemad.github.behaviours.tasks import ProgressComment, keep_branch
from freemad.github.forge import PullRequestRef
from freemad.github.publish import publish_task
from freemad.github.pulls import BranchOnly
from freemad.github.thread import LinkedRun, Outcome, Thread


def approve(thread: Thread, run: LinkedRun, command: Command, login: str) -> Outcome:
    """`/freemad approve publish` on the thread's task: approve, then push and open the PR."""
    refused = thread.refuse_without_checkout("publishing", login=login)
    if refused is not None:
        return refused
    progress = ProgressComment(thread, run.comment_id, run.run_id)
    try:
        state = progress.runner.approve(run.run_id, "publish")
        keep_branch(thread, state)
        published = _open_pull_request(thread, run.run_id)
    except FreemadError as exc:
        return thread.reply("refused_by_run", login=login, reason=exc.one_line())
    progress.refresh()
    if isinstance(published, BranchOnly):
        reason = published.reason
        thread.reply("branch_only", login=login, url=published.html_url, reason=reason)
    else:
        thread.reply("published", login=login, url=published.html_url)
    return progress.steered(command, state, comment_url=published.html_url)


def _open_pull_request(thread: Thread, task_id: str) -> PullRequestRef | BranchOnly:
    """The pull request of an approved code task, or the pushed branch GitHub refused one for."""
    return publish_task(
        thread.config,
        thread.store,
        thread.forge,
        thread.repo,
        task_id,
        thread.settings.workspace,
        base=thread.default_branch,
        issue=thread.number,
        web_url=thread.settings.web_url,
    )
