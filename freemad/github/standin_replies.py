"""What GitHub answers when it refuses: its error bodies, shaped as GitHub sends them, for the
loopback stand-in (`freemad.github.standin`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

import yaml

DOCS = "https://docs.github.com/rest"
Reply = tuple[int, Any]


def error_body(text: str) -> dict[str, Any]:
    """GitHub's body for a refusal: its message and where its documentation is."""
    return {"message": text, "documentation_url": DOCS}


NOT_FOUND: Reply = (404, error_body("Not Found"))


def _invalid_body(resource: str, code: str, field: str, message: str = "") -> dict[str, Any]:
    """GitHub's 422 body, shaped as octokit's recorded `errors.json`."""
    error = {"resource": resource, "code": code, "field": field}
    return {
        **error_body("Validation Failed"),
        "errors": [{**error, "message": message} if message else error],
    }


def invalid(resource: str, code: str, field: str, message: str = "") -> Reply:
    return 422, _invalid_body(resource, code, field, message)


def default_error_body(status: int, headers: Mapping[str, str]) -> dict[str, Any]:
    """What GitHub says with such a status, for `fail_next` without a body."""
    lower = {k.lower(): v for k, v in headers.items()}
    if status in (403, 429) and lower.get("x-ratelimit-remaining") == "0":
        return error_body("API rate limit exceeded for user ID 1.")
    if status in (403, 429):
        return error_body("You have exceeded a secondary rate limit. Please wait a few minutes.")
    if status == 422:
        return _invalid_body("Issue", "invalid", "body")
    return error_body(HTTPStatus(status).phrase)


def workflow_triggers(text: str) -> dict[str, Any]:
    """A workflow file's triggers (its `on:`) as {event: its settings or None}."""
    document = yaml.safe_load(text) or {}
    triggers = document.get("on", document.get(True, {}))  # YAML 1.1 reads `on` as True
    if isinstance(triggers, str):
        triggers = {triggers: None}
    elif isinstance(triggers, list):
        triggers = dict.fromkeys(triggers)
    return dict(triggers or {})


def dispatch_refused(triggers: Mapping[str, Any], inputs: Mapping[str, Any]) -> Reply | None:
    """GitHub's refusal of a dispatch of a workflow with these triggers, or None: no
    `workflow_dispatch` trigger, inputs it does not declare, a required input missing."""
    if "workflow_dispatch" not in triggers:
        return 422, error_body("Workflow does not have 'workflow_dispatch' trigger")
    declared = (triggers.get("workflow_dispatch") or {}).get("inputs") or {}
    unexpected = sorted(set(inputs) - set(declared))
    if unexpected:
        return 422, error_body(f"Unexpected inputs provided: {json.dumps(unexpected)}")
    for name, spec in declared.items():
        if isinstance(spec, dict) and spec.get("required") and name not in inputs:
            return 422, error_body(f"Required input '{name}' not provided")
    return None
