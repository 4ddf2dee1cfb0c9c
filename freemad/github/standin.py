"""A loopback stand-in for the part of GitHub's REST API that FREE-MAD uses, with fault injection.

`with StandIn() as api:` serves on 127.0.0.1 until the block ends; point a `PyGithubForge` at
`api.base_url`. It keeps comments, reactions, pull requests, dispatches and permissions in memory,
answers in GitHub's JSON shapes with rate-limit headers, and records every request in `calls`
(Authorization left out). `freemad github simulate` shows with it what would be posted, offline.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from freemad.github import standin_shapes as shapes
from freemad.github.forge import REACTIONS
from freemad.github.standin_comments import CommentEndpoints, public, too_long
from freemad.github.standin_conversation import ConversationEndpoints
from freemad.github.standin_replies import (
    NOT_FOUND,
    Reply,
    default_error_body,
    dispatch_refused,
    error_body,
    invalid,
    workflow_triggers,
)
from freemad.github.standin_reviews import ReviewEndpoints
from freemad.github.standin_server import LoopbackServer

ROLE_PERMISSION = {"maintain": "write", "triage": "read"}  # the `permission` a role reports
RATE_HEADERS = ("Limit", "Remaining", "Reset", "Used", "Resource")
Query = Mapping[str, str]


@dataclass(frozen=True)
class StandInCall:
    """One exchange as the stand-in saw it: `path` is below the prefix, without the query;
    `reply` is the JSON answered (None for no body), `injected` when a test's `fail_next` gave it."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: dict[str, str]
    status: int
    reply: Any = None
    reply_headers: dict[str, str] = field(default_factory=dict)
    injected: bool = False


@dataclass
class _Fault:
    status: int
    headers: dict[str, str]
    body: Any
    times: int
    method: str | None
    path: str | None
    done: bool = False  # the request is carried out, and then answered with `status`


class StandIn(CommentEndpoints, ReviewEndpoints, ConversationEndpoints):
    """The stand-in server. `prefix` ("/api/v3") mimics GitHub Enterprise Server's base path."""

    def __init__(
        self,
        *,
        prefix: str = "",
        permissions: Mapping[str, str] | None = None,
        token: str | None = None,
        login: str = "freemad-bot",
    ) -> None:
        self.prefix = prefix.rstrip("/")
        self.permissions = dict(permissions or {})
        self.token, self.login = token, login
        self.calls: list[StandInCall] = []
        self.comments: dict[int, dict[str, Any]] = {}
        # Comments on pull requests' diffs, with their reactions: kept apart from issue comments,
        # as GitHub keeps them (an issue comment's address or reactions never find one).
        self.review_comments: dict[int, dict[str, Any]] = {}
        self.reactions: list[dict[str, Any]] = []
        self.pulls: dict[tuple[str, int], dict[str, Any]] = {}
        self.issues: dict[tuple[str, int], dict[str, Any]] = {}
        self.dispatches: list[dict[str, Any]] = []
        self.rate_remaining = 5000
        # The repository settings GitHub checks when a job's token opens a pull request: "Allow
        # GitHub Actions to create and approve pull requests" (off by default), and drafts (not
        # on every plan for private repositories).
        self.actions_may_open_pulls = True
        self.drafts_supported = True
        self.pages: dict[str, str] = {}  # repo -> its Pages site's address (GET .../pages)
        # (repo, workflow file) -> the workflow's triggers (its `on:`), as add_workflow read them
        self.workflows: dict[tuple[str, str], dict[str, Any]] = {}
        self._faults: list[_Fault] = []
        self._init_reviews()
        self._init_conversation()
        self._numbers: dict[str, int] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server: LoopbackServer | None = None

    # -- life cycle -------------------------------------------------------------------------
    @property
    def origin(self) -> str:
        if self._server is None:
            raise RuntimeError("the stand-in is not running: use `with StandIn() as api:`")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def base_url(self) -> str:
        return self.origin + self.prefix

    def start(self) -> StandIn:
        self._server = LoopbackServer(self)
        fast = {"poll_interval": 0.05}  # so that `stop()` returns at once
        threading.Thread(target=self._server.serve_forever, kwargs=fast, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()  # returns once the serving loop has ended
            self._server.server_close()
        self._server = None

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def fail_next(
        self,
        status: int,
        headers: Mapping[str, str] | None = None,
        *,
        times: int = 1,
        body: Any = None,
        method: str | None = None,
        path: str | None = None,
        done: bool = False,
    ) -> None:
        """Answer the next `times` requests (matching `method`/`path` if given) with `status`;
        with `done`, after carrying each out, as GitHub sometimes creates a comment and still
        answers 502."""
        framing = ("content-length", "connection", "transfer-encoding")  # the server's own
        headers = {k: str(v) for k, v in (headers or {}).items() if k.lower() not in framing}
        reply = body if body is not None else default_error_body(status, headers)
        with self._lock:
            self._faults.append(_Fault(status, headers, reply, times, method, path, done))

    def calls_to(self, method: str, path: str) -> list[StandInCall]:
        return [c for c in self.calls if c.method == method and c.path == path]

    def api_url(self, path: str) -> str:
        return self.base_url + path

    @property
    def site(self) -> shapes.Site:
        return shapes.Site(api=self.base_url, web=self.origin)

    def user(self, login: str) -> dict[str, Any]:
        return shapes.user(self.site, login)

    def repository(self, repo: str) -> dict[str, Any]:
        return shapes.repository(self.site, repo)

    # -- endpoints, called under the lock: (method, repo, path argument, body, query) -------
    def _get_repo(self, method: str, repo: str, _: str, body: Any, query: Query) -> Reply:
        return 200, self.repository(repo)

    def _permission(self, method: str, repo: str, login: str, body: Any, query: Query) -> Reply:
        login = unquote(login)
        role = self.permissions.get(f"{repo}:{login}", self.permissions.get(login))
        if role is None:
            return NOT_FOUND
        permission = ROLE_PERMISSION.get(role, role)
        return 200, shapes.permission(self.site, login, permission=permission, role=role)

    def add_pull(
        self,
        repo: str,
        number: int,
        *,
        head_ref: str,
        head_sha: str,
        base_ref: str,
        head_repo: str,
        state: str = "open",
    ) -> None:
        """Seed a pull request someone else opened (the one a webhook payload is about)."""
        head_owner = head_repo.split("/", 1)[0] if head_repo else "ghost"
        head = shapes.pull_end(self.site, head_repo or None, f"{head_owner}:{head_ref}", head_sha)
        base = shapes.pull_end(self.site, repo, f"{repo.split('/', 1)[0]}:{base_ref}")
        pull = shapes.pull(
            self.site,
            repo,
            number,
            next(self._ids),
            title=f"#{number}",
            body="",
            head=head,
            base=base,
            author=head_owner,
        )
        self.pulls[(repo, number)] = {**pull, "repo": repo, "state": state}

    def seed(self, payload: Mapping[str, Any]) -> None:
        """Seed what a webhook payload is about and GitHub already has: its issue or pull request,
        and the comment of an issue_comment or a pull_request_review_comment. A malformed payload
        seeds nothing."""
        try:
            repo = str(payload["repository"]["full_name"])
            issue, pull, comment = (payload.get(k) for k in ("issue", "pull_request", "comment"))
            if isinstance(issue, Mapping) and (repo, int(issue["number"])) not in self.issues:
                number = int(issue["number"])
                self.add_issue(repo, number, str(issue.get("title", "")), issue.get("body") or "")
            if isinstance(pull, Mapping) and (repo, int(pull["number"])) not in self.pulls:
                head, base = pull["head"], pull["base"]
                head_repo = (head.get("repo") or {}).get("full_name") or ""
                number = int(pull["number"])
                self.add_pull(
                    repo,
                    number,
                    head_ref=str(head["ref"]),
                    head_sha=str(head["sha"]),
                    base_ref=str(base["ref"]),
                    head_repo=str(head_repo),
                    state=str(pull.get("state") or "open"),
                )
            if isinstance(comment, Mapping) and isinstance(issue, Mapping):
                number, cid = int(issue["number"]), int(comment["id"])
                self.add_comment(repo, number, str(comment["body"]), cid)
            elif isinstance(comment, Mapping) and isinstance(pull, Mapping):
                number, cid = int(pull["number"]), int(comment["id"])
                self.add_review_comment(repo, number, str(comment["body"]), cid)
        except (KeyError, TypeError, ValueError, AttributeError):
            return

    def add_issue(self, repo: str, number: int, title: str, body: str) -> None:
        """Seed an issue someone opened (the one a dispatched job reads back)."""
        ident = next(self._ids)
        issue = shapes.issue(
            self.site, repo, number, ident, title=title, body=body, author="octocat"
        )
        self.issues[(repo, number)] = {**issue, "repo": repo}

    def _exists(self, repo: str, number: int) -> bool:
        return (repo, number) in self.issues or (repo, number) in self.pulls

    def _issue(self, method: str, repo: str, number: str, body: Any, query: Query) -> Reply:
        """GET .../issues/N; a pull request's, as GitHub lists it, carries `pull_request`."""
        issue = self.issues.get((repo, int(number)))
        if issue is None:
            return NOT_FOUND
        found = public(issue)
        if (repo, int(number)) in self.pulls:
            web = f"{self.origin}/{repo}/pull/{number}"
            found["pull_request"] = {
                "url": self.api_url(f"/repos/{repo}/pulls/{number}"),
                "html_url": web,
                "diff_url": f"{web}.diff",
                "patch_url": f"{web}.patch",
                "merged_at": None,
            }
        return 200, found

    def _react(self, method: str, repo: str, cid: str, body: Any, query: Query) -> Reply:
        """A reaction on an issue comment (kept in `reactions`, with its comment's address)."""
        exists = self.comments.get(int(cid), {}).get("repo") == repo
        return self._reaction(body, exists, self.reactions, {"repo": repo, "comment_id": int(cid)})

    def _reaction(
        self, body: Any, exists: bool, kept: list[dict[str, Any]], key: dict[str, Any]
    ) -> Reply:
        """A reaction on a comment that `exists`: 201, or 200 with the same reaction for a repeat
        (GitHub's answer); `kept` holds the reactions, each with `key`'s fields."""
        content = body.get("content") if isinstance(body, dict) else None
        if content not in REACTIONS:
            return invalid("Reaction", "invalid", "content")
        if not exists:
            return NOT_FOUND
        for reaction in kept:
            if reaction["content"] == content and all(reaction[k] == v for k, v in key.items()):
                return 200, public(reaction)
        reaction = shapes.reaction(self.site, next(self._ids), content=content, author=self.login)
        kept.append({**reaction, **key})
        return 201, reaction

    def _list_pulls(self, method: str, repo: str, _: str, body: Any, query: Query) -> Reply:
        state = query.get("state", "open")
        wanted = (repo, None if state == "all" else state, query.get("head"), query.get("base"))
        found = []
        for (where, _number), pull in sorted(self.pulls.items()):
            have = (where, pull["state"], pull["head"]["label"], pull["base"]["ref"])
            if all(want in (None, value) for want, value in zip(wanted, have, strict=True)):
                found.append(public(pull))
        return 200, found

    def _open_pull(self, method: str, repo: str, _: str, body: Any, query: Query) -> Reply:
        data = body if isinstance(body, dict) else {}
        for name in ("head", "base", "title"):
            if not isinstance(data.get(name), str):
                return invalid("PullRequest", "missing_field", name)
        refused = too_long("PullRequest", data.get("body"))
        if refused is not None:
            return refused
        if not self.actions_may_open_pulls:
            return 403, {
                **error_body("GitHub Actions is not permitted to create or approve pull requests."),
                "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
            }
        if data.get("draft") and not self.drafts_supported:
            message = "Draft pull requests are not supported in this repository."
            return invalid("PullRequest", "custom", "draft", message)
        owner = repo.split("/", 1)[0]
        label = data["head"] if ":" in data["head"] else f"{owner}:{data['head']}"
        open_ones = self._list_pulls("GET", repo, "", None, {"head": label, "base": data["base"]})
        if open_ones[1]:
            message = f"A pull request already exists for {label}."
            return invalid("PullRequest", "custom", "head", message)
        number = self._numbers[repo] = self._numbers.get(repo, 0) + 1
        pull = shapes.pull(
            self.site,
            repo,
            number,
            next(self._ids),
            title=data["title"],
            body=data.get("body"),
            head=shapes.pull_end(self.site, repo, label),
            base=shapes.pull_end(self.site, repo, f"{owner}:{data['base']}"),
            author=self.login,
            draft=bool(data.get("draft")),
        )
        self.pulls[(repo, number)] = {**pull, "repo": repo}
        return 201, pull

    def _pull(self, method: str, repo: str, number: str, body: Any, query: Query) -> Reply:
        pull = self.pulls.get((repo, int(number)))
        if pull is None:
            return NOT_FOUND
        if method == "PATCH" and isinstance(body, dict):
            refused = too_long("PullRequest", body.get("body"))
            if refused is not None:
                return refused
            pull.update({k: body[k] for k in ("title", "body", "state") if k in body})
            pull["updated_at"] = shapes.now()
        return 200, public(pull)

    def _pages(self, method: str, repo: str, _: str, body: Any, query: Query) -> Reply:
        url = self.pages.get(repo)
        if url is None:
            return 404, {
                **error_body("Not Found"),
                "documentation_url": "https://docs.github.com/rest/pages/pages#get-a-apiname-pages-site",
            }
        return 200, shapes.pages_site(self.site, repo, url)

    def add_workflow(self, repo: str, name: str, text: str) -> None:
        """Seed a workflow file of the repository (its YAML), so a dispatch is checked as GitHub
        checks it: the file exists, has a `workflow_dispatch` trigger, and declares the inputs."""
        self.workflows[(repo, name)] = workflow_triggers(text)

    def _dispatch(self, method: str, repo: str, workflow: str, body: Any, query: Query) -> Reply:
        """A `workflow_dispatch`: 204 with no body, or 200 naming the run it started when asked
        (`return_run_details`). As GitHub Enterprise Server (a stand-in with a prefix), which has
        no such parameter yet (its 3.19 description answers 204 only), it is ignored."""
        if not isinstance(body, dict) or not isinstance(body.get("ref"), str):
            return invalid("WorkflowDispatch", "missing_field", "ref")
        inputs = body.get("inputs") or {}
        triggers = self.workflows.get((repo, unquote(workflow)))
        if triggers is None:
            return NOT_FOUND
        refused = dispatch_refused(triggers, inputs)
        if refused is not None:
            return refused
        dispatch = {"repo": repo, "workflow": unquote(workflow), "ref": body["ref"]}
        run_id = next(self._ids)
        self.dispatches.append({**dispatch, "inputs": inputs, "run_id": run_id})
        if body.get("return_run_details") is not True or self.prefix:
            return 204, None
        return 200, {
            "workflow_run_id": run_id,
            "run_url": self.api_url(f"/repos/{repo}/actions/runs/{run_id}"),
            "html_url": f"{self.origin}/{repo}/actions/runs/{run_id}",
        }

    ROUTES = (
        ("GET", r"", "_get_repo"),
        ("GET", r"/collaborators/([^/]+)/permission", "_permission"),
        ("POST", r"/issues/(\d+)/comments", "_post_comment"),
        ("GET", r"/issues/(\d+)/comments", "_list_comments"),
        ("GET PATCH", r"/issues/comments/(\d+)", "_comment"),
        ("POST", r"/issues/comments/(\d+)/reactions", "_react"),
        ("POST", r"/pulls/comments/(\d+)/reactions", "_react_review"),
        ("PATCH", r"/pulls/comments/(\d+)", "_review_comment"),
        ("GET", r"/pulls/(\d+)/comments", "_list_review_comments"),
        ("POST", r"/pulls/(\d+/comments/\d+)/replies", "_reply_in_thread"),
        ("POST", r"/check-runs", "_post_check_run"),
        ("GET PATCH", r"/check-runs/(\d+)", "_check_run"),
        ("GET", r"/commits/([^/]+)/check-runs", "_list_check_runs"),
        ("GET", r"/pulls", "_list_pulls"),
        ("POST", r"/pulls", "_open_pull"),
        ("GET PATCH", r"/pulls/(\d+)", "_pull"),
        ("GET", r"/pulls/(\d+)/files", "_pull_files"),
        ("POST", r"/pulls/(\d+)/reviews", "_post_review"),
        ("GET", r"/pulls/(\d+)/reviews", "_list_reviews"),
        ("GET", r"/issues/(\d+)", "_issue"),
        ("POST", r"/actions/workflows/([^/]+)/dispatches", "_dispatch"),
        ("GET", r"/pages", "_pages"),
    )

    def route(self, method: str, path: str, query: Query, body: Any) -> Reply:
        repo_path = re.fullmatch(r"/repos/([^/]+/[^/]+)(/.*)?", path)
        if repo_path is None:
            return NOT_FOUND
        repo, rest = repo_path.group(1), repo_path.group(2) or ""
        for methods, pattern, name in self.ROUTES:
            found = re.fullmatch(pattern, rest)
            if found and method in methods.split():
                handler: Callable[..., Reply] = getattr(self, name)
                return handler(method, repo, (found.groups() or ("",))[0], body, query)
        return NOT_FOUND

    def serve(
        self, method: str, target: str, headers: Mapping[str, str], raw: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        """One request in, (status, headers, body) out; recorded in `calls`."""
        split = urlsplit(target)
        query = dict(parse_qsl(split.query))
        kept = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        tokens = (f"token {self.token}", f"Bearer {self.token}")
        refused = self.token is not None and headers.get("Authorization") not in tokens
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        with self._lock:
            path = split.path
            extra: dict[str, str] = {}
            fault = None
            if self.prefix and not (path == self.prefix or path.startswith(self.prefix + "/")):
                status, reply = NOT_FOUND
            else:
                path = path[len(self.prefix) :]
                fault = self._take_fault(method, path)
                if fault is not None:
                    if fault.done and not refused and not isinstance(body, str):
                        self.route(method, path, query, body)  # done, whatever it answers
                        self.reply_headers = {}
                    status, reply, extra = fault.status, fault.body, fault.headers
                elif refused:
                    status, reply = 401, error_body("Bad credentials")
                elif isinstance(body, str):
                    status, reply = 400, error_body("Problems parsing JSON")
                else:
                    status, reply = self.route(method, path, query, body)
                    extra, self.reply_headers = self.reply_headers, {}
            self.rate_remaining = left = max(0, self.rate_remaining - 1)
            reset, used = int(time.time()) + 3600, 5000 - left
            values = ("5000", left, reset, used, "core")
            out = {f"X-RateLimit-{n}": str(v) for n, v in zip(RATE_HEADERS, values, strict=True)}
            out["X-GitHub-Media-Type"] = "github.v3; format=json"
            data = b"" if status == 204 else json.dumps(reply).encode()
            if status != 204:
                out["Content-Type"] = "application/json; charset=utf-8"
                out["Content-Length"] = str(len(data))
            out = {k: v for k, v in out.items() if k.lower() not in {e.lower() for e in extra}}
            out.update(extra)
            answered = None if status == 204 else reply
            self.calls.append(
                StandInCall(
                    method, path, query, body, kept, status, answered, out, fault is not None
                )
            )
        return status, out, data

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        for fault in self._faults:
            if fault.method in (None, method) and fault.path in (None, path):
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
                return fault
        return None
