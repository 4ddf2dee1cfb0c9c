"""Strangers cost neither a runner nor more than one comment.

The reusable workflow's job starts for a `/freemad` comment only when its author's association
with the repository is one the caller allows (OWNER, MEMBER, COLLABORATOR by default): the
job's `if:` is evaluated here by GitHub's own evaluator (npm `@actions/expressions`) on GitHub's
published payload examples. Whoever gets past it and may still not steer FREE-MAD (the
permission check stays) is refused once per thread, by the Action and by the bot alike. A pull
request opened or pushed to starts a review only where the caller opted in, and never a fork's.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from freemad.github.forge import ListedComment, RecordingForge
from freemad.github.markers import refusal_marker, refused_before
from freemad.github.pygithub_forge import PyGithubForge
from freemad.github.refusals import refuse_once
from freemad.github.standin import StandIn
from freemad.store.sqlite import SqliteStore
from tests.github.payloads import as_pull_request_comment, issue_comment, load_example
from tests.github.routers import bodies, debate_config, router
from tests.github.test_workflows import ROOT, WORKFLOWS, load

EXPRESSIONS = ROOT / ".cache" / "octokit"
EVALUATOR = ROOT / "scripts" / "evaluate-expression.mjs"
GATE = load(WORKFLOWS / "freemad.yml")["jobs"]["freemad"]["if"]


def job_runs(event_name: str, payload: dict[str, Any], **inputs: str | bool) -> bool:
    """Whether GitHub would start freemad.yml's job for this event: its `if:` through GitHub's
    evaluator, with the caller's `inputs` (a direct trigger has none) and no repository variables;
    `github.repository` is the payload's repository, as on GitHub."""
    package = EXPRESSIONS / "node_modules" / "@actions" / "expressions"
    if not package.is_dir() or shutil.which("node") is None:
        pytest.skip(f"@actions/expressions is not in {EXPRESSIONS}: make github-descriptions")
    repository = payload.get("repository", {}).get("full_name", "octo-org/octo-repo")
    contexts = {
        "github": {"event_name": event_name, "event": payload, "repository": repository},
        "inputs": inputs,
        "vars": {k: v for k, v in inputs.items() if k.startswith("FREEMAD_")},
    }
    done = subprocess.run(
        ["node", str(EVALUATOR), str(EXPRESSIONS)],
        input=json.dumps({"expression": GATE, "contexts": contexts}),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return bool(json.loads(done.stdout))


def commented(association: str, body: str = "/freemad debate") -> dict[str, Any]:
    payload = copy.deepcopy(load_example("issue_comment.created"))
    payload["comment"].update(body=body, author_association=association)
    return payload


@pytest.mark.parametrize(
    ("association", "runs"),
    [
        ("OWNER", True),
        ("MEMBER", True),
        ("COLLABORATOR", True),
        ("CONTRIBUTOR", False),
        ("FIRST_TIME_CONTRIBUTOR", False),
        ("FIRST_TIMER", False),
        ("NONE", False),
    ],
)
def test_only_the_repositorys_people_start_a_runner_by_default(
    association: str, runs: bool
) -> None:
    assert job_runs("issue_comment", commented(association)) is runs
    on_pull = as_pull_request_comment(commented(association))
    assert job_runs("issue_comment", on_pull) is runs


def test_the_caller_chooses_the_associations() -> None:
    allowed = {"allowed-associations": "OWNER,CONTRIBUTOR"}
    assert job_runs("issue_comment", commented("CONTRIBUTOR"), **allowed)
    assert not job_runs("issue_comment", commented("MEMBER"), **allowed)
    # FIRST_TIME_CONTRIBUTOR holds CONTRIBUTOR as a substring: whole names only.
    assert not job_runs(
        "issue_comment",
        commented("CONTRIBUTOR"),
        **{"allowed-associations": "FIRST_TIME_CONTRIBUTOR"},
    )
    everyone = {"FREEMAD_ALLOWED_ASSOCIATIONS": "OWNER,MEMBER,COLLABORATOR,CONTRIBUTOR,NONE"}
    assert job_runs("issue_comment", commented("NONE"), **everyone)  # the repository variable


def test_a_comment_without_the_command_and_a_label_are_as_before() -> None:
    assert not job_runs("issue_comment", commented("OWNER", "thanks!"))
    labeled = copy.deepcopy(load_example("issues.labeled"))
    labeled["label"]["name"] = "freemad:debate"
    assert job_runs("issues", labeled)  # only triage access or more can label
    labeled["label"]["name"] = "bug"
    assert not job_runs("issues", labeled)


# -- pull requests opened or pushed to ------------------------------------------------------------

REVIEWS = {"review-pull-requests": True}  # a boolean input arrives as a boolean, not "true"


def pushed(action: str = "synchronize") -> dict[str, Any]:
    """GitHub's example of a pull request `action`, its head in the repository itself."""
    payload = copy.deepcopy(load_example(f"pull_request.{action}"))
    assert (
        payload["pull_request"]["head"]["repo"]["full_name"] == payload["repository"]["full_name"]
    )
    return payload


def forked(payload: dict[str, Any]) -> dict[str, Any]:
    payload["pull_request"]["head"]["repo"]["full_name"] = "mallory/Hello-World"
    return payload


@pytest.mark.parametrize("action", ["opened", "synchronize"])
def test_a_pull_request_of_the_repository_itself_is_reviewed_when_the_caller_opts_in(
    action: str,
) -> None:
    assert job_runs("pull_request", pushed(action), **REVIEWS)
    assert not job_runs("pull_request", pushed(action))  # no opt-in
    assert not job_runs("pull_request", pushed(action), **{"review-pull-requests": False})


def test_a_draft_starts_no_runner_until_it_is_marked_ready() -> None:
    draft = pushed("synchronize")
    draft["pull_request"]["draft"] = True
    assert not job_runs("pull_request", draft, **REVIEWS)  # the router ignores drafts
    draft["action"] = "ready_for_review"
    draft["pull_request"]["draft"] = False
    assert job_runs("pull_request", draft, **REVIEWS)


def test_a_forks_pull_request_starts_no_runner_even_with_the_opt_in() -> None:
    assert not job_runs("pull_request", forked(pushed("opened")), **REVIEWS)
    assert not job_runs("pull_request", forked(pushed("synchronize")), **REVIEWS)
    gone = pushed("synchronize")
    gone["pull_request"]["head"]["repo"] = None  # the fork was deleted
    assert not job_runs("pull_request", gone, **REVIEWS)
    # A label is how a fork's pull request is still reviewed on request (triage access or more).
    labeled = forked(pushed("labeled"))
    labeled["label"]["name"] = "freemad:review"
    assert job_runs("pull_request", labeled)


# -- one refusal per person and thread -------------------------------------------------------------


def test_a_stranger_is_refused_once_per_thread_by_the_router(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    routed, forge = router(debate_config(), store, tmp_path)
    first = routed.handle("issue_comment", issue_comment("/freemad debate", author="mallory"))
    again = routed.handle("issue_comment", issue_comment("/freemad plan", author="mallory"))
    assert (first.action, again.action) == ("refused", "refused")
    assert "told already" in again.reason
    [refusal] = bodies(forge)
    assert refusal.startswith("@mallory Only people with write access")
    assert refusal.endswith(refusal_marker("mallory"))
    # Someone else is told on their own; mallory again on another issue.
    routed.handle("issue_comment", issue_comment("/freemad debate", author="eve"))
    elsewhere = issue_comment("/freemad debate", author="Mallory")
    elsewhere["issue"]["number"] = 8
    routed.handle("issue_comment", elsewhere)
    assert [b.split(" ")[0] for b in bodies(forge)] == ["@mallory", "@eve", "@Mallory"]
    assert not forge.dispatches and len(forge.calls_to("comment")) == 3


def test_a_refusal_is_remembered_on_github_and_a_forged_marker_is_not_believed() -> None:
    token = "ghp_StrangerTestToken0123456789abcdefWXYZ"
    repo = "octo-org/octo-repo"
    with StandIn(token=token, login="github-actions[bot]") as api:
        api.add_issue(repo, 5, "five", "")
        # mallory writes the marker of eve's refusal herself, to keep eve from being told.
        api.add_comment(repo, 5, refusal_marker("eve"), 900, author="mallory", association="NONE")
        with PyGithubForge(token, base_url=api.base_url, throttle=False) as forge:
            said = [
                refuse_once(forge, repo, 5, who, "Only people with write access", self_login=None)
                for who in ("eve", "eve", "mallory")
            ]
        assert [s is not None for s in said] == [True, False, True]
        ours = [
            c["body"] for c in api.comments.values() if c["user"]["login"] == "github-actions[bot]"
        ]
        assert [b.split(" ")[0] for b in ours] == ["@eve", "@mallory"]


def test_only_freemads_own_comments_count_as_refusals() -> None:
    marker = refusal_marker("Eve")
    mine = ListedComment(1, "u", f"no\n\n{marker}", "freemad-app[bot]", "Bot")
    forged = ListedComment(2, "u", marker, "mallory", "User")
    as_self = ListedComment(3, "u", marker, "freemad-pat-user", "User")
    assert refused_before([mine], "eve") and refused_before([mine], "EVE")
    assert not refused_before([forged], "eve") and not refused_before([mine], "mallory")
    assert refused_before([as_self], "eve", "Freemad-PAT-user")
    assert not refused_before([as_self], "eve")


def test_when_the_thread_cannot_be_read_nobody_is_refused_twice() -> None:
    from freemad.github.forge import ForgeError

    forge = RecordingForge()
    forge.fail("list_comments", ForgeError("GitHub answered 502", status=502))
    assert refuse_once(forge, "o/r", 1, "eve", "no", self_login=None) is None
    assert forge.comments == {}
