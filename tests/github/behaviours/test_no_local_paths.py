"""No comment FREE-MAD posts shows a path on its host (issue 44.4), and a task is linked to its
thread only once it exists: a config that cannot run the task is refused before "starting"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from freemad.github.forge import RecordingForge
from freemad.github.public_text import HIDDEN, local_paths, without_local_paths
from tests.github.payloads import REPO, issue_comment
from tests.github.routers import bodies, debate_config, router, task_config


def assert_no_local_path(forge: RecordingForge, tmp_path: Path) -> None:
    """Every comment posted or edited on `forge`: no local path, and no part of the test's
    own folder (where the stores and the workspace are)."""
    posted = [str(call.args["body"]) for call in forge.calls if "body" in call.args]
    assert posted, "nothing was posted: the check would pass on nothing"
    for body in posted:
        assert local_paths(body) == [], body
        assert str(tmp_path) not in body and ".freemad/" not in body, body


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("no task 'abc' in .freemad/tasks/tasks.db", ".freemad/tasks/tasks.db"),
        ("config file /srv/freemad/cfg.yaml: bad key", "/srv/freemad/cfg.yaml"),
        ("the workspace root /tmp/pytest-1/x is not a folder", "/tmp/pytest-1/x"),
        ("see ~/.config/freemad.yaml", "~/.config/freemad.yaml"),
        ("in (../state/runs.db)", "../state/runs.db"),
        ("at C:\\Users\\ci\\freemad.yaml now", "C:\\Users\\ci\\freemad.yaml"),
    ],
)
def test_a_local_path_is_found_and_hidden(text: str, path: str) -> None:
    assert local_paths(text) == [path]
    hidden = without_local_paths(text)
    assert path not in hidden and HIDDEN in hidden


@pytest.mark.parametrize(
    "text",
    [
        "see https://github.com/octo-org/octo-repo/pull/1 and [run](https://a.b/c/d.html)",
        "octo-org/octo-repo, branch freemad/evolve/abc, refs/heads/main, docs/github.md",
        "`/freemad plan` and/or 1/2",
    ],
)
def test_what_is_not_a_local_path_is_left_alone(text: str) -> None:
    assert local_paths(text) == [] and without_local_paths(text) == text


def test_a_plan_without_a_planner_is_refused_before_starting_and_links_nothing(
    store: Any, tmp_path: Path
) -> None:
    routed, forge = router(debate_config(), store, tmp_path)  # agents with no roles

    outcome = routed.handle("issue_comment", issue_comment("/freemad plan Plan the cache."))

    assert (outcome.action, outcome.reason) == ("replied", "refused_by_run")
    [body] = bodies(forge)
    assert "cannot run a plan task" in body and "planner" in body
    assert "starting" not in body
    assert store.runs(kind="task") == [] and store.runs(kind="github_link") == []
    later = routed.handle("issue_comment", issue_comment("/freemad status"))
    assert later.reason == "no_run"  # no task linked that does not exist
    assert_no_local_path(forge, tmp_path)


def test_a_task_refused_by_its_runner_is_said_on_its_comment_without_the_path(
    store: Any, tmp_path: Path
) -> None:
    routed, forge = router(task_config(tmp_path), store, tmp_path)
    routed.settings.workspace = tmp_path / "no-such-checkout"

    outcome = routed.handle("issue_comment", issue_comment("/freemad plan Plan the cache."))

    assert outcome.action == "refused"
    [body] = bodies(forge)  # the "starting" comment, edited: one comment
    assert "could not start the plan task" in body and "is not a folder" in body
    assert store.runs(kind="task") == [] and store.runs(kind="github_link") == []
    assert_no_local_path(forge, tmp_path)


def test_steering_a_task_the_store_lacks_names_no_store_path(store: Any, tmp_path: Path) -> None:
    """A thread linked to a task this store does not have (a state branch lost): the reply
    says so without `no task '...' in /path/of/tasks.db`."""
    routed, forge = router(task_config(tmp_path), store, tmp_path)
    thread = routed.clients.on(
        repo=REPO, number=7, title="t", body="", is_pull_request=False, default_branch="main"
    )
    thread.link("0123456789abcdef", "task", 1)

    outcome = routed.handle("issue_comment", issue_comment("/freemad resume"))

    assert outcome.reason == "refused_by_run"
    [body] = bodies(forge)
    assert "no task '0123456789abcdef'" in body and HIDDEN in body
    assert_no_local_path(forge, tmp_path)
