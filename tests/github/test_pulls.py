"""Opening a pull request as GitHub answers a job's token: refused unless the repository allows
GitHub Actions to create pull requests (off by default), drafts refused on some plans."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from freemad.errors import FreemadError
from freemad.github.comments import render_reply
from freemad.github.forge import ForgeError, PullRequestRef, RecordingForge
from freemad.github.pulls import SETTING, BranchOnly, open_or_explain, web_url_of
from freemad.github.pygithub_forge import PyGithubForge
from freemad.github.standin import StandIn
from tests.evolve.runs import Worker, calc
from tests.github.test_evolve_pr import Origin, origin, start  # noqa: F401 - the fixture

TOKEN = "ghs_FreeMadTestToken0000000000000000000"
REPO = "octo/widgets"


@pytest.fixture
def api() -> Iterator[StandIn]:
    with StandIn(token=TOKEN) as standin:
        yield standin


def opened(forge: object, *, draft: bool = True) -> PullRequestRef | BranchOnly:
    return open_or_explain(
        forge,  # type: ignore[arg-type]
        REPO,
        head="freemad/evolve/abc",
        base="feature",
        title="t",
        body="b",
        draft=draft,
        web_url="https://github.example.com",
    )


def test_where_actions_may_not_open_pull_requests_the_branch_and_the_setting_are_named(
    api: StandIn,
) -> None:
    api.actions_may_open_pulls = False
    with PyGithubForge(TOKEN, base_url=api.base_url, throttle=False) as forge:
        with pytest.raises(ForgeError) as refused:
            forge.open_pull_request(REPO, head="x", base="main", title="t", body="b", draft=False)
        assert refused.value.status == 403
        assert refused.value.hint == f"turn on {SETTING}"  # not "the token lacks a permission"
        result = opened(forge)
    assert isinstance(result, BranchOnly)
    assert result.compare_url == (
        "https://github.example.com/octo/widgets/compare/feature...freemad/evolve/abc?expand=1"
    )
    assert "Allow GitHub Actions to create and approve pull requests" in result.reason
    assert [c.status for c in api.calls if c.method == "POST"] == [403, 403]


def test_where_drafts_are_refused_a_plain_pull_request_is_opened(api: StandIn) -> None:
    api.drafts_supported = False
    with PyGithubForge(TOKEN, base_url=api.base_url, throttle=False) as forge:
        result = opened(forge, draft=True)
    assert isinstance(result, PullRequestRef)
    [pull] = api.pulls.values()
    assert pull["draft"] is False
    assert [c.status for c in api.calls if c.method == "POST"] == [422, 201]


def test_any_other_refusal_is_still_an_error() -> None:
    forge = RecordingForge()
    forge.fail("open_pull_request", ForgeError("GitHub answered 404 to POST ...", status=404))
    with pytest.raises(FreemadError):
        opened(forge)


def test_the_web_address_of_github_and_of_a_server() -> None:
    assert web_url_of("https://api.github.com") == "https://github.com"
    assert web_url_of("https://ghe.example.com/api/v3/") == "https://ghe.example.com"


def test_an_evolve_run_whose_pull_request_is_refused_keeps_its_pushed_lineage(
    origin: Origin,  # noqa: F811 - the fixture
) -> None:
    origin.forge.actions_may_open_pulls = False
    result = start(origin, origin.clone("job1"), _worker(), stop={"max_iterations": 1})
    assert result.versions == (0, 1)
    assert result.pull_request is None
    assert result.refused is not None
    assert result.refused.compare_url.endswith(f"/compare/feature...{result.branch}?expand=1")
    assert origin.ref(f"refs/heads/{result.branch}")  # pushed all the same
    assert len(origin.forge.calls_to("open_pull_request")) == 1  # asked once, not per version


def test_an_evolve_run_where_drafts_are_refused_opens_a_plain_one(
    origin: Origin,  # noqa: F811 - the fixture
) -> None:
    origin.forge.drafts_supported = False
    result = start(origin, origin.clone("job1"), _worker(), stop={"max_iterations": 1})
    assert result.pull_request is not None
    [pull] = origin.forge.pulls.values()
    assert pull.draft is False


def _worker() -> Worker:
    return Worker("worker", [calc(30)])


def test_the_reply_to_a_refused_publish_links_the_branch_and_names_the_setting() -> None:
    refused = BranchOnly("https://github.com/o/r/compare/main...freemad/task/t?expand=1", "why")
    text = render_reply("branch_only", login="ada", url=refused.html_url, reason=refused.reason)
    assert text.startswith("@ada why. Open the pull request yourself: https://github.com/o/r/")
