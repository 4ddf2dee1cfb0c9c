"""The routing table: every GitHub example routes as expected, and our own payloads cover each rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from freemad.github.events import UnknownEvent, parse_event
from freemad.github.routing import LABELS, Routed, label_mode, route
from tests.github import payloads
from tests.github.payloads import event_name, example_files, example_params, load_example

# Every example file, and where it goes. A new example must be added here.
EXPECTED_ROUTE: dict[str, str] = {
    "installation.created.json": "ignore",
    "issue_comment.created.json": "command",
    "issue_comment.created.with-installation.json": "command",
    "issue_comment.deleted.json": "ignore",
    "issue_comment.edited.json": "ignore",
    "issues.labeled.json": "ignore",  # label "bug"
    "issues.opened.json": "ignore",
    "issues.opened.with-empty-body.json": "ignore",
    "issues.unlabeled.json": "ignore",
    "ping.json": "ping",
    "ping.with-app_id.json": "ping",
    "pull_request.closed.json": "ignore",
    "pull_request.labeled.json": "ignore",  # label "bug"
    "pull_request.opened.json": "ignore",
    "pull_request.synchronize.json": "ignore",
    "push.json": "ignore",
    "repository_dispatch.json": "ignore",
    "workflow_dispatch.json": "dispatch",
}
# Examples a set of fixtures may not hold yet: routed when present, not required.
EXPECTED_ROUTE_IF_PRESENT: dict[str, str] = {
    "pull_request_review_comment.created.json": "command",
    "pull_request_review_comment.edited.json": "ignore",
    "pull_request_review_comment.deleted.json": "ignore",
}


def routed(event: str, payload: Any, **options: Any) -> Routed:
    return route(parse_event(event, payload), **options)


# -- GitHub's examples ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", example_params())
def test_example_routes_as_expected(path: Path) -> None:
    expected = {**EXPECTED_ROUTE, **EXPECTED_ROUTE_IF_PRESENT}
    assert path.name in expected, f"add {path.name} to EXPECTED_ROUTE"
    result = routed(event_name(path), path.read_bytes())
    assert result.route == expected[path.name], result.reason
    assert result.reason


def test_the_table_names_only_existing_examples() -> None:
    files = {path.name for path in example_files()}
    if not files:
        pytest.skip(payloads.NO_FIXTURES)
    assert set(EXPECTED_ROUTE) <= files <= set(EXPECTED_ROUTE) | set(EXPECTED_ROUTE_IF_PRESENT)


def test_example_ignores_explain_themselves() -> None:
    assert routed("issues", load_example("issues.labeled")).reason == (
        "label 'bug' is not a FREE-MAD label"
    )
    assert routed("issue_comment", load_example("issue_comment.edited")).reason == (
        "edited comments are ignored"
    )
    assert routed("pull_request", load_example("pull_request.opened")).reason == (
        "pull_request.opened is not a trigger"
    )
    assert (
        "repository_dispatch"
        in routed("repository_dispatch", load_example("repository_dispatch")).reason
    )


@pytest.mark.parametrize("label", ["freemad:debate", "freemad:plan", "freemad:code"])
def test_example_issue_relabeled_with_a_freemad_label_starts(label: str) -> None:
    payload = load_example("issues.labeled")
    payload["label"]["name"] = label
    event = parse_event("issues", payload)
    assert route(event) == Routed("start_from_label", f"label {label} on issue #1")
    assert label_mode(event) == LABELS[label]


def test_example_pull_request_relabeled_with_evolve_starts() -> None:
    payload = load_example("pull_request.labeled")
    payload["label"]["name"] = "freemad:evolve"
    event = parse_event("pull_request", payload)
    assert route(event) == Routed("start_from_label", "label freemad:evolve on pull request #2")
    assert label_mode(event) == "evolve"


def test_example_issue_relabeled_with_evolve_is_ignored() -> None:
    payload = load_example("issues.labeled")
    payload["label"]["name"] = "freemad:evolve"
    assert routed("issues", payload) == Routed("ignore", "freemad:evolve applies to pull requests")


def test_example_comment_on_a_pull_request_is_a_command() -> None:
    payload = payloads.as_pull_request_comment(load_example("issue_comment.created"))
    assert routed("issue_comment", payload) == Routed(
        "command", "comment 492700400 on pull request #1"
    )


def test_example_comment_by_ourselves_is_ignored() -> None:
    payload = load_example("issue_comment.created")
    assert routed("issue_comment", payload, self_login="codertocat").route == "ignore"


# -- our own payloads (always run) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "label", "expected"),
    [
        ("issue", "freemad:debate", "start_from_label"),
        ("issue", "freemad:plan", "start_from_label"),
        ("issue", "freemad:code", "start_from_label"),
        ("issue", "freemad:evolve", "ignore"),
        ("pull_request", "freemad:debate", "start_from_label"),
        ("pull_request", "freemad:plan", "start_from_label"),
        ("pull_request", "freemad:code", "ignore"),
        ("pull_request", "freemad:evolve", "start_from_label"),
        ("issue", "FreeMAD:Debate", "start_from_label"),
        ("issue", "bug", "ignore"),
        ("pull_request", "enhancement", "ignore"),
        ("issue", "freemad:debtae", "help"),
        ("pull_request", "freemad:", "help"),
    ],
)
def test_label_table(target: str, label: str, expected: str) -> None:
    if target == "issue":
        result = routed("issues", payloads.labeled_issue(label))
    else:
        result = routed("pull_request", payloads.pull_request(label=label))
    assert result.route == expected, result.reason


def test_misplaced_labels_say_where_they_belong() -> None:
    code_on_pr = routed("pull_request", payloads.pull_request(label="freemad:code"))
    assert code_on_pr.reason == "freemad:code applies to issues"
    evolve_on_issue = routed("issues", payloads.labeled_issue("freemad:evolve"))
    assert evolve_on_issue.reason == "freemad:evolve applies to pull requests"


def test_unknown_freemad_label_gets_help_naming_the_known_ones() -> None:
    result = routed("issues", payloads.labeled_issue("freemad:debtae"))
    assert "'freemad:debtae'" in result.reason
    assert all(name in result.reason for name in LABELS)


def test_labels_on_closed_issues_and_pull_requests_are_ignored() -> None:
    issue = routed("issues", payloads.labeled_issue(state="closed"))
    assert issue == Routed("ignore", "freemad:debate on issue #7, which is closed")
    pr = routed("pull_request", payloads.pull_request(state="closed"))
    assert pr.route == "ignore"


def test_labels_added_by_ourselves_are_ignored() -> None:
    result = routed(
        "issues", payloads.labeled_issue(sender="FreeMAD[bot]"), self_login="freemad[bot]"
    )
    assert result.route == "ignore"
    assert "FREE-MAD itself" in result.reason
    other = routed("issues", payloads.labeled_issue(sender="alice"), self_login="freemad[bot]")
    assert other.route == "start_from_label"


def test_labeled_without_a_label_is_ignored() -> None:
    payload = payloads.labeled_issue()
    del payload["label"]
    assert routed("issues", payload) == Routed("ignore", "labeled event without a label")


def test_other_issue_and_pull_request_actions_are_ignored() -> None:
    for action in ("opened", "unlabeled", "edited", "closed"):
        payload = payloads.labeled_issue()
        payload["action"] = action
        assert routed("issues", payload) == Routed("ignore", f"issues.{action} is not a trigger")
    for action in ("opened", "closed", "synchronize", "unlabeled"):
        result = routed("pull_request", payloads.pull_request(action))
        assert result == Routed("ignore", f"pull_request.{action} is not a trigger")


def test_a_comment_is_a_command_whatever_it_says() -> None:
    for body in ("/freemad debate", "thanks!", "", "/freemad"):
        result = routed("issue_comment", payloads.issue_comment(body))
        assert result == Routed("command", "comment 1001 on issue #7")
    on_pr = routed("issue_comment", payloads.issue_comment(on_pull_request=True))
    assert on_pr == Routed("command", "comment 1001 on pull request #7")


def test_our_own_comments_never_trigger_anything() -> None:
    payload = payloads.issue_comment("/freemad debate", author="freemad[bot]")
    assert routed("issue_comment", payload, self_login="FreeMAD[bot]").route == "ignore"
    assert routed("issue_comment", payload, self_login=None).route == "command"
    assert routed("issue_comment", payload, self_login="someone-else").route == "command"


@pytest.mark.parametrize("action", ["edited", "deleted"])
def test_edited_and_deleted_comments_are_ignored(action: str) -> None:
    result = routed("issue_comment", payloads.issue_comment(action=action))
    assert result == Routed("ignore", f"{action} comments are ignored")


def test_other_comment_actions_are_ignored() -> None:
    result = routed("issue_comment", payloads.issue_comment(action="pinned"))
    assert result == Routed("ignore", "issue_comment.pinned is not a trigger")


def test_a_comment_on_a_pull_requests_diff_is_a_command_as_a_comment_on_it_is() -> None:
    result = routed("pull_request_review_comment", payloads.review_comment("/freemad plan"))
    assert result == Routed("command", "review comment 2002 on pull request #9")
    assert routed("pull_request_review_comment", payloads.review_comment("lgtm")).route == (
        "command"
    )


@pytest.mark.parametrize("action", ["edited", "deleted"])
def test_edited_and_deleted_review_comments_are_ignored(action: str) -> None:
    result = routed("pull_request_review_comment", payloads.review_comment(action=action))
    assert result == Routed("ignore", f"{action} comments are ignored")


def test_review_comments_by_ourselves_or_by_nobody_are_ignored() -> None:
    ours = payloads.review_comment(author="freemad[bot]")
    result = routed("pull_request_review_comment", ours, self_login="FreeMAD[bot]")
    assert result == Routed("ignore", "comment 2002 is FREE-MAD's own")
    ghost = payloads.review_comment()
    ghost["comment"]["user"] = None
    assert routed("pull_request_review_comment", ghost).route == "ignore"
    other = payloads.review_comment(action="resolved")  # not an action GitHub sends today
    assert routed("pull_request_review_comment", other) == Routed(
        "ignore", "pull_request_review_comment.resolved is not a trigger"
    )


def test_workflow_dispatch_is_a_dispatch() -> None:
    result = routed("workflow_dispatch", payloads.workflow_dispatch({"mode": "debate"}))
    assert result == Routed("dispatch", "workflow_dispatch on refs/heads/main")


def test_ping_push_installation_and_unknown_events() -> None:
    ping = {"zen": "Keep it logically awesome.", "hook_id": 5}
    assert routed("ping", ping) == Routed("ping", "ping from hook 5")
    push = {
        "ref": "refs/heads/main",
        "repository": payloads.repository(),
        "sender": payloads.user(),
    }
    assert routed("push", push) == Routed("ignore", "push is not a trigger")
    installation = {"action": "created", "installation": {"id": 1}, "sender": payloads.user()}
    assert routed("installation", installation).route == "ignore"
    assert route(UnknownEvent("check_run", "completed")) == Routed(
        "ignore", "check_run.completed is not handled"
    )
    assert route(UnknownEvent("fork")) == Routed("ignore", "fork is not handled")
    assert route(UnknownEvent("")).route == "ignore"


def test_label_mode() -> None:
    assert label_mode(parse_event("issues", payloads.labeled_issue("freemad:plan"))) == "plan"
    assert label_mode(parse_event("issues", payloads.labeled_issue("bug"))) is None
    assert (
        label_mode(parse_event("pull_request", payloads.pull_request(label=None, action="opened")))
        is None
    )
    assert label_mode(parse_event("issue_comment", payloads.issue_comment())) is None
    assert label_mode(UnknownEvent("fork")) is None
