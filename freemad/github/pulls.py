"""Opening a pull request as GitHub really answers: refused to a job's token unless a repository
setting allows it, drafts refused in some repositories. The branch is pushed either way, so a
refusal becomes a compare link and the exact setting to change, never a lost piece of work."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from freemad.github.forge import Forge, ForgeError, PullRequestRef

# GitHub's own words (REST API, POST /repos/{owner}/{repo}/pulls).
ACTIONS_MAY_NOT_CREATE = "GitHub Actions is not permitted to create or approve pull requests"
DRAFTS_NOT_SUPPORTED = "Draft pull requests are not supported"
SETTING = (
    'Settings → Actions → General → Workflow permissions → "Allow GitHub Actions to create and '
    "approve pull requests\" (an organisation's own Actions settings can hold it off for all its "
    "repositories)"
)


@dataclass(frozen=True)
class BranchOnly:
    """The branch is pushed but GitHub refused the pull request: where to open it by hand."""

    compare_url: str
    reason: str

    @property
    def html_url(self) -> str:
        return self.compare_url


def compare_url(web_url: str, repo: str, base: str, head: str) -> str:
    """GitHub's page that opens a pull request from `head` into `base`."""
    return f"{web_url.rstrip('/')}/{repo}/compare/{quote(base)}...{quote(head)}?expand=1"


def web_url_of(api_url: str) -> str:
    """github.com's web address for its API's, or a server's (`https://HOST/api/v3`)."""
    api = api_url.rstrip("/")
    if api in ("https://api.github.com", "http://api.github.com"):
        return "https://github.com"
    return api.removesuffix("/api/v3")


def open_or_explain(
    forge: Forge,
    repo: str,
    *,
    head: str,
    base: str,
    title: str,
    body: str,
    draft: bool,
    web_url: str,
) -> PullRequestRef | BranchOnly:
    """Open the pull request; as a plain one where drafts are refused; or, where GitHub Actions
    may not open pull requests, say so with the setting and a link that opens it by hand."""
    try:
        return forge.open_pull_request(
            repo, head=head, base=base, title=title, body=body, draft=draft
        )
    except ForgeError as exc:
        said = str(exc).lower()
        if draft and exc.status == 422 and DRAFTS_NOT_SUPPORTED.lower() in said:
            return open_or_explain(
                forge,
                repo,
                head=head,
                base=base,
                title=title,
                body=body,
                draft=False,
                web_url=web_url,
            )
        if exc.status == 403 and ACTIONS_MAY_NOT_CREATE.lower() in said:
            reason = (
                f"GitHub Actions may not open pull requests in {repo}; the branch {head} is "
                f"pushed. To let FREE-MAD open them, turn on {SETTING}"
            )
            return BranchOnly(compare_url(web_url, repo, base, head), reason)
        raise
