"""`freemad github action`: the Action's entry point, and `freemad github simulate` on a laptop.

The Action reads the runner's standard variables (`GITHUB_EVENT_NAME`, `GITHUB_EVENT_PATH`,
`GITHUB_REPOSITORY`, `GITHUB_WORKSPACE`, `GITHUB_API_URL`, `GITHUB_OUTPUT`,
`GITHUB_STEP_SUMMARY`; `GITHUB_SERVER_URL`, `GITHUB_RUN_ID` and `GITHUB_RUN_ATTEMPT` for links
to the job) and its inputs (`INPUT_CONFIG`, `INPUT_GITHUB_TOKEN`, `INPUT_MODE`,
`INPUT_ROUNDS`, `INPUT_REQUIREMENT`, `INPUT_DRY_RUN`, `INPUT_REVIEW_PULL_REQUESTS`; the hyphenated
spellings work too). Runs
live in a store rebuilt from the repository's state branch before the event is handled and saved
back to it afterwards, so the next job (a `/freemad answer` a week later) continues them.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from freemad.config.models import FreemadConfig
from freemad.errors import FreemadError, UsageError
from freemad.github import workflow_io as io
from freemad.github.forge import Forge, PullRequestDetails, RecordingForge
from freemad.github.pages import PagesSite
from freemad.github.pulls import web_url_of
from freemad.github.router import Router
from freemad.github.thread import Outcome, Settings
from freemad.wiring import ADAPTERS, open_store

MODES = ("auto", "debate", "plan", "code", "evolve", "review")


@dataclass(frozen=True)
class Inputs:
    config: str
    token: str
    mode: str
    rounds: int | None
    requirement: str
    dry_run: bool
    review_pull_requests: bool = False


def read_inputs(environ: Mapping[str, str]) -> Inputs:
    def value(name: str, default: str = "") -> str:
        for key in (f"INPUT_{name.upper()}", f"INPUT_{name.upper().replace('-', '_')}"):
            if environ.get(key, "").strip():
                return environ[key].strip()
        return default

    mode = value("mode", "auto").lower()
    if mode not in MODES:
        raise UsageError(f"input mode is {mode!r}; use one of {', '.join(MODES)}")
    rounds_text = value("rounds")
    try:
        rounds = int(rounds_text) if rounds_text else None
    except ValueError:
        raise UsageError(f"input rounds is {rounds_text!r}; use a whole number") from None
    return Inputs(
        config=value("config"),
        token=value("github-token") or environ.get("GITHUB_TOKEN", ""),
        mode=mode,
        rounds=rounds,
        requirement=value("requirement"),
        dry_run=value("dry-run", "false").lower() in ("1", "true", "yes"),
        review_pull_requests=value("review-pull-requests", "false").lower() in ("1", "true", "yes"),
    )


def run_action(
    environ: Mapping[str, str], *, forge: Forge | None = None, out: TextIO | None = None
) -> int:
    """Handle the workflow's event; the process's exit status."""
    try:
        inputs = read_inputs(environ)
        if inputs.token:
            io.mask(inputs.token, out)
        event_name = _need(environ, "GITHUB_EVENT_NAME")
        payload = Path(_need(environ, "GITHUB_EVENT_PATH")).read_bytes()
        workspace = Path(environ.get("GITHUB_WORKSPACE") or ".").resolve()
        exclude_action_checkout(workspace, environ.get("GITHUB_ACTION_PATH", ""))
        config = _config(inputs, workspace)
        if forge is None:
            forge = _forge(inputs, environ)
        with _state(workspace, config, enabled=not inputs.dry_run) as (store, save):
            began = time.time()
            settings = _settings(config, environ, workspace, forge)
            settings.review_pull_requests = inputs.review_pull_requests
            router = Router(config, forge, store, settings, adapters=ADAPTERS)
            outcome = _handle(router, event_name, payload, inputs)
            save([r.run_id for r in store.runs() if r.updated_at >= began])
    except (FreemadError, OSError) as exc:
        message = exc.one_line() if isinstance(exc, FreemadError) else str(exc)
        io.error(f"{message}. {_fix(message)}", out=out)
        return 1
    _report(outcome, environ, forge if inputs.dry_run else None, out)
    return 0


def exclude_action_checkout(workspace: Path, action_path: str) -> None:
    """Have git ignore this action's own checkout when it lies in the workspace.

    A workflow runs a local action (`uses: ./.freemad-action`, as freemad.yml does) from a
    checkout inside the workspace, which git would list as untracked: an evolve run would then
    refuse to start on "uncommitted changes", and a code task would see a folder it did not
    make. The checkout is named in the clone's own `.git/info/exclude` (never a tracked file), once.
    """
    if not action_path or not (workspace / ".git").is_dir():
        return
    try:
        relative = Path(action_path).resolve().relative_to(workspace)
    except ValueError:
        return  # elsewhere on the runner (a published action): nothing to hide
    if relative == Path("."):
        return
    pattern = "/" + "".join("\\" + c if c in "*?[]\\!# " else c for c in relative.as_posix())
    exclude = workspace / ".git" / "info" / "exclude"
    before = exclude.read_text(encoding="utf-8") if exclude.is_file() else ""
    if f"{pattern}/" in before.splitlines():
        return
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("a", encoding="utf-8") as out:
        out.write(("\n" if before and not before.endswith("\n") else "") + f"{pattern}/\n")


def _handle(router: Router, event_name: str, payload: bytes, inputs: Inputs) -> Outcome:
    if event_name == "workflow_dispatch" or (inputs.requirement and inputs.mode != "auto"):
        data = json.loads(payload or b"{}")
        dispatched = data.get("inputs") or {}
        mode = dispatched.get("mode") or inputs.mode
        requirement = dispatched.get("requirement") or inputs.requirement
        issue = str(dispatched.get("issue") or "").strip()
        if issue:
            return router.handle(*_dispatched_comment(router, data, issue))
        if mode in ("auto", "debate") and requirement:
            return router.debate_on(requirement, inputs.rounds)
        return Outcome("ignored", "workflow_dispatch needs a requirement to debate, or an issue")
    return router.handle(event_name, payload)


def _dispatched_comment(
    router: Router, data: dict[str, Any], issue: str
) -> tuple[str, dict[str, Any]]:
    """A dispatch from the webhook bot (FREEMAD_EXECUTOR=actions) as the comment it stands for:
    the event's name and payload.

    The inputs name the issue, the person who asked (`sender`), the mode and the command text.
    For a command on a pull request's diff they also name that comment (`review-comment`). The
    job reads the issue back and routes a comment by that person. So the permission check, and
    everything after it, are the same as for a comment the job received itself; that includes
    the answer in the review thread.
    """
    inputs = data.get("inputs") or {}
    repository = data.get("repository") or {}
    repo = str(repository.get("full_name", ""))
    if not issue.isdigit() or not repo:
        raise UsageError(f"workflow_dispatch input issue is {issue!r}; expected an issue number")
    review = str(inputs.get("review-comment") or "").strip()
    if review and not review.isdigit():
        raise UsageError(f"workflow_dispatch input review-comment is {review!r}; expected an id")
    found = router.forge.issue(repo, int(issue))
    mode = str(inputs.get("mode") or "auto")
    text = str(inputs.get("requirement") or "")
    body = text if mode == "auto" else f"/freemad {mode} {text}".rstrip()
    sender = str(inputs.get("sender") or "")
    if not sender:
        raise UsageError("workflow_dispatch from the bot needs the sender input (who asked)")
    person = {"login": sender, "id": 0, "type": "User"}
    comment = {"id": int(review or 0), "body": body, "user": person, "html_url": found.html_url}
    if review and found.is_pull_request:
        pull = router.forge.pull_request(repo, found.number)
        return "pull_request_review_comment", {
            "action": "created",
            "comment": comment,
            "pull_request": {
                "number": found.number,
                "title": found.title,
                "body": found.body,
                "head": {
                    "ref": pull.head_ref,
                    "sha": pull.head_sha,
                    "repo": _head(pull, repository),
                },
                "base": {"ref": pull.base_ref, "sha": ""},
                "html_url": found.html_url,
                "state": pull.state,
            },
            "repository": repository,
            "sender": person,
        }
    issue_data: dict[str, Any] = {
        "number": found.number,
        "title": found.title,
        "body": found.body,
        "user": person,
        "labels": [],
        "state": "open",
        "html_url": found.html_url,
    }
    if found.is_pull_request:
        issue_data["pull_request"] = {"url": found.html_url, "html_url": found.html_url}
    return "issue_comment", {
        "action": "created",
        "issue": issue_data,
        "comment": comment,
        "repository": repository,
        "sender": person,
    }


def _head(pull: PullRequestDetails, repository: dict[str, Any]) -> dict[str, Any] | None:
    """The repository a pull request's head is in, as a payload names it: this one, a fork (only
    its name is read), or None when the fork was deleted."""
    if pull.head_repo == repository.get("full_name"):
        return repository
    if not pull.head_repo:
        return None
    name = pull.head_repo.rpartition("/")[2]
    web = str(repository.get("html_url", "")).rsplit("/", 2)[0] or "https://github.com"
    return {
        "id": 0,
        "name": name,
        "full_name": pull.head_repo,
        "default_branch": pull.head_ref,
        "private": False,
        "html_url": f"{web}/{pull.head_repo}",
        "clone_url": f"{web}/{pull.head_repo}.git",
    }


def _report(
    outcome: Outcome, environ: Mapping[str, str], dry: Forge | None, out: TextIO | None
) -> None:
    io.set_outputs(
        environ.get("GITHUB_OUTPUT"),
        {
            "run-id": outcome.run_id or "",
            "status": outcome.status or outcome.action,
            "final-answer": outcome.final_answer or "",
            "comment-url": outcome.comment_url or "",
        },
    )
    if outcome.action == "ignored":
        io.notice(f"nothing to do: {outcome.reason}", out=out)
        return
    summary = outcome.summary or f"FREE-MAD: {outcome.action} {outcome.reason}".strip()
    io.add_summary(environ.get("GITHUB_STEP_SUMMARY"), summary)
    if isinstance(dry, RecordingForge):
        for call in dry.calls:
            print(f"dry run: would {call.method} {json.dumps(call.args)[:2000]}", file=out)


@contextmanager
def _state(workspace: Path, config: FreemadConfig, *, enabled: bool) -> Iterator[Any]:
    """A store rebuilt from the state branch, and a function saving runs back to it."""
    from freemad.github.state_branch import StateBranch

    with (
        tempfile.TemporaryDirectory(prefix="freemad-action-") as folder,
        open_store(Path(folder) / "runs.db") as store,
    ):
        branch = None
        if enabled and (workspace / ".git").exists():
            branch = StateBranch(workspace, branch=config.github.state_branch)
            branch.pull()
            branch.load(store)

        def save(run_ids: list[str]) -> None:
            if branch is not None and run_ids:
                branch.save(store, run_ids)

        yield store, save


def _config(inputs: Inputs, workspace: Path) -> FreemadConfig:
    from freemad.config import default_config, load_config

    if not inputs.config:
        return default_config()
    path = Path(inputs.config)
    return load_config(path if path.is_absolute() else workspace / path)


def _forge(inputs: Inputs, environ: Mapping[str, str]) -> Forge:
    if inputs.dry_run:
        return RecordingForge(permissions={_sender(environ): "write"} if _sender(environ) else {})
    if not inputs.token:
        raise UsageError("no GitHub token: pass github-token (usually ${{ secrets.GITHUB_TOKEN }})")
    from freemad.github.pygithub_forge import PyGithubForge

    return PyGithubForge(
        inputs.token, base_url=environ.get("GITHUB_API_URL") or "https://api.github.com"
    )


def _settings(
    config: FreemadConfig, environ: Mapping[str, str], workspace: Path, forge: Forge | None = None
) -> Settings:
    github = config.github
    repo = environ.get("GITHUB_REPOSITORY", "")
    configured = github.pages_url or environ.get("FREEMAD_PAGES_URL", "")
    # The site as configured, else as GitHub's Pages API reports it (a custom domain, a user
    # site): never a guessed address, which is a dead link on a repository without Pages.
    site = PagesSite(
        configured, lambda: forge.pages_url(repo) if forge is not None and "/" in repo else None
    )
    web_url = environ.get("GITHUB_SERVER_URL") or web_url_of(
        environ.get("GITHUB_API_URL") or "https://api.github.com"
    )
    return Settings(
        self_login=github.self_login or "github-actions[bot]",
        allowed_bots=tuple(github.allowed_bots),
        run_url=site.run_url,
        pages_note=site.note,
        workspace=workspace,
        web_url=web_url,
        job_url=actions_run_url(environ, web_url),
    )


def actions_run_url(environ: Mapping[str, str], web_url: str) -> str | None:
    """The address of the Actions run this job belongs to (the attempt, when the runner says
    which), from the runner's `GITHUB_RUN_ID`, `GITHUB_RUN_ATTEMPT` and `GITHUB_REPOSITORY`;
    None outside a runner."""
    run_id = environ.get("GITHUB_RUN_ID", "").strip()
    repo = environ.get("GITHUB_REPOSITORY", "").strip()
    if not run_id.isdigit() or "/" not in repo:
        return None
    url = f"{web_url.rstrip('/')}/{repo}/actions/runs/{run_id}"
    attempt = environ.get("GITHUB_RUN_ATTEMPT", "").strip()
    return f"{url}/attempts/{attempt}" if attempt.isdigit() else url


def _sender(environ: Mapping[str, str]) -> str:
    try:
        data = json.loads(Path(environ["GITHUB_EVENT_PATH"]).read_bytes())
        return str(data.get("sender", {}).get("login", ""))
    except (KeyError, OSError, ValueError, AttributeError):
        return ""


def _need(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "")
    if not value:
        raise UsageError(
            f"{name} is not set: `freemad github action` runs inside a GitHub Actions job"
        )
    return value


def _fix(message: str) -> str:
    """The fix to print beside a failure's cause, as an annotation says both."""
    if "token" in message.lower() or "401" in message:
        return "Fix: pass github-token: ${{ secrets.GITHUB_TOKEN }} and give the job the permissions docs/github.md lists."
    if "config" in message.lower() or "line " in message:
        return "Fix: correct the config file named by the config input (freemad config check FILE)."
    if "403" in message:
        return "Fix: the job needs issues: write, pull-requests: write and contents: write permissions."
    return "See docs/github.md, or run `freemad github simulate` locally with the same event."
