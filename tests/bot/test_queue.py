"""The local queue on real SQLite and a real huey consumer: once, retried with backoff, parked, recovered.

Also the executors the web edge hands deliveries to: the local queue, and GitHub Actions.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from huey.exceptions import RetryTask

from freemad.bot.auth import PlainToken
from freemad.bot.claims import Claims
from freemad.bot.deliveries import DeliveryLog
from freemad.bot.executors import ActionsExecutor, LocalExecutor
from freemad.bot.job import Backoff
from freemad.bot.journal import Claim, JournalForge, LeaseLost
from freemad.bot.ports import Delivery, Owner
from freemad.bot.queue import (
    HEARTBEAT_KEY,
    enqueue,
    make_huey,
    recover_stale,
    register,
    waiting,
)
from freemad.bot.settings import BotSettings
from freemad.errors import FreemadError, UsageError
from freemad.github.forge import Forge, RecordingForge
from freemad.github.thread import Outcome
from tests.github.payloads import REPO, issue_comment, labeled_issue, review_comment


def settings_for(tmp_path: Path, **values: Any) -> BotSettings:
    return BotSettings(
        webhook_secret=cast(Any, "hook-secret"),
        github_token=cast(Any, "t0ken"),
        state_dir=tmp_path / "state",
        **values,
    )


def delivery(delivery_id: str, event: str, payload: dict[str, Any]) -> Delivery:
    body = json.dumps(payload).encode()
    return Delivery(delivery_id, event, payload.get("action"), 42, REPO, body)


class Scripted:
    """A `run` for the job: fails with each of `failures` in turn, then succeeds."""

    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.calls: list[str] = []

    def __call__(self, settings: Any, job: Delivery, forge: Forge, claim: Claim) -> Outcome:
        self.calls.append(job.delivery_id)
        if self.failures:
            raise self.failures.pop(0)
        return Outcome("debate", run_id="run-1", status="completed")


class Env:
    def __init__(self, tmp_path: Path) -> None:
        self.settings = settings_for(tmp_path)
        self.huey = make_huey(self.settings)
        self.deliveries = DeliveryLog(self.settings.deliveries_path)
        self.claims = Claims(self.settings.state_dir / "claims.db")
        self.forge = RecordingForge()
        self.delays: list[float] = []  # what each RetryTask asked huey for

        @self.huey.post_execute()
        def _record(task: Any, value: Any, exc: BaseException | None) -> None:
            if isinstance(exc, RetryTask):
                self.delays.append(exc.delay)

    def register(self, run: Scripted, backoff: Backoff | None = None) -> None:
        register(
            self.huey,
            self.settings,
            deliveries=self.deliveries,
            claims=self.claims,
            run=run,
            forge_factory=lambda settings, installation: self.forge,
            backoff=backoff or Backoff(attempts=3, base=0.01, factor=2.0),
        )

    def accept(self, job: Delivery) -> None:
        """What the web edge does: record, then submit."""
        assert self.deliveries.record(job)
        LocalExecutor(self.huey).submit(job)

    @staticmethod
    def wait_for(check: Callable[[], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.02)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    made = Env(tmp_path)
    yield made
    made.deliveries.close()
    made.claims.close()
    made.huey.storage.close()


@pytest.fixture
def consumer(env: Env) -> Iterator[Callable[[], Any]]:
    """Start huey's real consumer (a worker thread and the scheduler) when the test asks."""
    started: list[Any] = []
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}

    def start() -> Any:
        made = env.huey.create_consumer(
            workers=1, periodic=False, initial_delay=0.01, max_delay=0.05, check_worker_health=False
        )
        made.start()
        for number, handler in saved.items():  # the consumer took them; pytest wants them back
            signal.signal(number, handler)
        started.append(made)
        return made

    yield start
    for made in started:
        made.stop(graceful=True)


LABELED = delivery("d-label", "issues", labeled_issue())


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


# --- the actions executor -------------------------------------------------------------------


@pytest.fixture
def actions(env: Env) -> ActionsExecutor:
    return ActionsExecutor(
        PlainToken("t0ken"),
        env.settings,
        deliveries=env.deliveries,
        forge_factory=lambda i: env.forge,
    )


def test_a_label_dispatches_the_workflow_and_links_the_run(
    env: Env, actions: ActionsExecutor
) -> None:
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


def test_a_dispatch_that_names_no_run_is_still_acknowledged(
    env: Env, actions: ActionsExecutor
) -> None:
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


def test_a_review_comment_is_dispatched_for_its_pull_request(
    env: Env, actions: ActionsExecutor
) -> None:
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
    }
    (comment,) = env.forge.calls_to("comment")
    assert comment.args["number"] == 9 and "`/freemad plan`" in comment.args["body"]


def test_a_command_is_dispatched_as_its_text(env: Env, actions: ActionsExecutor) -> None:
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
    env: Env, actions: ActionsExecutor
) -> None:
    job = delivery("d-m", "issue_comment", issue_comment("/freemad code", author="mallory"))
    env.deliveries.record(job)
    actions.submit(job)

    assert env.forge.dispatches == []
    assert "write access" in env.forge.calls_to("comment")[0].args["body"]
    assert env.deliveries.status("d-m") == "ignored"


def test_an_ordinary_comment_costs_no_request(env: Env, actions: ActionsExecutor) -> None:
    job = delivery("d-o", "issue_comment", issue_comment("thanks, looks good"))
    env.deliveries.record(job)
    actions.submit(job)

    assert env.forge.calls == []
    assert env.deliveries.status("d-o") == "ignored"
    assert actions.depth() is None and actions.heartbeat() is None


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
        executor = ActionsExecutor(
            PlainToken(token),
            env.settings,
            deliveries=env.deliveries,
            forge_factory=lambda i: PyGithubForge(token, base_url=api.base_url, throttle=False),
        )
        env.deliveries.record(LABELED)
        executor.submit(LABELED)

        [dispatch] = api.dispatches
        [comment] = [c["body"] for c in api.comments.values()]
        run_page = f"{api.origin}/{REPO}/actions/runs/{dispatch['run_id']}"
        if prefix:
            assert comment.startswith("FREE-MAD dispatched `debate` to GitHub Actions")
            assert run_page not in comment
        else:
            assert comment == (
                f"FREE-MAD started `debate` on GitHub Actions: follow it in [its run]({run_page})."
            )
        assert env.deliveries.status("d-label") == "done"
