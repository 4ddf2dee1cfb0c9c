"""Tasks run and steered from GitHub (`freemad/github/behaviours/tasks.py`) through the router: a
plan task waits on its comment and an answer finishes it; steering without a run says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.github.payloads import issue_comment, labeled_issue
from tests.github.routers import bodies, router, task_config


def test_a_plan_task_waits_on_its_comment_and_an_answer_finishes_it(
    store: Any, tmp_path: Path
) -> None:
    config = task_config(tmp_path)
    routed, forge = router(config, store, tmp_path)

    started = routed.handle("issues", labeled_issue("freemad:plan"))

    assert (started.action, started.status) == ("task", "waiting_for_human")
    [(comment_id, (_, number, body))] = forge.comments.items()
    assert number == 7 and "waiting for you" in body and "/freemad answer YOUR ANSWER" in body
    edits = len(forge.calls_to("edit_comment"))
    assert edits >= 2  # edited in place as the stages passed

    # A week later, in another process: a new router over the same store.
    later, later_forge = router(config, store, tmp_path)
    later_forge.comments = forge.comments
    answered = later.handle("issue_comment", issue_comment("/freemad answer Use SQLite."))

    assert (answered.action, answered.run_id, answered.status) == (
        "steered",
        started.run_id,
        "completed",
    )
    _, _, final = later_forge.comments[comment_id]
    assert "done" in final and "✅ done" in final and "waiting for you" not in final
    assert len(later_forge.comments) == 1  # one progress comment, edited; no new ones


def test_steering_without_a_run_says_so(store: Any, tmp_path: Path) -> None:
    routed, forge = router(task_config(tmp_path), store, tmp_path)
    outcome = routed.handle("issue_comment", issue_comment("/freemad answer yes"))
    assert outcome.reason == "no_run"
    [body] = bodies(forge)
    assert "there is no FREE-MAD run on this issue to answer" in body
