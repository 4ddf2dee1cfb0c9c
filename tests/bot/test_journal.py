"""The journal and its claims (`freemad/bot/journal.py`) on real SQLite: a rerun edits what the
first run posted and repeats no dispatch, a live claim keeps a second job out, a job whose claim
lapsed writes nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from freemad.bot.journal import Claim, JournalForge, LeaseLost
from freemad.bot.ports import Owner
from freemad.github.forge import ForgeError, RecordingForge
from freemad.github.markers import derived_key, key_of
from freemad.github.pygithub_forge import PyGithubForge
from freemad.github.standin import StandIn
from tests.bot.conftest import Env
from tests.github.payloads import REPO

TOKEN = "ghs_JournalKeyTestToken00000000000000000"
SHA = "a" * 40


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


def test_a_rerun_keeps_the_first_runs_check_run_and_review_thread_reply(env: Env) -> None:
    """A job killed mid-debate and run again: the check run goes on (never a second one beside
    it), and its reply in the review thread is edited, not posted twice."""
    forge = RecordingForge()
    first = Owner.here()
    claim = Claim(env.claims, "d-diff", first, env.claims.claim("d-diff", first) or 0)
    journal = JournalForge(forge, claim)
    check = journal.create_check_run(
        REPO, name="FREE-MAD debate", head_sha="a" * 40, title="t", summary="s"
    )
    reply = journal.reply_in_review_thread(REPO, 9, 2002, "starting")
    env.claims.release("d-diff", first)

    second = Owner.here()
    rerun = JournalForge(
        forge, Claim(env.claims, "d-diff", second, env.claims.claim("d-diff", second) or 0)
    )
    assert (
        rerun.create_check_run(
            REPO, name="FREE-MAD debate", head_sha="a" * 40, title="t", summary="s"
        )
        == check
    )
    again = rerun.reply_in_review_thread(REPO, 9, 2002, "round 1 finished")
    rerun.update_check_run(REPO, check, title="Done", summary="won", conclusion="success")

    assert again.id == reply.id and len(forge.thread_replies) == 1
    assert forge.thread_replies[reply.id][3] == "round 1 finished"
    assert len(forge.check_runs) == 1 and forge.check_runs[check]["conclusion"] == "success"


def test_a_live_claim_keeps_a_second_job_out(env: Env) -> None:
    holder = Owner.here()
    assert env.claims.claim("d-label", holder) == 1
    assert env.claims.claim("d-label", Owner.here()) is None
    assert env.claims.renew("d-label", holder)
    env.claims.release("d-label", holder)
    assert env.claims.claim("d-label", Owner.here()) == 2


def test_a_rerun_finds_the_comment_a_failed_run_made_but_never_journaled(env: Env) -> None:
    """GitHub made the comment and answered 502, and then could not even list the thread: the
    first run failed without knowing. The rerun's comment carries the same key (derived from the
    delivery and the comment's place in the run), finds it, and edits it: one comment."""
    with StandIn(token=TOKEN) as api:
        api.add_issue(REPO, 7, "seven", "")
        with PyGithubForge(
            TOKEN, base_url=api.base_url, throttle=False, sleep=lambda s: None
        ) as forge:
            api.fail_next(502, method="POST", done=True)
            api.fail_next(503, method="GET", times=5)  # the first try and its 4 retries
            first = Owner.here()
            claim = Claim(env.claims, "d-key", first, env.claims.claim("d-key", first) or 0)
            with pytest.raises(ForgeError):
                JournalForge(forge, claim).comment(REPO, 7, "the first run's answer")
            env.claims.release("d-key", first)
            assert len(api.comments) == 1  # GitHub has it; the journal does not

            second = Owner.here()
            rerun = Claim(env.claims, "d-key", second, env.claims.claim("d-key", second) or 0)
            again = JournalForge(forge, rerun).comment(REPO, 7, "the second run's answer")
        [(cid, kept)] = list(api.comments.items())
        assert again.id == cid and kept["body"].startswith("the second run's answer")
        assert [c.method for c in api.calls if not c.injected] == ["GET", "PATCH"]


@pytest.fixture
def pull_api() -> Iterator[StandIn]:
    """A pull request with a review thread (comment 2002) on the stand-in."""
    with StandIn(token=TOKEN) as api:
        api.add_pull(REPO, 9, head_ref="f", head_sha=SHA, base_ref="main", head_repo=REPO)
        api.add_review_comment(REPO, 9, "/freemad debate", 2002)
        yield api


@pytest.fixture
def real_forge(pull_api: StandIn) -> Iterator[PyGithubForge]:
    with PyGithubForge(
        TOKEN, base_url=pull_api.base_url, throttle=False, sleep=lambda s: None
    ) as forge:
        yield forge


def _attempt(env: Env, forge: PyGithubForge, delivery: str) -> JournalForge:
    owner = Owner.here()
    return JournalForge(
        forge, Claim(env.claims, delivery, owner, env.claims.claim(delivery, owner) or 0)
    )


def _failed_unjournaled(
    env: Env, api: StandIn, journal: JournalForge, create: Callable[[JournalForge], object]
) -> None:
    """A first run whose create GitHub made and answered 502, and that could not even look for
    it: the run failed, and the journal does not have what GitHub has."""
    api.fail_next(502, method="POST", done=True)
    api.fail_next(503, method="GET", times=5)  # the first try and its 4 retries
    with pytest.raises(ForgeError):
        create(journal)
    env.claims.release(journal.claim.delivery_id, journal.claim.owner)
    api.calls.clear()


def test_a_rerun_finds_the_thread_reply_a_failed_run_made_but_never_journaled(
    env: Env, pull_api: StandIn, real_forge: PyGithubForge
) -> None:
    """The rerun's reply carries the key the first run's did (derived from the delivery and the
    reply's place in the run), finds it among the pull request's review comments, and edits it."""
    first = _attempt(env, real_forge, "d-reply")
    _failed_unjournaled(
        env, pull_api, first, lambda j: j.reply_in_review_thread(REPO, 9, 2002, "starting")
    )
    again = _attempt(env, real_forge, "d-reply").reply_in_review_thread(
        REPO, 9, 2002, "round 1 finished"
    )
    mine = [c for c in pull_api.review_comments.values() if c["id"] != 2002]
    assert [c["id"] for c in mine] == [again.id]
    assert mine[0]["body"].startswith("round 1 finished")
    assert key_of(mine[0]["body"]) == derived_key("d-reply", "thread_reply", "1")
    assert [c.method for c in pull_api.calls if c.method == "POST"] == []
    assert pull_api.calls[-1].method == "PATCH"


def test_a_rerun_finds_the_check_run_a_failed_run_made_but_never_journaled(
    env: Env, pull_api: StandIn, real_forge: PyGithubForge
) -> None:
    """The same for a check run, by its `external_id`: the rerun goes on with it."""
    shown = {"name": "FREE-MAD debate", "head_sha": SHA, "title": "t", "summary": "s"}
    first = _attempt(env, real_forge, "d-check")
    _failed_unjournaled(env, pull_api, first, lambda j: j.create_check_run(REPO, **shown))
    rerun = _attempt(env, real_forge, "d-check")
    ident = rerun.create_check_run(REPO, **shown)
    rerun.update_check_run(REPO, ident, title="Done", summary="won", conclusion="success")

    assert list(pull_api.check_runs) == [ident]
    assert pull_api.check_runs[ident]["conclusion"] == "success"
    assert pull_api.check_runs[ident]["external_id"] == derived_key("d-check", "check_run", "1")
    assert [(c.method, c.path) for c in pull_api.calls] == [
        ("GET", f"/repos/{REPO}/commits/{SHA}/check-runs"),
        ("PATCH", f"/repos/{REPO}/check-runs/{ident}"),
    ]


def test_a_first_run_keys_its_reply_and_check_run_by_the_delivery_and_looks_for_nothing(
    env: Env, pull_api: StandIn, real_forge: PyGithubForge
) -> None:
    journal = _attempt(env, real_forge, "d-first")
    ident = journal.create_check_run(
        REPO, name="FREE-MAD debate", head_sha=SHA, title="t", summary="s"
    )
    reply = journal.reply_in_review_thread(REPO, 9, 2002, "starting")

    assert [c.method for c in pull_api.calls] == ["POST", "POST"]
    assert pull_api.check_runs[ident]["external_id"] == derived_key("d-first", "check_run", "1")
    body = pull_api.review_comments[reply.id]["body"]
    assert key_of(body) == derived_key("d-first", "thread_reply", "1")
