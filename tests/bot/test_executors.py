"""The actions executor's job (run by the worker from the durable queue): it dispatches the
repository's workflow as the workflow declares it, and links the run GitHub started."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from freemad.bot.dispatch import dispatch_delivery
from freemad.bot.job import Job
from freemad.bot.ports import Delivery
from freemad.github.markers import without_key
from tests.bot.conftest import LABELED, Env, delivery
from tests.github.payloads import REPO, issue_comment, labeled_issue, review_comment

# --- the actions executor -------------------------------------------------------------------


class Actions:
    """The actions executor's job over the test environment's delivery log and forge."""

    def __init__(self, env: Env) -> None:
        self.env, self.job = env, env.job(dispatch_delivery)

    def submit(self, job: Delivery) -> str:
        """What the worker does with a delivery the web edge recorded: what became of it."""
        return self.job.handle(job.delivery_id)


@pytest.fixture
def actions(env: Env) -> Actions:
    return Actions(env)


def test_a_label_dispatches_the_workflow_and_links_the_run(env: Env, actions: Actions) -> None:
    env.forge.permissions["alice"] = "write"
    env.deliveries.record(LABELED)
    actions.submit(LABELED)

    assert env.forge.dispatches == [
        (
            REPO,
            "freemad.yml",
            "main",
            {"mode": "debate", "requirement": "", "issue": "7", "sender": "alice"},
        )
    ]
    (comment,) = env.forge.calls_to("comment")
    assert comment.args["body"].startswith("FREE-MAD started `debate` on GitHub Actions")
    assert f"(https://github.com/{REPO}/actions/runs/" in comment.args["body"]
    assert env.deliveries.status("d-label") == "done"


def test_a_dispatch_that_names_no_run_is_still_acknowledged(env: Env, actions: Actions) -> None:
    env.forge.permissions["alice"] = "write"
    env.forge.dispatch_run_details = False  # GitHub Enterprise Server: 204, no run named
    env.deliveries.record(LABELED)
    actions.submit(LABELED)

    (comment,) = env.forge.calls_to("comment")
    assert comment.args["body"] == (
        "FREE-MAD dispatched `debate` to GitHub Actions, which did not say which run took it: "
        f"look for it among [the freemad.yml runs](https://github.com/{REPO}/actions/workflows/freemad.yml)."
    )
    assert env.deliveries.status("d-label") == "done"


def test_a_review_comment_is_dispatched_for_its_pull_request(env: Env, actions: Actions) -> None:
    env.forge.permissions["alice"] = "write"
    job = delivery("d-r", "pull_request_review_comment", review_comment("/freemad plan Cache"))
    env.deliveries.record(job)
    actions.submit(job)

    [(_, _, _, inputs)] = env.forge.dispatches
    assert inputs == {
        "mode": "auto",
        "requirement": "/freemad plan Cache",
        "issue": "9",
        "sender": "alice",
        "review-comment": "2002",  # the job answers in this comment's review thread
    }
    assert env.forge.calls_to("comment") == []  # not in the conversation: in the thread
    (reply,) = env.forge.calls_to("reply_in_review_thread")
    assert (reply.args["number"], reply.args["comment_id"]) == (9, 2002)
    assert "`/freemad plan`" in reply.args["body"]


def test_a_command_is_dispatched_as_its_text(env: Env, actions: Actions) -> None:
    env.forge.permissions["alice"] = "write"
    job = delivery("d-c", "issue_comment", issue_comment("/freemad plan add a cache"))
    env.deliveries.record(job)
    actions.submit(job)

    inputs = env.forge.dispatches[0][3]
    assert inputs == {
        "mode": "auto",
        "requirement": "/freemad plan add a cache",
        "issue": "7",
        "sender": "alice",
    }


def test_someone_without_write_access_is_refused_and_nothing_is_dispatched(
    env: Env, actions: Actions
) -> None:
    job = delivery("d-m", "issue_comment", issue_comment("/freemad code", author="mallory"))
    env.deliveries.record(job)
    actions.submit(job)

    assert env.forge.dispatches == []
    assert "write access" in env.forge.calls_to("comment")[0].args["body"]
    assert env.deliveries.status("d-m") == "ignored"


def test_an_ordinary_comment_costs_no_request(env: Env, actions: Actions) -> None:
    job = delivery("d-o", "issue_comment", issue_comment("thanks, looks good"))
    env.deliveries.record(job)
    actions.submit(job)

    assert env.forge.calls == []
    assert env.deliveries.status("d-o") == "ignored"


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("issues", labeled_issue()),
        ("issue_comment", issue_comment("/freemad plan add a cache")),
        ("pull_request_review_comment", review_comment("/freemad plan add a cache")),
    ],
)
def test_what_the_bot_dispatches_is_what_the_workflow_declares(
    event: str, payload: dict[str, Any]
) -> None:
    """The actions executor's inputs against the FREE-MAD workflow we ship, checked as GitHub
    checks a dispatch (the stand-in reads the workflow's `workflow_dispatch` inputs)."""
    from freemad.bot.executors import WORKFLOW, Dispatch, dispatch_for
    from freemad.github.pygithub_forge import PyGithubForge
    from freemad.github.standin import StandIn

    plan = dispatch_for(delivery("d-x", event, payload))
    assert isinstance(plan, Dispatch), plan
    workflow = Path(__file__).resolve().parents[2] / ".github" / "workflows" / WORKFLOW
    with (
        StandIn() as api,
        PyGithubForge(
            "ghs_DispatchContractToken00000000000000", base_url=api.base_url, throttle=False
        ) as forge,
    ):
        api.add_workflow(plan.repo, WORKFLOW, workflow.read_text())
        run_url = forge.dispatch_workflow(plan.repo, WORKFLOW, plan.ref, plan.inputs)
        assert [(c.method, c.status) for c in api.calls] == [("POST", 200)]
        assert run_url == f"{api.origin}/{plan.repo}/actions/runs/{api.dispatches[0]['run_id']}"


@pytest.mark.parametrize("prefix", ["", "/api/v3"], ids=["github.com", "enterprise-server"])
def test_the_bot_acknowledges_with_the_run_github_started(env: Env, prefix: str) -> None:
    """Through real HTTP (PyGithub against the stand-in): github.com answers the dispatch with
    the run it started (`return_run_details`), and the acknowledgement links it; GitHub
    Enterprise Server answers 204, and the acknowledgement says the run was dispatched."""
    from freemad.bot.executors import WORKFLOW
    from freemad.github.pygithub_forge import PyGithubForge
    from freemad.github.standin import StandIn

    token = "ghs_ActionsExecutorToken000000000000000"
    workflow = Path(__file__).resolve().parents[2] / ".github" / "workflows" / WORKFLOW
    with StandIn(prefix=prefix, token=token, permissions={"alice": "write"}) as api:
        api.add_workflow(REPO, WORKFLOW, workflow.read_text())
        api.seed(json.loads(LABELED.body))
        job = Job(
            env.settings,
            deliveries=env.deliveries,
            claims=env.claims,
            run=dispatch_delivery,
            forge_factory=lambda s, i: PyGithubForge(token, base_url=api.base_url, throttle=False),
        )
        env.deliveries.record(LABELED)
        assert job.handle(LABELED.delivery_id) == "done"

        [dispatch] = api.dispatches
        [comment] = [without_key(c["body"]) for c in api.comments.values()]
        run_page = f"{api.origin}/{REPO}/actions/runs/{dispatch['run_id']}"
        if prefix:
            assert comment.startswith("FREE-MAD dispatched `debate` to GitHub Actions")
            assert run_page not in comment
        else:
            assert comment == (
                f"FREE-MAD started `debate` on GitHub Actions: follow it in [its run]({run_page})."
            )
        assert env.deliveries.status("d-label") == "done"


def test_a_workflow_without_the_review_comment_input_is_dispatched_without_it(env: Env) -> None:
    """A repository's freemad.yml written before `review-comment` existed: GitHub refuses the
    input (422, "Unexpected inputs provided"); the bot dispatches again without it, and still
    links the run in the command's review thread."""
    from freemad.bot.executors import WORKFLOW
    from freemad.github.pygithub_forge import PyGithubForge
    from freemad.github.standin import StandIn

    token = "ghs_ActionsExecutorToken000000000000000"
    workflow = Path(__file__).resolve().parents[2] / ".github" / "workflows" / WORKFLOW
    older = workflow.read_text().replace(
        "      review-comment:\n", "      review-comment-not-yet:\n"
    )
    assert older != workflow.read_text()
    payload = review_comment("/freemad debate Which cache?")
    with StandIn(token=token, permissions={"alice": "write"}) as api:
        api.add_workflow(REPO, WORKFLOW, older)
        api.seed(payload)
        job = Job(
            env.settings,
            deliveries=env.deliveries,
            claims=env.claims,
            run=dispatch_delivery,
            forge_factory=lambda s, i: PyGithubForge(token, base_url=api.base_url, throttle=False),
        )
        asked = delivery("d-old", "pull_request_review_comment", payload)
        env.deliveries.record(asked)
        assert job.handle(asked.delivery_id) == "done"

        tried = [c for c in api.calls if c.path.endswith(f"/{WORKFLOW}/dispatches")]
        assert [c.status for c in tried] == [422, 200]
        assert "review-comment" in tried[0].body["inputs"]
        [dispatch] = api.dispatches
        assert "review-comment" not in dispatch["inputs"]
        [reply] = api.calls_to("POST", f"/repos/{REPO}/pulls/9/comments/2002/replies")
        assert reply.body["body"].startswith("FREE-MAD started `/freemad debate`")


def test_a_stranger_is_refused_once_per_issue_by_the_bot(env: Env, actions: Actions) -> None:
    """The bot's per-person limit is the Action's: one refusal per person and thread."""
    for n in range(3):
        text = f"/freemad code attempt {n}"
        job = delivery(f"d-s{n}", "issue_comment", issue_comment(text, author="mallory"))
        env.deliveries.record(job)
        assert actions.submit(job) == "ignored"
    eve = delivery("d-eve", "issue_comment", issue_comment("/freemad code", author="eve"))
    env.deliveries.record(eve)
    actions.submit(eve)
    said = [c.args["body"].split(" ")[0] for c in env.forge.calls_to("comment")]
    assert said == ["@mallory", "@eve"]
    assert env.forge.dispatches == []
