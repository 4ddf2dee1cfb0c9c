"""The actions executor answers first and calls GitHub after, from the durable queue.

GitHub gives a delivery 10 s. The web edge (the real Flask app, signed deliveries) records and
enqueues and answers 202 with no request to GitHub at all, even while GitHub (the loopback
stand-in) is holding every request; a real `freemad bot worker` then checks who asked,
dispatches the workflow and comments. A worker killed while GitHub holds its request is
replaced, and the delivery is dispatched once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from freemad.bot.executors import WORKFLOW, ActionsExecutor, executor_from
from freemad.bot.settings import BotSettings
from freemad.github.markers import without_key
from freemad.github.standin import StandIn
from tests.bot.test_worker import TOKEN, Bot
from tests.github.payloads import REPO, issue_comment, labeled_issue

WORKFLOW_FILE = Path(__file__).resolve().parents[2] / ".github" / "workflows" / WORKFLOW


class HeldGitHub(StandIn):
    """The stand-in, holding every request until `release()`: a GitHub slower than 10 s."""

    def __init__(self) -> None:
        super().__init__(token=TOKEN, permissions={"alice": "write"})
        self.released = threading.Event()
        self.arrived = threading.Event()

    def serve(
        self, method: str, target: str, headers: Mapping[str, str], raw: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        self.arrived.set()
        self.released.wait(120)
        return super().serve(method, target, headers, raw)

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def github() -> Iterator[HeldGitHub]:
    with HeldGitHub() as api:
        api.add_workflow(REPO, WORKFLOW, WORKFLOW_FILE.read_text())
        yield api
        api.release()  # let held requests of killed workers end, so the server can stop


@pytest.fixture
def bot(tmp_path: Path, github: HeldGitHub) -> Iterator[Bot]:
    made = Bot(tmp_path, github)
    made.environ["FREEMAD_EXECUTOR"] = "actions"
    made.settings = BotSettings.from_env(made.environ)
    yield made
    made.stop()


def test_the_web_edge_only_enqueues(bot: Bot) -> None:
    executor = executor_from(bot.settings)
    assert isinstance(executor, ActionsExecutor) and executor.quick_submit
    assert executor.queue_file == bot.settings.deliveries_path  # recorded and queued in one commit


def test_the_delivery_is_answered_while_github_holds_every_request(
    bot: Bot, github: HeldGitHub
) -> None:
    assert bot.post("issues", labeled_issue("freemad:debate"), "d-held") == 202
    assert not github.arrived.is_set() and github.calls == []  # no request reached GitHub
    # Committed from the web worker's spool a moment after its 202 (spool.py).
    bot.wait_for(lambda: bot.deliveries.status("d-held") == "queued", 30, "the commit")

    first = bot.start_worker()
    bot.wait_for(github.arrived.is_set, 60, "the worker's first request to GitHub")
    assert bot.deliveries.status("d-held") == "running"
    first.send_signal(signal.SIGKILL)  # killed while GitHub holds its request
    first.wait()
    assert github.dispatches == []

    bot.start_worker()
    github.release()
    bot.wait_for(lambda: bot.deliveries.status("d-held") == "done", 90, "the dispatch")

    [dispatch] = github.dispatches
    assert dispatch["inputs"] == {
        "mode": "debate",
        "requirement": "",
        "issue": "7",
        "sender": "alice",
    }
    [said] = [without_key(c["body"]) for c in github.comments.values()]
    run_page = f"{github.origin}/{REPO}/actions/runs/{dispatch['run_id']}"
    assert (
        said == f"FREE-MAD started `debate` on GitHub Actions: follow it in [its run]({run_page})."
    )
    (record,) = bot.deliveries.recent()
    assert record.attempts == 2 and record.detail.startswith(f"dispatched {WORKFLOW} on {REPO}")


def test_a_dispatch_github_started_but_answered_502_is_parked_not_dispatched_again(
    bot: Bot, github: HeldGitHub
) -> None:
    """GitHub started the run and answered 502. A dispatch cannot be looked for afterwards, so
    neither the forge nor the job asks again (before, each did: two runs, or more); the job is
    parked with a comment saying the run may have started."""
    github.release()
    path = f"/repos/{REPO}/actions/workflows/{WORKFLOW}/dispatches"
    github.fail_next(502, method="POST", path=path, done=True)
    assert bot.post("issue_comment", issue_comment("/freemad plan add a cache"), "d-502") == 202
    bot.start_worker()
    bot.wait_for(lambda: bot.deliveries.status("d-502") == "parked", 60, "the job to give up")
    assert len(github.dispatches) == 1
    assert len(github.calls_to("POST", path)) == 1
    [parked] = [c["body"] for c in github.comments.values() if c["user"]["login"] == github.login]
    assert "502" in parked and "may have started it" in parked


def test_a_dispatch_github_refuses_is_said_on_the_issue_not_answered_503(
    bot: Bot, github: HeldGitHub
) -> None:
    """Before, a failed dispatch answered the delivery 503, and nothing was said on the issue;
    now the delivery is accepted, and the job (after its retries, or at once for a 404 that
    will not change) says on the issue that it gave up."""
    github.release()
    github.fail_next(
        404, method="POST", path=f"/repos/{REPO}/actions/workflows/{WORKFLOW}/dispatches"
    )
    payload = issue_comment("/freemad plan add a cache")
    assert bot.post("issue_comment", payload, "d-404") == 202
    bot.start_worker()
    bot.wait_for(lambda: bot.deliveries.status("d-404") == "parked", 60, "the job to give up")
    [parked] = [c["body"] for c in github.comments.values() if c["user"]["login"] == github.login]
    assert "FREE-MAD could not handle this" in parked and "404" in parked
    assert github.dispatches == []
