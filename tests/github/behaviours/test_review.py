"""`/freemad review` and the `freemad:review` label through the router: one status comment
edited in place, one pull-request review with inline comments, and every bad input a reply with
nothing posted half-way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from freemad.github.forge import ForgeError, PullFile, PullRequestDetails, RecordingForge
from tests.conftest import make_config, mock_agent
from tests.github.payloads import REPO as LABEL_REPO
from tests.github.payloads import pull_request
from tests.github.routers import bodies, comment_on_pull, router
from tests.github.test_evolve_pr import REPO

DIFF = (Path(__file__).parents[2] / "debate" / "fixtures" / "review.diff").read_text()
PATCH = DIFF[DIFF.index("@@") :].rstrip("\n")
SERVICE = PullFile("app/service.py", "modified", PATCH, None, 6, 1)
IMAGE = PullFile("logo.png", "added", None, None, 0, 0)


def review_config() -> Any:
    agents = [
        mock_agent("mock-iterative", "--persona", "iterative"),
        mock_agent("mock-recursive", "--persona", "recursive", "--revise"),
        mock_agent("mock-memoized", "--persona", "memoized"),
    ]
    return make_config(agents)


def on_pull(
    forge: RecordingForge, number: int = 7, files: list[PullFile] | None = None, repo: str = REPO
) -> None:
    url = f"https://github.com/{repo}/pull/{number}"
    forge.details[(repo, number)] = PullRequestDetails(
        number, url, "feature", "c" * 40, "main", repo
    )
    forge.files[(repo, number)] = [SERVICE] if files is None else files


def test_a_review_command_posts_one_review_with_inline_comments(store: Any, tmp_path: Path):
    routed, forge = router(review_config(), store, tmp_path)
    on_pull(forge)

    outcome = routed.handle("issue_comment", comment_on_pull("/freemad review"))

    assert outcome.action == "review" and outcome.status == "completed"
    assert outcome.reason == "COMMENT"
    assert forge.reactions == [(REPO, 1001, "eyes")]
    [review] = forge.reviews
    assert review["event"] == "COMMENT" and review["commit_id"] == "c" * 40
    assert [(c["path"], c["line"], c["side"]) for c in review["comments"]] == [
        ("app/service.py", 5, "RIGHT"),
        ("app/service.py", 9, "RIGHT"),
    ]
    suggestion = review["comments"][1]["body"]
    assert "**major**" in suggestion and "```suggestion\n    except Exception:\n```" in suggestion
    assert "| mock-recursive | 1 | 1 | yes |" in review["body"]
    # One status comment, posted once and edited as rounds finished, never one per round.
    assert len(forge.calls_to("comment")) == 1
    edits = [c.args["body"] for c in forge.calls_to("edit_comment")]
    assert "round 1 of 2 finished" in edits[0] and "round 2 of 2 finished" in edits[1]
    assert "review is posted" in edits[-1] and outcome.comment_url in edits[-1]
    [run] = store.runs(kind="debate")
    assert run.summary["kind"] == "review"


def test_a_review_label_starts_it_and_rounds_come_from_the_command(store: Any, tmp_path: Path):
    routed, forge = router(review_config(), store, tmp_path)
    on_pull(forge, number=9, repo=LABEL_REPO)

    outcome = routed.handle("pull_request", pull_request(label="freemad:review"))

    assert outcome.action == "review"
    [review] = forge.reviews
    assert review["number"] == 9 and len(review["comments"]) == 2

    routed, forge = router(review_config(), store, tmp_path)
    on_pull(forge)
    routed.handle("issue_comment", comment_on_pull("/freemad review rounds=0"))
    [review] = forge.reviews  # with no critique round, all three proposals stand
    assert sorted(c["line"] for c in review["comments"]) == [5, 6, 9]


def test_an_empty_or_binary_only_diff_gets_a_reply_and_nothing_else(store: Any, tmp_path: Path):
    for files, says in (([], "the diff is empty"), ([IMAGE], "only binary files")):
        routed, forge = router(review_config(), store, tmp_path)
        on_pull(forge, files=files)
        outcome = routed.handle("issue_comment", comment_on_pull("/freemad review"))
        assert outcome.action == "replied"
        [reply] = bodies(forge)
        assert says in reply and reply.startswith("@alice")
        assert forge.reviews == [] and forge.calls_to("edit_comment") == []


def test_a_binary_file_beside_text_is_listed_as_not_reviewed(store: Any, tmp_path: Path):
    routed, forge = router(review_config(), store, tmp_path)
    on_pull(forge, files=[SERVICE, IMAGE])
    routed.handle("issue_comment", comment_on_pull("/freemad review"))
    [review] = forge.reviews
    assert (
        "**Not reviewed**" in review["body"] and "logo.png (added, binary file)" in review["body"]
    )


def test_a_closed_pull_request_is_not_reviewed(store: Any, tmp_path: Path):
    routed, forge = router(review_config(), store, tmp_path)
    on_pull(forge)
    forge.details[(REPO, 7)] = PullRequestDetails(7, "u", "f", "c" * 40, "main", REPO, "closed")
    outcome = routed.handle("issue_comment", comment_on_pull("/freemad review"))
    assert outcome.action == "replied"
    [reply] = bodies(forge)
    assert "is closed" in reply
    assert forge.reviews == [] and forge.calls_to("pull_request_files") == []


class _ClosesMeanwhile(RecordingForge):
    """Open when the review starts, closed when it would be posted."""

    def pull_request(self, repo: str, number: int) -> PullRequestDetails:
        found = super().pull_request(repo, number)
        if len(self.calls_to("pull_request")) > 1:
            return PullRequestDetails(7, "u", "f", "c" * 40, "main", REPO, "closed")
        return found


def test_a_pull_request_closed_while_agents_work_gets_no_review(store: Any, tmp_path: Path):
    from freemad.github.router import Router
    from freemad.github.thread import Settings
    from freemad.wiring import ADAPTERS

    forge = _ClosesMeanwhile(permissions={"alice": "write"})
    on_pull(forge)
    settings = Settings(self_login="freemad[bot]", workspace=tmp_path)
    routed = Router(review_config(), forge, store, settings, adapters=ADAPTERS)
    outcome = routed.handle("issue_comment", comment_on_pull("/freemad review"))
    assert outcome.action == "refused" and outcome.status == "closed"
    assert forge.reviews == []
    last = forge.calls_to("edit_comment")[-1].args["body"]
    assert "closed while the agents reviewed it: nothing was posted" in last


def test_without_write_access_a_polite_reply_and_nothing_runs(store: Any, tmp_path: Path):
    routed, forge = router(review_config(), store, tmp_path, mallory="read")
    on_pull(forge)
    outcome = routed.handle("issue_comment", comment_on_pull("/freemad review", author="mallory"))
    assert outcome.action == "refused"
    [reply] = bodies(forge)
    assert "Only people with write access" in reply
    assert forge.reviews == [] and forge.reactions == []
    assert forge.calls_to("pull_request_files") == []


def test_on_an_issue_review_says_it_needs_a_pull_request(store: Any, tmp_path: Path):
    from tests.github.payloads import issue_comment

    routed, forge = router(review_config(), store, tmp_path)
    outcome = routed.handle("issue_comment", issue_comment("/freemad review"))
    assert outcome.action == "replied"
    [reply] = bodies(forge)
    assert "reviews a pull request" in reply and forge.reviews == []


def test_a_refused_inline_comment_moves_every_finding_into_the_body(store: Any, tmp_path: Path):
    routed, forge = router(review_config(), store, tmp_path)
    on_pull(forge)
    refusal = (
        "GitHub answered 422 to POST …/reviews: Unprocessable Entity (Line could not be resolved)"
    )
    forge.fail("create_review", ForgeError(refusal, status=422))
    outcome = routed.handle("issue_comment", comment_on_pull("/freemad review"))
    assert outcome.action == "review"
    [review] = forge.reviews  # the first attempt posted nothing: GitHub took none of it
    assert review["comments"] == []
    assert "refused the inline comments" in review["body"]
    assert "#### `app/service.py:9`" in review["body"]


def test_help_lists_the_commands_the_sender_may_use(store: Any, tmp_path: Path):
    routed, forge = router(review_config(), store, tmp_path, reader="read")
    routed.handle("issue_comment", comment_on_pull("/freemad help", author="reader"))
    routed.handle("issue_comment", comment_on_pull("/freemad help"))
    read_only, writer = bodies(forge)
    assert "`/freemad status`" in read_only and "`/freemad review" not in read_only
    assert "you may use here; 12 more need write access" in read_only
    assert "`/freemad review [rounds=N] [FOCUS]`" in writer and "more need write" not in writer


def test_a_file_github_shows_no_patch_for_is_listed_never_dropped(store: Any, tmp_path: Path):
    huge = PullFile("data/huge.sql", "modified", None, None, 40_000, 12)
    routed, forge = router(review_config(), store, tmp_path)
    on_pull(forge, files=[SERVICE, huge])
    routed.handle("issue_comment", comment_on_pull("/freemad review"))
    [review] = forge.reviews
    assert "data/huge.sql (modified, +40000 -12 lines)" in review["body"]
    assert "GitHub shows no patch for it (too large)" in review["body"]

    routed, forge = router(review_config(), store, tmp_path)
    on_pull(forge, files=[huge])
    outcome = routed.handle("issue_comment", comment_on_pull("/freemad review"))
    assert outcome.action == "replied" and forge.reviews == []
    [reply] = bodies(forge)
    assert "no patch for any of the 1 file(s)" in reply


# --- the opt-in review of pull requests opened or pushed to ------------------------------------


def _pushed(action: str = "synchronize", *, fork: bool = False, draft: bool = False) -> Any:
    payload = pull_request(action, label=None)
    payload["pull_request"]["draft"] = draft
    if fork:
        payload["pull_request"]["head"]["repo"] = {
            **payload["pull_request"]["head"]["repo"],
            "full_name": "mallory/octo-repo",
        }
    return payload


def test_a_push_is_reviewed_only_where_the_workflow_opted_in(store: Any, tmp_path: Path):
    routed, forge = router(review_config(), store, tmp_path)
    on_pull(forge, number=9, repo=LABEL_REPO)
    outcome = routed.handle("pull_request", _pushed())
    assert outcome.action == "ignored" and "review-pull-requests" in outcome.reason
    assert forge.calls == []

    routed.settings.review_pull_requests = True
    outcome = routed.handle("pull_request", _pushed("opened"))
    assert outcome.action == "review"
    [review] = forge.reviews
    assert review["number"] == 9 and forge.reactions == []  # no comment to mark


def test_a_forks_or_a_drafts_push_is_never_reviewed(store: Any, tmp_path: Path):
    routed, forge = router(review_config(), store, tmp_path)
    routed.settings.review_pull_requests = True
    on_pull(forge, number=9, repo=LABEL_REPO)
    fork = routed.handle("pull_request", _pushed(fork=True))
    assert fork.action == "ignored" and "from a fork runs without secrets" in fork.reason
    draft = routed.handle("pull_request", _pushed(draft=True))
    assert draft.action == "ignored" and "draft" in draft.reason
    assert forge.calls == [] and forge.reviews == []


def test_a_push_by_someone_without_write_access_is_refused(store: Any, tmp_path: Path):
    routed, forge = router(review_config(), store, tmp_path, mallory="read")
    routed.settings.review_pull_requests = True
    on_pull(forge, number=9, repo=LABEL_REPO)
    payload = _pushed()
    payload["sender"] = {**payload["sender"], "login": "mallory"}
    outcome = routed.handle("pull_request", payload)
    assert outcome.action == "refused" and forge.reviews == []


def test_the_actions_input_turns_the_review_of_pushes_on():
    from freemad.github.action import read_inputs

    assert read_inputs({"INPUT_REVIEW_PULL_REQUESTS": "true"}).review_pull_requests is True
    assert read_inputs({"INPUT_REVIEW-PULL-REQUESTS": "true"}).review_pull_requests is True
    assert read_inputs({}).review_pull_requests is False
