"""GitHub's objects as its REST API sends them, whole, for the loopback stand-in.

Each function builds one object with every field GitHub's published description
(`@octokit/openapi`) requires of it: the addresses (`*_url`, with GitHub's URI templates), the
counters, the flags. The stand-in answers with these, and the contract tests hold every answer to
the description, so a client that reads a field GitHub always sends finds it here too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

ZERO_SHA = "0" * 40


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class Site:
    """Where the stand-in lives: `api` is the REST base URL, `web` the pages' origin."""

    api: str
    web: str


def user(site: Site, login: str) -> dict[str, Any]:
    """A `simple-user`; a login ending in `[bot]` is a Bot, as GitHub Apps' accounts are."""
    api = f"{site.api}/users/{login}"
    ident = sum(login.encode())
    return {
        "login": login,
        "id": ident,
        "node_id": f"U_{ident}",
        "avatar_url": f"{site.web}/avatars/u/{ident}",
        "gravatar_id": "",
        "url": api,
        "html_url": f"{site.web}/{login}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": "Bot" if login.endswith("[bot]") else "User",
        "site_admin": False,
    }


# A repository's addresses: (field, path below the repository's API URL).
_REPO_LINKS = (
    ("archive_url", "/{archive_format}{/ref}"),
    ("assignees_url", "/assignees{/user}"),
    ("blobs_url", "/git/blobs{/sha}"),
    ("branches_url", "/branches{/branch}"),
    ("collaborators_url", "/collaborators{/collaborator}"),
    ("comments_url", "/comments{/number}"),
    ("commits_url", "/commits{/sha}"),
    ("compare_url", "/compare/{base}...{head}"),
    ("contents_url", "/contents/{+path}"),
    ("contributors_url", "/contributors"),
    ("deployments_url", "/deployments"),
    ("downloads_url", "/downloads"),
    ("events_url", "/events"),
    ("forks_url", "/forks"),
    ("git_commits_url", "/git/commits{/sha}"),
    ("git_refs_url", "/git/refs{/sha}"),
    ("git_tags_url", "/git/tags{/sha}"),
    ("hooks_url", "/hooks"),
    ("issue_comment_url", "/issues/comments{/number}"),
    ("issue_events_url", "/issues/events{/number}"),
    ("issues_url", "/issues{/number}"),
    ("keys_url", "/keys{/key_id}"),
    ("labels_url", "/labels{/name}"),
    ("languages_url", "/languages"),
    ("merges_url", "/merges"),
    ("milestones_url", "/milestones{/number}"),
    ("notifications_url", "/notifications{?since,all,participating}"),
    ("pulls_url", "/pulls{/number}"),
    ("releases_url", "/releases{/id}"),
    ("stargazers_url", "/stargazers"),
    ("statuses_url", "/statuses/{sha}"),
    ("subscribers_url", "/subscribers"),
    ("subscription_url", "/subscription"),
    ("tags_url", "/tags"),
    ("teams_url", "/teams"),
    ("trees_url", "/git/trees{/sha}"),
)


def repository(site: Site, repo: str, *, default_branch: str = "main") -> dict[str, Any]:
    """A `full-repository` (which is also every field a `repository` needs): public, no forks."""
    owner, name = repo.split("/", 1)
    api, ident, stamp = f"{site.api}/repos/{repo}", sum(repo.encode()), now()
    web = f"{site.web}/{repo}"
    item: dict[str, Any] = {"id": ident, "node_id": f"R_{ident}", "name": name, "full_name": repo}
    item.update(owner=user(site, owner), private=False, visibility="public", url=api)
    item.update(html_url=web, description=None, fork=False, homepage=None, language=None)
    item.update({field: api + path for field, path in _REPO_LINKS})
    item.update(git_url=f"git:{web.split(':', 1)[-1]}.git", ssh_url=f"git@localhost:{repo}.git")
    item.update(clone_url=f"{web}.git", svn_url=web, mirror_url=None)
    counts = ("forks", "forks_count", "open_issues", "open_issues_count", "size")
    item.update(dict.fromkeys(counts, 0))
    more = ("stargazers_count", "watchers", "watchers_count", "network_count", "subscribers_count")
    item.update(dict.fromkeys(more, 0))
    item.update(default_branch=default_branch, archived=False, disabled=False, license=None)
    flags = ("has_issues", "has_projects", "has_wiki", "has_downloads")
    item.update(dict.fromkeys(flags, True), has_pages=False, has_discussions=False)
    item.update(pushed_at=stamp, created_at=stamp, updated_at=stamp)
    return item


def issue(
    site: Site, repo: str, number: int, ident: int, *, title: str, body: str, author: str
) -> dict[str, Any]:
    """An `issue`, open, no labels, no assignee, no milestone."""
    repo_api, stamp = f"{site.api}/repos/{repo}", now()
    api = f"{repo_api}/issues/{number}"
    item: dict[str, Any] = {"id": ident, "node_id": f"I_{ident}", "number": number, "url": api}
    item.update(repository_url=repo_api, labels_url=f"{api}/labels{{/name}}")
    item.update(comments_url=f"{api}/comments", events_url=f"{api}/events")
    item.update(html_url=f"{site.web}/{repo}/issues/{number}", title=title, body=body)
    item.update(state="open", locked=False, labels=[], assignee=None, assignees=[])
    item.update(milestone=None, comments=0, closed_at=None, created_at=stamp, updated_at=stamp)
    item.update(user=user(site, author), author_association="NONE")
    return item


def comment(
    site: Site, repo: str, number: int, ident: int, *, body: str, author: str, association: str
) -> dict[str, Any]:
    """An `issue-comment` on issue (or pull request) `number`."""
    stamp = now()
    return {
        "id": ident,
        "node_id": f"IC_{ident}",
        "url": f"{site.api}/repos/{repo}/issues/comments/{ident}",
        "html_url": f"{site.web}/{repo}/issues/{number}#issuecomment-{ident}",
        "issue_url": f"{site.api}/repos/{repo}/issues/{number}",
        "body": body,
        "user": user(site, author),
        "author_association": association,
        "created_at": stamp,
        "updated_at": stamp,
    }


def reaction(site: Site, ident: int, *, content: str, author: str) -> dict[str, Any]:
    return {
        "id": ident,
        "node_id": f"REA_{ident}",
        "user": user(site, author),
        "content": content,
        "created_at": now(),
    }


def pull_end(site: Site, repo: str | None, label: str, sha: str = ZERO_SHA) -> dict[str, Any]:
    """One end (`head` or `base`) of a pull request: `label` is "owner:branch"; `repo` is None
    for a head whose fork was deleted."""
    owner, ref = label.split(":", 1)
    found = repository(site, repo) if repo else None
    return {"label": label, "ref": ref, "sha": sha, "user": user(site, owner), "repo": found}


def pull(
    site: Site,
    repo: str,
    number: int,
    ident: int,
    *,
    title: str,
    body: str | None,
    head: dict[str, Any],
    base: dict[str, Any],
    author: str,
    draft: bool = False,
) -> dict[str, Any]:
    """A `pull-request`, open and unmerged, between `head` and `base` (from `pull_end`)."""
    repo_api, stamp = f"{site.api}/repos/{repo}", now()
    api, web = f"{repo_api}/pulls/{number}", f"{site.web}/{repo}/pull/{number}"
    issue_api = f"{repo_api}/issues/{number}"
    item: dict[str, Any] = {"id": ident, "node_id": f"PR_{ident}", "number": number, "url": api}
    item.update(html_url=web, diff_url=f"{web}.diff", patch_url=f"{web}.patch")
    item.update(issue_url=issue_api, commits_url=f"{api}/commits")
    item.update(review_comments_url=f"{api}/comments", comments_url=f"{issue_api}/comments")
    item.update(review_comment_url=f"{repo_api}/pulls/comments{{/number}}")
    item.update(statuses_url=f"{repo_api}/statuses/{head['sha']}")
    item.update(state="open", locked=False, title=title, body=body, draft=draft)
    item.update(user=user(site, author), author_association="NONE", labels=[])
    item.update(assignee=None, assignees=[], milestone=None, auto_merge=None)
    item.update(created_at=stamp, updated_at=stamp, closed_at=None, merged_at=None)
    item.update(merge_commit_sha=None, merged=False, mergeable=None, mergeable_state="unknown")
    item.update(merged_by=None, maintainer_can_modify=False, head=head, base=base)
    counts = ("comments", "review_comments", "commits", "additions", "deletions")
    item.update(dict.fromkeys(counts, 0), changed_files=0)
    links = {
        "self": api,
        "html": web,
        "issue": issue_api,
        "comments": f"{issue_api}/comments",
        "review_comments": f"{api}/comments",
        "review_comment": f"{repo_api}/pulls/comments{{/number}}",
        "commits": f"{api}/commits",
        "statuses": item["statuses_url"],
    }
    item["_links"] = {name: {"href": href} for name, href in links.items()}
    return item


def pages_site(site: Site, repo: str, html_url: str) -> dict[str, Any]:
    """A `page`: a Pages site built by a workflow, at `html_url`."""
    return {
        "url": f"{site.api}/repos/{repo}/pages",
        "status": "built",
        "cname": None,
        "custom_404": False,
        "html_url": html_url,
        "build_type": "workflow",
        "source": {"branch": "main", "path": "/"},
        "public": True,
        "https_enforced": True,
    }


def permission(site: Site, login: str, *, permission: str, role: str) -> dict[str, Any]:
    """A `repository-collaborator-permission`: `permission` is the legacy one, `role` the role."""
    return {
        "permission": permission,
        "role_name": role,
        "user": {**user(site, login), "role_name": role},
    }


def diff_entry(site: Site, repo: str, head_sha: str, path: str, sha: str) -> dict[str, Any]:
    """A `diff-entry`: one file a pull request changes (status and counts set by the caller)."""
    web = f"{site.web}/{repo}"
    return {
        "sha": sha,
        "filename": path,
        "status": "modified",
        "additions": 0,
        "deletions": 0,
        "changes": 0,
        "blob_url": f"{web}/blob/{head_sha}/{path}",
        "raw_url": f"{web}/raw/{head_sha}/{path}",
        "contents_url": f"{site.api}/repos/{repo}/contents/{path}?ref={head_sha}",
    }


def review(
    site: Site,
    repo: str,
    number: int,
    ident: int,
    *,
    body: str,
    state: str,
    commit_id: str,
    author: str,
) -> dict[str, Any]:
    """A `pull-request-review`, submitted now."""
    web = f"{site.web}/{repo}/pull/{number}"
    api = f"{site.api}/repos/{repo}/pulls/{number}"
    return {
        "id": ident,
        "node_id": f"PRR_{ident}",
        "user": user(site, author),
        "body": body,
        "state": state,
        "html_url": f"{web}#pullrequestreview-{ident}",
        "pull_request_url": api,
        "_links": {
            "html": {"href": f"{web}#pullrequestreview-{ident}"},
            "pull_request": {"href": api},
        },
        "submitted_at": now(),
        "commit_id": commit_id,
        "author_association": "NONE",
    }


def check_run(site: Site, repo: str, ident: int, *, name: str, head_sha: str) -> dict[str, Any]:
    """A `check-run`, queued now by FREE-MAD's token (a GitHub App's, or the Actions app's)."""
    api = f"{site.api}/repos/{repo}/check-runs/{ident}"
    return {
        "id": ident,
        "node_id": f"CR_{ident}",
        "head_sha": head_sha,
        "name": name,
        "external_id": "",
        "url": api,
        "html_url": f"{site.web}/{repo}/runs/{ident}",
        "details_url": None,
        "status": "queued",
        "conclusion": None,
        "started_at": now(),
        "completed_at": None,
        "output": {
            "title": None,
            "summary": None,
            "text": None,
            "annotations_count": 0,
            "annotations_url": f"{api}/annotations",
        },
        "check_suite": {"id": ident + 1},
        "app": None,
        "pull_requests": [],
    }


def review_comment(
    site: Site,
    repo: str,
    number: int,
    ident: int,
    *,
    body: str,
    author: str,
    commit_id: str,
    path: str,
    in_reply_to: int | None = None,
) -> dict[str, Any]:
    """A `pull-request-review-comment` on pull request `number`'s diff (a reply in a thread when
    `in_reply_to` names the thread's first comment)."""
    api, web = f"{site.api}/repos/{repo}/pulls", f"{site.web}/{repo}/pull/{number}"
    stamp = now()
    found: dict[str, Any] = {
        "url": f"{api}/comments/{ident}",
        "id": ident,
        "node_id": f"PRRC_{ident}",
        "pull_request_review_id": ident + 1,
        "diff_hunk": "@@ -1 +1 @@",
        "path": path,
        "commit_id": commit_id,
        "original_commit_id": commit_id,
        "user": user(site, author),
        "body": body,
        "created_at": stamp,
        "updated_at": stamp,
        "html_url": f"{web}#discussion_r{ident}",
        "pull_request_url": f"{api}/{number}",
        "author_association": "NONE",
        "_links": {
            "self": {"href": f"{api}/comments/{ident}"},
            "html": {"href": f"{web}#discussion_r{ident}"},
            "pull_request": {"href": f"{api}/{number}"},
        },
    }
    if in_reply_to is not None:
        found["in_reply_to_id"] = in_reply_to
    return found
