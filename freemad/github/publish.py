"""Publishing local git work to the repository's remote: a code task's branch only after approval.

A `freemad:code` task commits on `freemad/task/<id>` in the job's clone, which is thrown away after
the job. `stash_task_branch` keeps the work on the remote under a hidden ref,
`refs/freemad/tasks/<id>`: not a branch, so GitHub lists it nowhere and no pull request can come
from it. `publish_task`, after `/freemad approve publish`, pushes it as the branch and opens the
pull request. Every push here is fast-forward only; FREE-MAD never force-pushes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import git

from freemad.config.models import FreemadConfig
from freemad.core.task_machine import Status, TaskState
from freemad.errors import FreemadError, UsageError
from freemad.github.forge import Forge, ForgeError, PullRequestRef
from freemad.github.pulls import BranchOnly, open_or_explain
from freemad.markdown import code_span, escape_markdown, escape_markdown_block, one_line
from freemad.store import Store
from freemad.workspace.git import COMMIT_CONFIG, commit_of, open_checkout

_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
_QUIET = ("--no-tags", "--no-recurse-submodules", "--no-write-fetch-head", "--quiet")
# No prompt for credentials a job does not have: fail at once instead of hanging.
_NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0"}
_SUMMARY_CHARS = 3000


def task_branch(task_id: str) -> str:
    return f"freemad/task/{task_id}"


def stash_ref(task_id: str) -> str:
    """The hidden ref a task's work waits under on the remote until it is approved."""
    return f"refs/freemad/tasks/{task_id}"


# --- git against the remote -------------------------------------------------------------------


@contextmanager
def local_repo(workspace: Path) -> Iterator[git.Repo]:
    with open_checkout(workspace) as repo:
        repo.git.update_environment(**_NO_PROMPT)
        yield repo


def push_refs(workspace: Path, remote: str, refspecs: Sequence[str]) -> None:
    """Push `refspecs` ("src:dst", never forced) to `remote`; a refusal is one FreemadError line."""
    if any(spec.startswith("+") for spec in refspecs):
        raise ValueError("FREE-MAD never force-pushes")
    with local_repo(workspace) as repo:
        status, out, err = repo.git(c=[*COMMIT_CONFIG, "push.gpgSign=false"]).push(
            *("--porcelain", "--no-verify", "--no-follow-tags", "--recurse-submodules=no"),
            remote,
            *refspecs,
            with_extended_output=True,
            with_exceptions=False,
        )
    if status == 0:
        return
    for line in str(out).splitlines():
        if line.startswith("!"):  # "!\t<src>:<dst>\t[rejected] (non-fast-forward)"
            _, spec, why = [*line.split("\t"), "", ""][:3]
            ref = spec.rpartition(":")[2]
            raise FreemadError(
                f"git push to {remote} refused {ref}: {one_line(why)}",
                hint="FREE-MAD never force-pushes; someone else wrote to that ref",
            )
    raise FreemadError(f"git push to {remote} failed: {_last_line(str(err))}")


def fetch_refs(workspace: Path, remote: str, refspecs: Sequence[str]) -> bool:
    """Fetch `refspecs` from `remote`; False when the remote has no such ref."""
    with local_repo(workspace) as repo:
        status, _, err = repo.git.fetch(
            *_QUIET, remote, *refspecs, with_extended_output=True, with_exceptions=False
        )
    if status == 0:
        return True
    if "couldn't find remote ref" in str(err):  # GitPython runs git with LC_ALL=C
        return False
    raise FreemadError(f"git fetch from {remote} failed: {_last_line(str(err))}")


def is_ancestor(repo: git.Repo, older: str, newer: str) -> bool:
    status, _, _ = repo.git.merge_base(
        "--is-ancestor", older, newer, with_extended_output=True, with_exceptions=False
    )
    return bool(status == 0)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "git gave no reason"


# --- code tasks -------------------------------------------------------------------------------


def stash_task_branch(workspace: Path, task_id: str, *, remote: str = "origin") -> str | None:
    """Push the task's branch to `refs/freemad/tasks/<id>` on `remote` (not a branch, so nothing
    is published): its commit, or None when the task has no branch or no commit of its own."""
    _check_id(task_id)
    with local_repo(workspace) as repo:
        tip = commit_of(repo, f"refs/heads/{task_branch(task_id)}")
        base = commit_of(repo, f"refs/freemad/base/{task_id}")
    if tip is None or tip == base:
        return None
    push_refs(workspace, remote, [f"{tip}:{stash_ref(task_id)}"])
    return tip


def publish_task(
    config: FreemadConfig,
    store: Store,
    forge: Forge,
    repo: str,
    task_id: str,
    workspace: Path,
    *,
    base: str,
    remote: str = "origin",
    issue: int | None = None,
    web_url: str = "https://github.com",
) -> PullRequestRef | BranchOnly:
    """Push an approved code task's work as its branch and open a pull request into `base`, once:
    an open pull request from that branch into `base` is returned as it is. Where GitHub refuses
    the job a pull request, the pushed branch and the setting to change (`pulls.BranchOnly`)."""
    from freemad.tasks.task_runner import TaskRunner

    _check_id(task_id)
    state = TaskRunner(config, store).state(task_id)
    if state.task_type != "code" or state.status is not Status.COMPLETED or not state.branch:
        raise UsageError(
            f"only a completed code task can be published; task {task_id} is a "
            f"{state.status.value} {state.task_type} task"
        )
    if not state.publish_approved:
        raise UsageError(
            f"task {task_id} is not approved for publishing",
            hint="a person with write access comments `/freemad approve publish` first",
        )
    branch = task_branch(task_id)
    commit = _task_commit(workspace, remote, task_id)
    push_refs(workspace, remote, [f"{commit}:refs/heads/{branch}"])
    found = forge.find_pull_request(repo, head=branch, base=base)
    if found is not None:
        return found
    title = f"FREE-MAD: {one_line(state.goal, 80)}"
    body = task_pull_body(state, issue=issue)
    try:
        return open_or_explain(
            forge,
            repo,
            head=branch,
            base=base,
            title=title,
            body=body,
            draft=False,
            web_url=web_url,
        )
    except ForgeError as exc:
        if exc.status == 422:  # another job opened it a moment ago
            found = forge.find_pull_request(repo, head=branch, base=base)
            if found is not None:
                return found
        raise


def _task_commit(workspace: Path, remote: str, task_id: str) -> str:
    """The task's work: the stash fetched from `remote`, or the local branch when it is newer."""
    stash = stash_ref(task_id)
    fetch_refs(workspace, remote, [f"+{stash}:{stash}"])  # a local mirror of the remote's
    with local_repo(workspace) as repo:
        stashed = commit_of(repo, stash)
        local = commit_of(repo, f"refs/heads/{task_branch(task_id)}")
        if local is not None and local == commit_of(repo, f"refs/freemad/base/{task_id}"):
            local = None  # the branch as it began: nothing of the task's own
        if stashed and local and stashed != local:
            if is_ancestor(repo, stashed, local):
                return local
            if not is_ancestor(repo, local, stashed):
                raise FreemadError(
                    f"the task's branch here and {stash} on {remote} have diverged; "
                    "publish one of them by hand"
                )
    found = stashed or local
    if found is None:
        raise UsageError(
            f"task {task_id} left no commits to publish: {stash} is not on {remote} "
            "(the job that ran the task stashes its branch there)"
        )
    return found


def task_pull_body(state: TaskState, *, issue: int | None = None) -> str:
    """The pull request's description: the goal, the work items and the final summary, escaped."""
    lines = [
        f"FREE-MAD code task {code_span(state.task_id)}, published after "
        "`/freemad approve publish`" + (f" on #{issue}." if issue else "."),
        "",
        "**Goal**",
        "",
        escape_markdown_block(state.goal[:_SUMMARY_CHARS]),
    ]
    items = [_item_line(state, item.item_id, item.title) for item in state.work_items]
    if items:
        lines += ["", "**Work items**", "", *items]
    summary = _summary(state)
    if summary:
        lines += ["", "**Summary**", "", escape_markdown_block(summary[:_SUMMARY_CHARS])]
    lines += ["", "Agents wrote this change; review it as you would any contribution."]
    return "\n".join(lines) + "\n"


def _item_line(state: TaskState, item_id: str, title: str) -> str:
    done: dict[str, Any] = state.items_done.get(item_id, {})
    mark = "✅" if done else "·"
    files = [code_span(path) for path in done.get("written") or []][:20]
    shown = f" ({', '.join(files)})" if files else ""
    return f"- {mark} {escape_markdown(item_id, 40)}: {escape_markdown(title, 200)}{shown}"


def _summary(state: TaskState) -> str:
    for stage in ("finalize", "verify", "code_review", "execute"):
        content = str(state.outputs.get(stage, {}).get("content") or "").strip()
        if content:
            return content
    return ""


def _check_id(task_id: str) -> None:
    if not _TASK_ID.fullmatch(task_id):
        raise UsageError(f"{task_id!r} is not a task id")
