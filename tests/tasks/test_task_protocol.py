"""The task protocol: requests in the prompt, TaskResponse objects back."""

from __future__ import annotations

import pytest

from freemad.tasks.task_protocol import (
    MARKER,
    ResponseError,
    TaskRequest,
    parse_response,
    render_prompt,
)


def test_the_request_is_json_after_the_marker() -> None:
    request = TaskRequest(
        task_id="t",
        task_type="plan",
        goal="g",
        stage="intake",
        role="planner",
        agent_id="p",
        workspace_root="/w",
        allowed_actions=["propose"],
        feedback=["HUMAN_INPUT: yes"],
    )
    prompt = render_prompt(request)
    assert TaskRequest.model_validate_json(prompt.split(MARKER, 1)[1]) == request


def test_responses_are_found_in_prose_and_fences_and_decisions_normalised() -> None:
    reply = 'Sure!\n```json\n{"content": "ok", "review_decision": "Needs Human", "findings": "why?"}\n```\n'
    response = parse_response(reply)
    assert response.review_decision == "needs_human" and response.findings == ["why?"]
    assert parse_response('{"a": 1} then {"content": "last"}').content == "last"


@pytest.mark.parametrize("reply", ["no json here", "{not json}", '{"review_decision": "maybe"}'])
def test_garbage_is_a_response_error(reply: str) -> None:
    with pytest.raises(ResponseError):
        parse_response(reply)
