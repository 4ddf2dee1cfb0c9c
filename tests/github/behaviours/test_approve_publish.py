"""`/freemad approve publish` (`freemad/github/behaviours/approve_publish.py`) through the
router: a code task is published only after it, on real git."""

from __future__ import annotations

from freemad.github.forge import RecordingForge
from freemad.github.router import Router
from freemad.github.thread import Settings
from freemad.wiring import ADAPTERS
from tests.github.payloads import issue_comment, labeled_issue
from tests.github.test_publish import REPO as PUBLISH_REPO
from tests.github.test_publish import Job, job

__all__ = ["job"]  # the fixture


def test_a_code_task_is_published_only_after_approve_publish(job: Job) -> None:
    forge = RecordingForge(permissions={"alice": "write"})
    first = Router(
        job.config, forge, job.store, Settings(workspace=job.clone("job1")), adapters=ADAPTERS
    )
    payload = labeled_issue("freemad:code")
    payload["repository"]["full_name"] = PUBLISH_REPO
    started = first.handle("issues", payload)
    assert started.status == "completed"
    assert list(job.refs("refs/freemad/")) == [f"refs/freemad/tasks/{started.run_id}"]
    assert list(job.refs("refs/heads/")) == ["refs/heads/main"]  # nothing published yet
    [progress] = forge.comments.values()
    assert "Nothing is published until" in progress[2]

    later = Router(
        job.config, forge, job.store, Settings(workspace=job.clone("job2")), adapters=ADAPTERS
    )
    approve = issue_comment("/freemad approve publish")
    approve["repository"]["full_name"] = PUBLISH_REPO
    outcome = later.handle("issue_comment", approve)

    assert outcome.action == "steered" and outcome.comment_url
    assert f"refs/heads/freemad/task/{started.run_id}" in job.refs("refs/heads/")
    [pull] = forge.pulls.values()
    assert (pull.base, pull.draft) == ("main", False)
    assert any("published: " in body for (_, _, body) in forge.comments.values())
