"""The router (`freemad/github/router.py`): who may command (permissions, bots, our own comments),
what is a command (hidden, quoted, edited, help, malformed), where a command lands (issue, pull
request, a review comment on its diff), the run link. The behaviours' own tests are in
tests/github/behaviours/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MOCK_AGENT, make_config, mock_agent
from tests.github.payloads import REPO, issue_comment, labeled_issue, review_comment
from tests.github.routers import TASK_MOCK, bodies, debate_config, router, task_config


def test_an_outsiders_command_gets_one_polite_reply_and_runs_nothing(
    store: Any, tmp_path: Path
) -> None:
    routed, forge = router(debate_config(), store, tmp_path, mallory="read")

    outcome = routed.handle("issue_comment", issue_comment("/freemad debate", author="mallory"))

    assert outcome.action == "refused"
    [body] = bodies(forge)
    assert body.startswith("@mallory Only people with write access")
    assert forge.reactions == [] and store.runs() == []


def test_a_bot_is_refused_silently_and_our_own_comments_are_never_read(
    store: Any, tmp_path: Path
) -> None:
    routed, forge = router(debate_config(), store, tmp_path, **{"other[bot]": "write"})
    bot = issue_comment("/freemad debate", author="other[bot]")
    bot["comment"]["user"]["type"] = bot["sender"]["type"] = "Bot"
    assert routed.handle("issue_comment", bot).action == "ignored"
    ours = issue_comment("/freemad debate", author="freemad[bot]")
    assert routed.handle("issue_comment", ours).action == "ignored"
    assert forge.comments == {} and store.runs() == []


def test_a_bot_the_config_names_may_act_with_write_access(store: Any, tmp_path: Path) -> None:
    config = make_config(
        [mock_agent("alpha", "--persona", "iterative")], github={"allowed_bots": ["helper[bot]"]}
    )
    routed, _ = router(config, store, tmp_path, **{"helper[bot]": "write"})
    payload = issue_comment("/freemad debate rounds=0 Pick", author="helper[bot]")
    payload["comment"]["user"]["type"] = payload["sender"]["type"] = "Bot"
    assert routed.handle("issue_comment", payload).action == "debate"


@pytest.mark.parametrize(
    "body",
    [
        "<!-- /freemad debate -->",
        "<!--\n/freemad debate\n-->",
        "Looks good.\n/freemad debate",
        "> /freemad debate",
    ],
)
def test_a_hidden_or_quoted_command_does_nothing(store: Any, tmp_path: Path, body: str) -> None:
    routed, forge = router(debate_config(), store, tmp_path)
    assert routed.handle("issue_comment", issue_comment(body)).action == "ignored"
    assert forge.calls == [] and store.runs() == []


def test_edited_comments_are_ignored(store: Any, tmp_path: Path) -> None:
    routed, forge = router(debate_config(), store, tmp_path)
    assert routed.handle("issue_comment", issue_comment(action="edited")).action == "ignored"
    assert forge.calls == []


def test_help_and_a_malformed_command_are_answered(store: Any, tmp_path: Path) -> None:
    routed, forge = router(debate_config(), store, tmp_path)
    assert routed.handle("issue_comment", issue_comment("/freemad help")).reason == "help"
    assert routed.handle("issue_comment", issue_comment("/freemad dance")).reason == "error"
    helped, failed = bodies(forge)
    assert "/freemad debate" in helped and "/freemad answer" in helped
    assert (
        failed.startswith("@alice that command could not be read") and "`/freemad help`" in failed
    )
    assert store.runs() == []


def test_a_comment_on_a_pull_request_starts_a_debate_like_one_on_an_issue(
    store: Any, tmp_path: Path
) -> None:
    routed, forge = router(debate_config(), store, tmp_path)
    outcome = routed.handle(
        "issue_comment", issue_comment("/freemad debate rounds=0 Pick one", on_pull_request=True)
    )
    assert outcome.action == "debate" and outcome.status == "completed"
    assert forge.reactions == [(REPO, 1001, "eyes")]
    [finished] = store.events(outcome.run_id, kinds=["debate_finished"])
    transcript = finished.data["transcript"]
    assert transcript["requirement"] == "Pick one" and len(transcript["transcript"]) == 1


def test_a_comment_on_a_pull_requests_diff_is_a_command_on_that_pull_request(
    store: Any, tmp_path: Path
) -> None:
    """GitHub sends it as pull_request_review_comment; the commenter's access is checked, the 👀
    goes on the review comment (its own reactions, not an issue comment's), and the answer in
    the comment's review thread (issue 44.6), not the pull request's conversation."""
    routed, forge = router(debate_config(), store, tmp_path)

    outcome = routed.handle("pull_request_review_comment", review_comment("/freemad debate Pick"))

    assert outcome.action == "debate" and outcome.status == "completed"
    assert forge.calls_to("permission")[0].args == {"repo": REPO, "login": "alice"}
    assert forge.review_reactions == [(REPO, 2002, "eyes")] and forge.reactions == []
    assert forge.comments == {}  # nothing in the conversation
    [(repo, number, replied_to, body)] = forge.thread_replies.values()
    assert (repo, number, replied_to) == (REPO, 9, 2002) and "**Winner:**" in body
    assert forge.calls_to("edit_comment") == []  # its status reply is edited as a diff comment
    assert len(forge.calls_to("edit_review_comment")) >= 2
    [finished] = store.events(outcome.run_id, kinds=["debate_finished"])
    assert finished.data["transcript"]["requirement"] == "Pick"


def test_an_outsiders_review_comment_gets_the_polite_reply_in_its_review_thread(
    store: Any, tmp_path: Path
) -> None:
    routed, forge = router(debate_config(), store, tmp_path, mallory="read")
    outcome = routed.handle(
        "pull_request_review_comment", review_comment("/freemad debate", author="mallory")
    )
    assert outcome.action == "refused"
    assert forge.comments == {}
    [(_, number, replied_to, body)] = forge.thread_replies.values()
    assert (number, replied_to) == (9, 2002)
    assert body.startswith("@mallory Only people with write access")
    assert forge.review_reactions == [] and store.runs() == []


def test_a_review_comment_steers_the_run_a_conversation_comment_started(
    store: Any, tmp_path: Path
) -> None:
    """Both kinds of comment on pull request #9 are the same thread: a task started in the
    conversation is answered from the diff."""
    config = task_config(tmp_path)
    routed, forge = router(config, store, tmp_path)
    started = routed.handle(
        "issue_comment", issue_comment("/freemad plan Cache it", on_pull_request=True)
    )
    assert started.status == "waiting_for_human"
    pull = issue_comment()["issue"]["number"]  # the pull request the comments are on

    answer = review_comment("/freemad answer Use SQLite.")
    answer["pull_request"]["number"] = pull
    answered = routed.handle("pull_request_review_comment", answer)

    assert (answered.action, answered.run_id, answered.status) == (
        "steered",
        started.run_id,
        "completed",
    )
    assert forge.review_reactions == [(REPO, 2002, "eyes")]
    assert len(forge.comments) == 1  # the one progress comment, edited
    assert forge.thread_replies == {}  # steering edits the run's comment where it is


def test_a_conversation_comment_steers_the_run_a_review_comment_started(
    store: Any, tmp_path: Path
) -> None:
    """The other way round: a task started on the diff keeps its progress in that review
    thread, and an answer in the conversation edits it there, as a comment on the diff."""
    config = task_config(tmp_path)
    routed, forge = router(config, store, tmp_path)
    started = routed.handle("pull_request_review_comment", review_comment("/freemad plan Cache it"))
    assert started.status == "waiting_for_human"
    [progress] = forge.thread_replies  # in the review thread, not the conversation
    assert forge.comments == {}

    answer = issue_comment("/freemad answer Use SQLite.", on_pull_request=True)
    answer["issue"]["number"] = 9  # the pull request review_comment is on
    answered = routed.handle("issue_comment", answer)

    assert (answered.run_id, answered.status) == (started.run_id, "completed")
    assert forge.comments == {} and list(forge.thread_replies) == [progress]
    assert "✅ done" in forge.thread_replies[progress][3]
    assert forge.calls_to("edit_review_comment")[-1].args["comment_id"] == progress


def test_the_first_comment_of_a_run_links_the_actions_run_doing_the_work(
    store: Any, tmp_path: Path
) -> None:
    unlinked, plain = router(task_config(tmp_path), store, tmp_path)  # no Actions run here
    unlinked.handle("issues", labeled_issue("freemad:plan"))
    sent = [call.args["body"] for call in plain.calls if "body" in call.args]
    assert sent[0] == "FREE-MAD is starting a plan task…"
    assert not any("GitHub Actions run" in body for body in sent)

    job = f"https://github.com/{REPO}/actions/runs/4242/attempts/2"
    routed, forge = router(task_config(tmp_path), store, tmp_path, job_url=job)
    routed.handle("issues", labeled_issue("freemad:plan"))

    first = forge.calls_to("comment")[0].args["body"]
    assert (
        first == f"FREE-MAD is starting a plan task… Follow it in [the GitHub Actions run]({job})."
    )
    # The comment stays linked as it is edited in place, and the debate's comment is linked too.
    [(_, _, shown)] = forge.comments.values()
    assert f"({job})" in shown
    debated, debate_forge = router(debate_config(), store, tmp_path, job_url=job)
    debated.handle("issues", labeled_issue("freemad:debate"))
    [(_, _, result)] = debate_forge.comments.values()
    assert f"[the GitHub Actions run]({job})" in result


def test_mock_agent_path_is_real() -> None:
    assert Path(MOCK_AGENT).exists() and Path(TASK_MOCK).exists()
