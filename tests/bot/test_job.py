"""One delivery's job (`freemad/bot/job.py`) on a real huey consumer and real SQLite: run once,
retried with backoff, parked with a comment, one job at a time per issue."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from huey.exceptions import RetryTask

from freemad.bot.claims import Claims
from freemad.bot.job import Backoff
from freemad.bot.journal import Claim
from freemad.bot.ports import Delivery
from freemad.bot.queue import (
    enqueue,
)
from freemad.errors import FreemadError
from freemad.github.forge import Forge
from freemad.github.thread import Outcome
from tests.bot.conftest import LABELED, Env, Scripted, delivery
from tests.github.payloads import REPO, issue_comment, review_comment


def test_a_job_runs_once_and_a_second_message_for_it_does_nothing(
    env: Env, consumer: Callable[[], Any]
) -> None:
    run = Scripted()
    env.register(run)
    env.accept(LABELED)
    consumer()

    env.wait_for(lambda: env.deliveries.status("d-label") == "done")
    enqueue(env.huey, "d-label")  # a recovery or a duplicate: the delivery is done already
    env.wait_for(lambda: env.huey.pending_count() == 0)
    time.sleep(0.2)

    assert run.calls == ["d-label"]
    (record,) = env.deliveries.recent()
    assert (record.status, record.attempts) == ("done", 1)
    assert "run-1" in record.detail
    assert not env.claims.live("d-label")


def test_a_failing_job_is_retried_with_growing_delays(
    env: Env, consumer: Callable[[], Any]
) -> None:
    run = Scripted(FreemadError("agents timed out"), RuntimeError("boom"))
    env.register(run, Backoff(attempts=5, base=0.01, factor=2.0))
    env.accept(LABELED)
    consumer()

    env.wait_for(lambda: env.deliveries.status("d-label") == "done")

    assert run.calls == ["d-label"] * 3
    assert env.delays == [0.01, 0.02]
    assert env.deliveries.recent()[0].attempts == 3
    assert env.forge.calls_to("comment") == []


def test_a_job_that_keeps_failing_is_parked_with_a_comment_saying_how_to_retry(
    env: Env, consumer: Callable[[], Any]
) -> None:
    run = Scripted(*[FreemadError("the agents are unreachable")] * 5)
    env.register(run, Backoff(attempts=3, base=0.01, factor=2.0))
    env.accept(LABELED)
    consumer()

    env.wait_for(lambda: env.deliveries.status("d-label") == "parked")

    assert len(run.calls) == 3
    assert env.delays == [0.01, 0.02]
    (comment,) = env.forge.calls_to("comment")
    assert comment.args["repo"] == REPO and comment.args["number"] == 7
    body = comment.args["body"]
    assert "gave up after 3 attempts: the agents are unreachable" in body
    assert "remove the `freemad:debate` label and add it again" in body
    assert "d-label" in body
    assert "gave up after 3 attempts" in env.deliveries.recent()[0].detail


@pytest.mark.parametrize(
    ("event", "payload", "number"),
    [
        ("issue_comment", issue_comment("/freemad debate"), 7),
        ("pull_request_review_comment", review_comment("/freemad debate"), 9),
    ],
    ids=["issue_comment", "pull_request_review_comment"],
)
def test_a_parked_comment_tells_a_commenter_to_comment_again(
    env: Env, event: str, payload: dict[str, Any], number: int
) -> None:
    run = Scripted(FreemadError("nope"))
    env.register(run, Backoff(attempts=1))
    job = delivery("d-comment", event, payload)
    env.deliveries.record(job)
    outcome = env.job(run, Backoff(attempts=1)).handle("d-comment")

    assert outcome == "parked"
    [told] = env.forge.calls_to("comment")
    assert "post the command again in a new comment" in told.args["body"]
    assert told.args["number"] == number


def test_a_parked_comment_names_no_path_on_the_bots_host(env: Env) -> None:
    """Issue 44.4: the reason a job gave up is quoted without the host's paths."""
    from freemad.github.public_text import HIDDEN, local_paths

    run = Scripted(FreemadError("config file /srv/freemad/config.yaml: no such file"))
    job = delivery("d-path", "issue_comment", issue_comment("/freemad debate"))
    env.deliveries.record(job)
    outcome = env.job(run, Backoff(attempts=1)).handle("d-path")

    assert outcome == "parked"
    [told] = env.forge.calls_to("comment")
    body = told.args["body"]
    assert "/srv/freemad" not in body and local_paths(body) == []
    assert f"config file {HIDDEN}: no such file" in body


def test_a_malformed_payload_is_parked_at_once(env: Env) -> None:
    from freemad.github.events import PayloadError

    env.deliveries.record(LABELED)
    run = Scripted(PayloadError("issues payload: issue.number is missing"))
    job = env.job(run, Backoff())
    assert job.handle("d-label") == "parked"
    assert len(run.calls) == 1


class Blocking:
    """A `run` that holds its job until `release` is set, recording who ran."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.calls: list[str] = []

    def __call__(self, settings: Any, job: Delivery, forge: Forge, claim: Claim) -> Outcome:
        self.calls.append(job.delivery_id)
        self.started.set()
        self.release.wait(30)
        return Outcome("steered", run_id="run-1", status="running")


def comment_on(number: int, delivery_id: str, body: str) -> Delivery:
    payload = issue_comment(body)
    payload["issue"]["number"] = number
    return delivery(delivery_id, "issue_comment", payload)


def test_two_commands_on_one_issue_run_one_after_the_other_on_two_workers(env: Env) -> None:
    """Two workers (two Jobs with their own claims) take two commands on one issue at once: the
    second waits its turn without using up an attempt; a command on another issue does not wait."""
    from freemad.bot.job import THREAD_WAIT, Job

    first, second = comment_on(7, "d-first", "/freemad answer A"), comment_on(7, "d-2", "/x B")
    other = comment_on(8, "d-other", "/freemad status")
    for item in (first, second, other):
        env.deliveries.record(item)
    run = Blocking()

    def worker() -> Job:
        claims = Claims(env.settings.state_dir / "claims.db")  # each worker opens its own
        return env.job(run, Backoff(), claims)

    busy = threading.Thread(target=lambda: worker().handle("d-first"))
    busy.start()
    assert run.started.wait(30)
    with pytest.raises(RetryTask) as waited:
        worker().handle("d-2")
    assert waited.value.delay == THREAD_WAIT
    assert run.calls == ["d-first"]
    assert env.deliveries.status("d-2") == "queued"  # no attempt was used up
    # A command on another issue does not wait for the busy one.
    elsewhere = threading.Thread(target=lambda: worker().handle("d-other"))
    elsewhere.start()
    deadline = time.monotonic() + 30
    while "d-other" not in run.calls and time.monotonic() < deadline:
        time.sleep(0.01)
    assert run.calls == ["d-first", "d-other"]
    run.release.set()
    busy.join(30)
    elsewhere.join(30)
    assert worker().handle("d-2") == "done"
    assert run.calls == ["d-first", "d-other", "d-2"]
