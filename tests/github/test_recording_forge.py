"""The in-memory `Forge` the router's tests use (freemad.github.forge.RecordingForge): it keeps what
it was asked, records every call, and fails on request."""

from __future__ import annotations

import pytest

from freemad.errors import FreemadError
from freemad.github.forge import ForgeError, RecordingForge

REPO = "octo/widgets"


def test_recording_forge_keeps_state_and_records_calls() -> None:
    fake = RecordingForge(permissions={"alice": "admin", f"{REPO}:bob": "triage"})
    assert fake.permission(REPO, "alice") == "admin"
    assert fake.permission(REPO, "bob") == "triage"
    assert fake.permission("other/repo", "bob") is None
    posted = fake.comment(REPO, 5, "hi")
    assert fake.edit_comment(REPO, posted.id, "bye") == posted
    fake.react(REPO, posted.id, "eyes")
    ref = fake.open_pull_request(REPO, head="b", base="main", title="t", body="x", draft=True)
    assert fake.find_pull_request(REPO, head="octo:b", base="main") == ref
    fake.edit_pull_request(REPO, ref.number, body="y")
    run_url = fake.dispatch_workflow(REPO, "freemad.yml", "main", {"a": "1"})
    assert run_url is not None and run_url.startswith(f"https://github.com/{REPO}/actions/runs/")
    fake.react_to_review_comment(REPO, 2002, "eyes")
    methods = "permission permission permission comment edit_comment react open_pull_request"
    methods += " find_pull_request edit_pull_request dispatch_workflow react_to_review_comment"
    assert [c.method for c in fake.calls] == methods.split()
    assert fake.comments[posted.id] == (REPO, 5, "bye")
    assert fake.reactions == [(REPO, posted.id, "eyes")]
    assert fake.review_reactions == [(REPO, 2002, "eyes")]
    assert fake.dispatches == [(REPO, "freemad.yml", "main", {"a": "1"})]
    fake.dispatch_run_details = False  # as GitHub Enterprise Server: 204, no run named
    assert fake.dispatch_workflow(REPO, "freemad.yml", "main", {}) is None
    with pytest.raises(ForgeError, match="already exists"):
        fake.open_pull_request(REPO, head="b", base="main", title="t", body="x", draft=True)


def test_recording_forge_fails_on_request() -> None:
    fake = RecordingForge()
    assert issubclass(ForgeError, FreemadError)
    fake.fail("comment", ForgeError("GitHub answered 502", status=502))
    with pytest.raises(ForgeError, match="502"):
        fake.comment(REPO, 1, "x")
    assert fake.comment(REPO, 1, "x").id > 0
    assert len(fake.calls_to("comment")) == 2
