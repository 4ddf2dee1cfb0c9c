"""What GitHub answers when it refuses: its error bodies, shaped as GitHub sends them, for the
loopback stand-in (`freemad.github.standin`)."""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

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
