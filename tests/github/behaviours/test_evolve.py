"""Evolve runs on pull requests (`freemad/github/behaviours/evolve.py`) through the router, on real
git (a bare repository as origin, a clone as the job's workspace)."""

from __future__ import annotations

from typing import Any

from tests.evolve.runs import Worker, calc, git
from tests.github.payloads import issue_comment
from tests.github.routers import comment_on_pull, router_for
from tests.github.test_evolve_pr import REPO, Origin, origin

__all__ = ["origin"]  # the fixture


def test_an_evolve_comment_on_a_pull_request_runs_pushes_and_opens_a_draft(
    origin: Origin,
) -> None:
    workspace = origin.clone("job1")
    worker = Worker("worker", [calc(40), calc(30)])
    routed = router_for(origin, workspace, worker)  # the config allows 5 iterations

    command = "/freemad evolve max_iterations=2 make add cheaper"
    outcome = routed.handle("issue_comment", comment_on_pull(command))

    assert (outcome.action, outcome.status) == ("evolve", "stopped")
    branch = f"refs/heads/freemad/evolve/{outcome.run_id}"
    assert origin.ref(branch)  # the lineage is on origin
    [pull] = origin.forge.pulls.values()
    assert (pull.base, pull.draft) == ("feature", True)
    [progress] = [body for (_, number, body) in origin.forge.comments.values() if number == 7]
    assert "v0, v1, v2" in progress and "finished" in progress and pull.ref.html_url in progress
    assert "max_iterations" in progress  # stopped by the command's limit, not the config's


def test_a_waiting_evolve_run_is_answered_from_a_later_job(
    origin: Origin,
) -> None:
    worker = Worker("worker", [calc(61), calc(62), calc(30)])
    config: dict[str, Any] = {
        "supervisor": {"max_interventions_before_human": 0, "stall_window": 2},
        "stop": {"max_iterations": 3},
    }
    first = router_for(origin, origin.clone("job1"), worker, **config)
    started = first.handle("issue_comment", comment_on_pull("/freemad evolve make add cheaper"))
    assert started.status == "waiting_for_human"

    later = router_for(origin, origin.clone("job2"), worker, **config)
    answered = later.handle("issue_comment", comment_on_pull("/freemad answer lower COST"))

    assert (answered.action, answered.run_id) == ("steered", started.run_id)
    assert answered.status == "stopped"
    assert worker.requests[-1]["directions"][-1] == "lower COST"
    assert origin.ref(f"refs/heads/freemad/evolve/{started.run_id}")


def test_an_evolve_command_on_an_issue_is_refused(origin: Origin) -> None:
    routed = router_for(origin, origin.clone("job1"), Worker("worker"))
    payload = issue_comment("/freemad evolve faster")
    payload["repository"]["full_name"] = REPO
    outcome = routed.handle("issue_comment", payload)
    assert outcome.action == "replied"
    [body] = [body for (_, _, body) in origin.forge.comments.values()]
    assert "evolve runs start on a pull request" in body
    assert git(origin.bare, "for-each-ref", "refs/heads/freemad") == ""
