"""The journal and its claims (`freemad/bot/journal.py`) on real SQLite: a rerun edits what the
first run posted and repeats no dispatch, a live claim keeps a second job out, a job whose claim
lapsed writes nothing."""

from __future__ import annotations

import pytest

from freemad.bot.journal import Claim, JournalForge, LeaseLost
from freemad.bot.ports import Owner
from freemad.github.forge import RecordingForge
from tests.bot.conftest import Env
from tests.github.payloads import REPO


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
    from freemad.github.forge import ForgeError
    from freemad.github.pygithub_forge import PyGithubForge
    from freemad.github.standin import StandIn

    token = "ghs_JournalKeyTestToken00000000000000000"
    with StandIn(token=token) as api:
        api.add_issue(REPO, 7, "seven", "")
        with PyGithubForge(
            token, base_url=api.base_url, throttle=False, sleep=lambda s: None
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
