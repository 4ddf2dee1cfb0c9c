"""The local queue on real SQLite and a real huey consumer: once, retried with backoff, parked,
recovered; the journal that makes a rerun safe; one job at a time per issue."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from huey.exceptions import RetryTask

from freemad.bot.claims import Claims
from freemad.bot.executors import LocalExecutor
from freemad.bot.job import Backoff
from freemad.bot.journal import Claim, JournalForge, LeaseLost
from freemad.bot.ports import Delivery, Owner
from freemad.bot.queue import (
    HEARTBEAT_KEY,
    enqueue,
    make_huey,
    recover_stale,
    waiting,
)
from freemad.errors import FreemadError, UsageError
from freemad.github.forge import Forge, RecordingForge
from freemad.github.thread import Outcome
from tests.bot.conftest import LABELED, Env, Scripted, delivery, settings_for
from tests.github.payloads import REPO, issue_comment, labeled_issue, review_comment


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
    from freemad.bot.job import Job

    outcome = Job(
        env.settings,
        deliveries=env.deliveries,
        claims=env.claims,
        run=run,
        forge_factory=lambda s, i: env.forge,
        backoff=Backoff(attempts=1),
    ).handle("d-comment")

    assert outcome == "parked"
    [told] = env.forge.calls_to("comment")
    assert "post the command again in a new comment" in told.args["body"]
    assert told.args["number"] == number


def test_a_malformed_payload_is_parked_at_once(env: Env) -> None:
    from freemad.bot.job import Job
    from freemad.github.events import PayloadError

    env.deliveries.record(LABELED)
    run = Scripted(PayloadError("issues payload: issue.number is missing"))
    job = Job(
        env.settings,
        deliveries=env.deliveries,
        claims=env.claims,
        run=run,
        forge_factory=lambda s, i: env.forge,
    )
    assert job.handle("d-label") == "parked"
    assert len(run.calls) == 1


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_sweep_re_enqueues_what_nothing_else_will_run(env: Env) -> None:
    env.register(Scripted())
    now = time.time()
    for name in ("killed", "alive", "lost", "fresh", "waiting", "refused", "done"):
        # A body of its own each: the same body under another id would be a replay.
        assert env.deliveries.record(delivery(name, "issues", {**labeled_issue(), "n": name}))
    dead = Owner(Owner.here().host, dead_pid(), "gone")
    env.claims.claim("killed", dead)
    env.deliveries.mark("killed", "running", attempt=True)
    env.claims.claim("alive", Owner.here())  # a job in this very process, still at it
    env.deliveries.mark("alive", "running", attempt=True)
    env.deliveries.mark("refused", "failed", "submit failed")  # attempts 0: GitHub redelivers
    env.deliveries.mark("done", "done")
    enqueue(env.huey, "waiting")

    recovered = recover_stale(env.deliveries, env.huey, 60, claims=env.claims, now=now + 120)
    assert sorted(recovered) == ["fresh", "killed", "lost"]
    # "fresh" was recorded a moment ago as far as a sweep at `now` can tell: left alone.
    assert "fresh" not in recover_stale(env.deliveries, env.huey, 60, claims=env.claims, now=now)
    assert waiting(env.huey) >= {"killed", "lost", "waiting"}


def test_the_journal_turns_a_rerun_s_comment_into_an_edit_and_fences_a_lapsed_claim(
    env: Env,
) -> None:
    forge = RecordingForge()
    first = Owner.here()
    claim = Claim(env.claims, "d-label", first, env.claims.claim("d-label", first) or 0)
    posted = JournalForge(forge, claim).comment(REPO, 7, "first run's answer")
    env.claims.release("d-label", first)

    second = Owner.here()
    rerun = Claim(env.claims, "d-label", second, env.claims.claim("d-label", second) or 0)
    again = JournalForge(forge, rerun).comment(REPO, 7, "second run's answer")

    assert rerun.attempt == 2
    assert again.id == posted.id
    assert [c.method for c in forge.calls] == ["comment", "edit_comment"]
    assert forge.comments[posted.id][2] == "second run's answer"

    env.claims.release("d-label", second)
    with pytest.raises(LeaseLost):
        JournalForge(forge, rerun).comment(REPO, 7, "written by a job that lost its claim")


def test_a_rerun_s_dispatch_is_not_repeated_and_still_names_the_run(env: Env) -> None:
    forge = RecordingForge()
    first = Owner.here()
    claim = Claim(env.claims, "d-label", first, env.claims.claim("d-label", first) or 0)
    run_url = JournalForge(forge, claim).dispatch_workflow(REPO, "freemad.yml", "main", {})
    env.claims.release("d-label", first)

    second = Owner.here()
    rerun = Claim(env.claims, "d-label", second, env.claims.claim("d-label", second) or 0)
    again = JournalForge(forge, rerun).dispatch_workflow(REPO, "freemad.yml", "main", {})

    assert run_url is not None and again == run_url
    assert len(forge.dispatches) == 1


def test_a_live_claim_keeps_a_second_job_out(env: Env) -> None:
    holder = Owner.here()
    assert env.claims.claim("d-label", holder) == 1
    assert env.claims.claim("d-label", Owner.here()) is None
    assert env.claims.renew("d-label", holder)
    env.claims.release("d-label", holder)
    assert env.claims.claim("d-label", Owner.here()) == 2


def test_redis_without_the_redis_package_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # import redis -> ImportError
    queue_url = cast(Any, "redis://127.0.0.1:6379/0")
    with pytest.raises(UsageError, match=r"pip install 'freemad\[redis\]'"):
        make_huey(settings_for(tmp_path, queue_url=queue_url))


def test_the_local_executor_reports_depth_and_the_workers_heartbeat(env: Env) -> None:
    env.register(Scripted())
    executor = LocalExecutor(env.huey)
    assert executor.depth() == 0
    assert executor.heartbeat() is None
    env.accept(LABELED)
    assert executor.depth() == 1
    env.huey.put(HEARTBEAT_KEY, 1234.5)
    assert executor.heartbeat() == 1234.5


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
        return Job(
            env.settings,
            deliveries=env.deliveries,
            claims=claims,
            run=run,
            forge_factory=lambda s, i: env.forge,
        )

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
