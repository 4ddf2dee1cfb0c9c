"""Webhook payload models: GitHub's own examples parse, our minimal payloads parse, bad ones fail in one line."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from jsonschema import Draft7Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from freemad.errors import UsageError
from freemad.github.events import (
    MODELS,
    InstallationEvent,
    IssueCommentEvent,
    IssuesEvent,
    PayloadError,
    PingEvent,
    PullRequestEvent,
    PullRequestReviewCommentEvent,
    PushEvent,
    UnknownEvent,
    WorkflowDispatchEvent,
    parse_event,
)
from tests.github import payloads
from tests.github.payloads import (
    EXAMPLES,
    NO_FIXTURES,
    SCHEMAS,
    event_name,
    example_params,
    load_example,
)

EXPECTED_MODEL: dict[str, type[Any]] = {
    "installation": InstallationEvent,
    "issue_comment": IssueCommentEvent,
    "issues": IssuesEvent,
    "ping": PingEvent,
    "pull_request": PullRequestEvent,
    "pull_request_review_comment": PullRequestReviewCommentEvent,
    "push": PushEvent,
    "repository_dispatch": UnknownEvent,
    "workflow_dispatch": WorkflowDispatchEvent,
}


@cache
def schema_registry() -> Registry[Any]:
    """Every schema under `schemas/`, registered by its path there; each keeps its own `$id`."""
    return Registry().with_resources(
        (
            path.relative_to(SCHEMAS).as_posix(),
            Resource.from_contents(
                json.loads(path.read_text(encoding="utf-8")), default_specification=DRAFT7
            ),
        )
        for path in sorted(SCHEMAS.rglob("*.schema.json"))
    )


def validator_for(file_name: str) -> Draft7Validator:
    """`issues.labeled.json` -> issues/labeled.schema.json; `ping.json` -> ping/event.schema.json."""
    event, *rest = file_name.removesuffix(".json").split(".")
    path = SCHEMAS / event / f"{rest[0] if rest else 'event'}.schema.json"
    if not path.is_file():  # `ping.with-app_id`, `repository_dispatch`: one schema per event
        path = SCHEMAS / event / "event.schema.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    return Draft7Validator(schema, registry=schema_registry())


def schema_errors(file_name: str, payload: dict[str, Any]) -> list[str]:
    return [error.message for error in validator_for(file_name).iter_errors(payload)]


# -- GitHub's examples ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", example_params())
def test_example_is_valid_against_its_schema(path: Path) -> None:
    payload = json.loads(path.read_text(encoding="utf-8"))
    assert schema_errors(path.name, payload) == []


@pytest.mark.parametrize("path", example_params())
def test_example_parses_into_its_model(path: Path) -> None:
    parsed = parse_event(event_name(path), path.read_bytes())
    assert isinstance(parsed, EXPECTED_MODEL[event_name(path)])


def test_the_schema_check_resolves_refs_into_common_schemas() -> None:
    payload = load_example("issues.labeled")
    del payload["issue"]["user"]["login"]  # lives in common/user.schema.json, two $refs away
    assert any(
        "'login' is a required property" in m for m in schema_errors("issues.labeled", payload)
    )


def test_issue_comment_example_fields() -> None:
    event = parse_event("issue_comment", load_example("issue_comment.created"))
    assert isinstance(event, IssueCommentEvent)
    assert event.comment.id == 492700400
    assert event.comment.user.login == "Codertocat"
    assert event.comment.author_association == "OWNER"
    assert event.issue.number == 1
    assert event.issue.labels[0].name == "bug"
    assert not event.issue.is_pull_request
    assert event.repository.full_name == "Codertocat/Hello-World"
    assert event.repository.owner.login == "Codertocat"
    assert event.installation is None


def test_installation_id_is_read_when_present() -> None:
    event = parse_event("issue_comment", load_example("issue_comment.created.with-installation"))
    assert isinstance(event, IssueCommentEvent)
    assert event.installation is not None
    assert isinstance(event.installation.id, int)


def test_issue_with_empty_body() -> None:
    event = parse_event("issues", load_example("issues.opened.with-empty-body"))
    assert isinstance(event, IssuesEvent)
    assert event.issue.body is None


def test_pull_request_example_fields() -> None:
    event = parse_event("pull_request", load_example("pull_request.labeled"))
    assert isinstance(event, PullRequestEvent)
    assert event.label is not None
    assert event.label.name == "bug"
    assert event.pull_request.head.ref == "changes"
    assert event.pull_request.base.ref == "master"
    assert event.pull_request.head.repo is not None
    assert event.pull_request.draft is False


def test_workflow_dispatch_and_ping_examples() -> None:
    dispatch = parse_event("workflow_dispatch", load_example("workflow_dispatch"))
    assert isinstance(dispatch, WorkflowDispatchEvent)
    assert dispatch.inputs == {"name": "Mona the Octocat"}
    assert dispatch.ref == "refs/heads/master"
    ping = parse_event("ping", load_example("ping.with-app_id"))
    assert isinstance(ping, PingEvent)
    assert ping.hook_id == 109948940
    assert ping.hook is not None


def test_repository_dispatch_is_an_unknown_event_with_its_action() -> None:
    event = parse_event("repository_dispatch", load_example("repository_dispatch"))
    assert event == UnknownEvent("repository_dispatch", "on-demand-test")


def test_comment_on_a_pull_request_built_from_the_example() -> None:
    payload = payloads.as_pull_request_comment(load_example("issue_comment.created"))
    assert schema_errors("issue_comment.created", payload) == []
    event = parse_event("issue_comment", payload)
    assert isinstance(event, IssueCommentEvent)
    assert event.issue.is_pull_request
    assert event.issue.pull_request is not None
    assert event.issue.pull_request.html_url == "https://github.com/Codertocat/Hello-World/pull/1"


def review_comment_examples() -> list[Any]:
    """GitHub's pull_request_review_comment examples, or one skipped param saying why none."""
    if not EXAMPLES.is_dir():
        return [pytest.param(None, id="no-fixtures", marks=pytest.mark.skip(reason=NO_FIXTURES))]
    found = sorted(EXAMPLES.glob("pull_request_review_comment.*.json"))
    reason = f"no pull_request_review_comment example among GitHub's examples in {EXAMPLES}"
    if not found:
        return [pytest.param(None, id="none", marks=pytest.mark.skip(reason=reason))]
    return [pytest.param(path, id=path.name) for path in found]


@pytest.mark.parametrize("path", review_comment_examples())
def test_a_review_comment_example_parses_with_its_comment_and_pull_request(path: Path) -> None:
    payload = json.loads(path.read_text(encoding="utf-8"))
    event = parse_event("pull_request_review_comment", payload)
    assert isinstance(event, PullRequestReviewCommentEvent)
    assert event.comment.id == payload["comment"]["id"]
    assert event.comment.body == payload["comment"]["body"]
    assert event.pull_request.number == payload["pull_request"]["number"]
    assert event.pull_request.head.ref == payload["pull_request"]["head"]["ref"]
    assert event.repository.full_name == payload["repository"]["full_name"]


# -- our own payloads (always run) ---------------------------------------------------------------


def test_a_minimal_review_comment_parses_as_a_comment_on_its_pull_request() -> None:
    event = parse_event("pull_request_review_comment", payloads.review_comment("/freemad plan"))
    assert isinstance(event, PullRequestReviewCommentEvent)
    assert event.action == "created"
    assert (event.comment.id, event.comment.body) == (2002, "/freemad plan")
    assert event.comment.user is not None and event.comment.user.login == "alice"
    assert event.pull_request.number == 9
    assert event.pull_request.head.ref == "speed-up"
    # A deleted account leaves the comment without a user, as GitHub's schema allows.
    ghost = payloads.review_comment()
    ghost["comment"]["user"] = None
    parsed = parse_event("pull_request_review_comment", ghost)
    assert isinstance(parsed, PullRequestReviewCommentEvent) and parsed.comment.user is None
    missing = payloads.review_comment()
    del missing["pull_request"]["number"]
    assert _error("pull_request_review_comment", missing).endswith(
        "pull_request.number: field required"
    )


def test_minimal_payloads_parse() -> None:
    labeled = parse_event("issues", payloads.labeled_issue())
    assert isinstance(labeled, IssuesEvent)
    assert labeled.label is not None
    assert labeled.label.name == "freemad:debate"
    assert labeled.installation is not None
    assert labeled.installation.id == 42
    comment = parse_event("issue_comment", payloads.issue_comment(on_pull_request=True))
    assert isinstance(comment, IssueCommentEvent)
    assert comment.issue.is_pull_request
    pr = parse_event("pull_request", payloads.pull_request())
    assert isinstance(pr, PullRequestEvent)
    assert pr.pull_request.body is None


def test_every_modelled_event_has_a_minimal_payload_or_an_example() -> None:
    assert set(MODELS) == {
        name for name, model in EXPECTED_MODEL.items() if model is not UnknownEvent
    }


def test_accepts_bytes_text_and_any_mapping() -> None:
    data = payloads.issue_comment()
    raw = json.dumps(data)
    for form in (data, MappingProxyType(data), raw, raw.encode("utf-8")):
        assert isinstance(parse_event("issue_comment", form), IssueCommentEvent)


def test_unknown_fields_are_ignored_and_a_deleted_fork_is_none() -> None:
    data = payloads.pull_request()
    data["surprise"] = {"nested": [1, 2]}
    data["pull_request"]["head"]["repo"]["topics"] = ["x"]
    data["sender"]["site_admin"] = True
    assert isinstance(parse_event("pull_request", data), PullRequestEvent)
    data["pull_request"]["head"]["repo"] = None  # the fork it came from was deleted
    event = parse_event("pull_request", data)
    assert isinstance(event, PullRequestEvent)
    assert event.pull_request.head.repo is None


def test_workflow_dispatch_inputs_become_text() -> None:
    inputs = {"mode": "debate", "dry_run": True, "rounds": 2, "requirement": None}
    event = parse_event("workflow_dispatch", payloads.workflow_dispatch(inputs))
    assert isinstance(event, WorkflowDispatchEvent)
    assert event.inputs == {"mode": "debate", "dry_run": "true", "rounds": "2", "requirement": None}
    empty = parse_event("workflow_dispatch", payloads.workflow_dispatch(None))
    assert isinstance(empty, WorkflowDispatchEvent)
    assert empty.inputs is None


def test_unknown_event_keeps_name_and_action() -> None:
    assert parse_event("check_run", {"action": "completed"}) == UnknownEvent(
        "check_run", "completed"
    )
    assert parse_event("fork", {"forkee": {}}) == UnknownEvent("fork", None)
    assert parse_event("star", {"action": 3}) == UnknownEvent("star", None)


def test_a_one_megabyte_comment_is_fine() -> None:
    body = "/freemad debate\n" + "x" * 1_000_000
    event = parse_event("issue_comment", json.dumps(payloads.issue_comment(body)).encode())
    assert isinstance(event, IssueCommentEvent)
    assert len(event.comment.body) > 1_000_000


def _error(event: str, payload: Any) -> str:
    with pytest.raises(PayloadError) as caught:
        parse_event(event, payload)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{event} payload: ")
    assert "pydantic" not in message
    assert caught.value.__cause__ is None  # no chained traceback to print
    return message


def test_missing_field_names_it_and_counts_the_others() -> None:
    data = payloads.issue_comment()
    del data["issue"]["number"]
    assert _error("issue_comment", data) == "issue_comment payload: issue.number: field required"
    del data["comment"]
    assert _error("issue_comment", data).endswith("issue.number: field required (and 1 more)")


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("issue", "number"), "7", "issue.number: input should be a valid integer"),
        (("issue", "labels"), "bug", "issue.labels: input should be a valid list"),
        (
            ("issue", "labels", 0),
            {"name": 5},
            "issue.labels.0.name: input should be a valid string",
        ),
        (("comment", "body"), None, "comment.body: input should be a valid string"),
        (("repository", "private"), "no", "repository.private: input should be a valid boolean"),
        (("sender",), "alice", "sender: input should be a valid dictionary"),
    ],
)
def test_wrong_types_fail_in_one_line(path: tuple[Any, ...], value: Any, expected: str) -> None:
    data = payloads.issue_comment()
    data["issue"]["labels"] = [{"name": "bug"}]
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert expected in _error("issue_comment", data)


def test_malformed_json() -> None:
    message = _error("issues", b'{"action": "labeled",')
    assert "not valid JSON" in message
    assert "line 1" in message


def test_invalid_utf8() -> None:
    raw = json.dumps(payloads.labeled_issue()).encode().replace(b"Pick", b"P\xffck")
    position = raw.index(b"\xff")
    assert _error("issues", raw) == f"issues payload: not valid UTF-8 (byte {position})"


def test_json_that_is_not_an_object_or_too_deep() -> None:
    assert _error("issues", "[1, 2]") == "issues payload: expected a JSON object, got list"
    assert "expected a JSON object" in _error("ping", b"null")
    assert "nested too deeply" in _error("issues", "[" * 100_000 + "]" * 100_000)


def test_payload_error_joins_the_exception_tree() -> None:
    error = PayloadError("x payload: y")
    assert isinstance(error, ValueError)
    assert isinstance(error, UsageError)
    assert error.one_line() == "x payload: y"
