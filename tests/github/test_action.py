"""`freemad github action` as a job runs it: the GITHUB_* environment, a loopback stand-in for the
REST API (PyGithub pointed at it by base URL), and real git with a bare repository as origin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.github.markers import without_key
from freemad.github.standin import StandIn
from freemad.github.workflow_io import read_outputs
from tests.evolve.runs import git
from tests.github.payloads import (
    REPO,
    issue_comment,
    labeled_issue,
    repository,
    review_comment,
    user,
)

BIN = Path(sys.executable).parent
TOKEN = "ghs_" + "s3cr3t" * 6


@pytest.fixture
def api() -> Any:
    with StandIn(permissions={"alice": "write", "mallory": "read"}) as running:
        yield running


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare repository standing for GitHub's copy, with one commit on main."""
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "README.md").write_text("hello\n")
    git(seed, "init", "-q", "-b", "main")
    git(seed, "add", "-A")
    git(seed, "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "init")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    return bare


def job(tmp_path: Path, origin: Path, name: str) -> Path:
    """A fresh checkout, as actions/checkout gives each job."""
    workspace = tmp_path / name
    git(tmp_path, "clone", "-q", str(origin), str(workspace))
    return workspace


def write_config(workspace: Path, kind: str) -> str:
    if kind == "debate":
        mock = str(BIN / "freemad-mock-agent")
        agents = [
            {"id": "a", "cli_command": f"{mock} --persona iterative", "cli_mode_arg": True},
            {"id": "b", "cli_command": f"{mock} --persona recursive", "cli_mode_arg": True},
        ]
    else:
        mock = str(BIN / "freemad-task-mock")
        roles = {
            "planner": ["planner", "researcher"],
            "reviewer": ["reviewer"],
            "arbiter": ["arbiter"],
        }
        agents = [{"id": a, "cli_command": mock, "roles": r} for a, r in roles.items()]
    allowed = sorted({a["cli_command"].split()[0] for a in agents})
    config = {"agents": agents, "security": {"cli_allowed_commands": allowed}}
    path = workspace.parent / f"{workspace.name}-freemad.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def run_job(
    workspace: Path,
    api: StandIn,
    event: str,
    payload: dict[str, Any],
    config: str,
    runner: dict[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], dict[str, str], str]:
    folder = workspace.parent / f"{workspace.name}-runner"
    folder.mkdir(exist_ok=True)
    event_path, output, summary = folder / "event.json", folder / "output", folder / "summary.md"
    event_path.write_text(json.dumps(payload))
    api.seed(payload)  # the issue (and comment) the event is about exists on GitHub
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": os.environ.get("HOME", str(folder)),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_API_URL": api.base_url,
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "INPUT_GITHUB-TOKEN": TOKEN,
        "INPUT_CONFIG": config,
        "GIT_AUTHOR_NAME": "runner",
        "GIT_AUTHOR_EMAIL": "runner@example.com",
        "GIT_COMMITTER_NAME": "runner",
        "GIT_COMMITTER_EMAIL": "runner@example.com",
        **(runner or {}),  # more of the runner's variables
    }
    done = subprocess.run(
        [str(BIN / "freemad"), "github", "action"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    outputs = read_outputs(output) if output.exists() else {}
    return done, outputs, summary.read_text() if summary.exists() else ""


def test_a_labelled_issue_gets_the_winner_outputs_and_a_summary(
    tmp_path: Path, origin: Path, api: StandIn
) -> None:
    api.pages[REPO] = f"https://octo-org.github.io/{REPO.split('/')[1]}"  # Pages is on
    workspace = job(tmp_path, origin, "job1")
    config = write_config(workspace, "debate")

    done, outputs, summary = run_job(
        workspace, api, "issues", labeled_issue("freemad:debate"), config
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert f"::add-mask::{TOKEN}" in done.stdout.splitlines()[0]
    where, body = the_comment(api)
    assert where == f"/repos/{REPO}/issues/7/comments"
    assert "**Winner:**" in body and "| answer | score |" in body
    assert outputs["status"] == "completed" and outputs["run-id"]
    assert "Pick a cache eviction policy" in outputs["final-answer"]
    assert outputs["comment-url"].endswith("#issuecomment-" + str(next(iter(api.comments))))
    assert "**Winner:**" in summary
    assert f"/runs/{outputs['run-id']}.html" in body  # the run's page
    # The run is kept on the state branch of origin, for later jobs and the Pages site.
    files = git(origin, "ls-tree", "-r", "--name-only", "freemad-state")
    assert f"runs/{outputs['run-id']}/events.jsonl" in files.split()
    # The token is printed only to have the runner mask it, never elsewhere.
    assert [line for line in done.stdout.splitlines() if TOKEN in line] == [f"::add-mask::{TOKEN}"]
    assert TOKEN not in done.stderr


def test_the_actions_own_checkout_in_the_workspace_leaves_the_clone_clean(
    tmp_path: Path, origin: Path, api: StandIn
) -> None:
    """freemad.yml runs FREE-MAD as a local action checked out at .freemad-action/: the job names
    it in the clone's .git/info/exclude, so git (and an evolve run's check for uncommitted
    changes) does not see it."""
    workspace = job(tmp_path, origin, "job1")
    action = workspace / ".freemad-action"
    action.mkdir()
    (action / "action.yml").write_text("name: FREE-MAD\n")
    assert git(workspace, "status", "--porcelain") == "?? .freemad-action/"
    config = write_config(workspace, "debate")
    runner = {"GITHUB_ACTION_PATH": str(action)}
    done, outputs, _ = run_job(
        workspace, api, "issues", labeled_issue("freemad:debate"), config, runner
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs["status"] == "completed"
    assert git(workspace, "status", "--porcelain") == ""


@pytest.mark.parametrize("fails", [False, True])
def test_the_comment_shows_the_finalizer_apart_and_the_output_stays_the_winner(
    tmp_path: Path, origin: Path, api: StandIn, fails: bool
) -> None:
    workspace = job(tmp_path, origin, "job1")
    config = write_config(workspace, "debate")
    data = yaml.safe_load(Path(config).read_text())
    # b finalizes: the mock agent's answer, or (failing) a crash on every call after round 0.
    fault = " --fault crash --fault-in generate" if fails else ""
    data["agents"][1]["cli_command"] += fault
    data["debate"] = {"finalizer": "b", "rounds": 1}
    Path(config).write_text(yaml.safe_dump(data))

    done, outputs, _ = run_job(workspace, api, "issues", labeled_issue("freemad:debate"), config)

    assert done.returncode == 0, done.stdout + done.stderr
    _, body = the_comment(api)
    assert outputs["status"] == "completed"
    assert "Pick a cache eviction policy" in outputs["final-answer"]
    if fails:
        assert "**Finalized answer**" not in body
        assert "The finalizer b failed (" in body and "the winner above stands" in body
    else:
        final_at = body.index("**Finalized answer** by b")
        assert body.index("**Winner:**") < final_at
        assert "[recursive] Pick a cache eviction policy" in body[final_at:]
        assert "[recursive]" not in outputs["final-answer"]


def test_a_task_waits_then_an_answer_in_another_job_resumes_it_from_the_state_branch(
    tmp_path: Path, origin: Path, api: StandIn
) -> None:
    first = job(tmp_path, origin, "job1")
    done, outputs, _ = run_job(
        first, api, "issues", labeled_issue("freemad:plan"), write_config(first, "task")
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs["status"] == "waiting_for_human"
    [comment_id] = list(api.comments)
    assert "/freemad answer YOUR ANSWER" in api.comments[comment_id]["body"]

    second = job(tmp_path, origin, "job2")  # a week later: a new runner, a new checkout
    answer = issue_comment("/freemad answer Use SQLite.")
    done, outputs, summary = run_job(
        second, api, "issue_comment", answer, write_config(second, "task")
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs["status"] == "completed"
    assert sorted(api.comments) == [comment_id, 1001]  # ours, edited in place; and the answer
    assert "✅ done" in api.comments[comment_id]["body"]
    assert "waiting for you" not in api.comments[comment_id]["body"]
    assert api.reactions and "✅ done" in summary


def test_an_outsider_runs_nothing_and_an_unhandled_event_is_a_notice(
    tmp_path: Path, origin: Path, api: StandIn
) -> None:
    workspace = job(tmp_path, origin, "job1")
    config = write_config(workspace, "debate")
    done, outputs, _ = run_job(
        workspace, api, "issue_comment", issue_comment("/freemad debate", author="mallory"), config
    )
    assert done.returncode == 0 and outputs["status"] == "refused"
    [reply] = [c.body["body"] for c in api.calls if c.method == "POST"]
    assert reply.startswith("@mallory Only people with write access")

    push = {"ref": "refs/heads/main", "repository": repository(), "sender": user()}
    done, outputs, _ = run_job(workspace, api, "push", push, config)
    assert done.returncode == 0 and "::notice title=FREE-MAD::nothing to do" in done.stdout
    assert outputs["status"] == "ignored"


def test_a_broken_config_is_an_error_annotation_with_the_fix(
    tmp_path: Path, origin: Path, api: StandIn
) -> None:
    workspace = job(tmp_path, origin, "job1")
    bad = tmp_path / "bad.yaml"
    bad.write_text("agents:\n  - id: x\n    cli_comand: nope\n")
    done, _, _ = run_job(workspace, api, "issues", labeled_issue("freemad:debate"), str(bad))
    assert done.returncode == 1
    [annotation] = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert "cli_comand" in annotation and "Fix: correct the config file" in annotation
    assert api.calls == []


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"mode": "debate", "requirement": ""}, "Pick a cache eviction policy"),  # a label
        ({"mode": "auto", "requirement": "/freemad debate rounds=0 Use LRU?"}, "Use LRU?"),
    ],
)
def test_a_dispatch_from_the_webhook_bot_runs_for_the_person_who_asked(
    tmp_path: Path, origin: Path, api: StandIn, inputs: dict[str, str], expected: str
) -> None:
    workspace = job(tmp_path, origin, "job1")
    api.add_issue(REPO, 7, "Pick a cache eviction policy", "LRU or LFU?")
    event = {
        "inputs": {**inputs, "issue": "7", "sender": "alice", "rounds": ""},
        "ref": "refs/heads/main",
        "repository": repository(),
        "sender": user("freemad-app[bot]", "Bot"),
    }
    done, outputs, _ = run_job(
        workspace, api, "workflow_dispatch", event, write_config(workspace, "debate")
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs["status"] == "completed" and expected in outputs["final-answer"]
    where, body = the_comment(api)
    assert where == f"/repos/{REPO}/issues/7/comments" and "**Winner:**" in body
    checked = [c.path for c in api.calls if c.path.endswith("/permission")]
    assert checked == [f"/repos/{REPO}/collaborators/alice/permission"]  # alice, not the App


def test_a_dispatch_for_a_command_on_the_diff_is_answered_in_its_review_thread(
    tmp_path: Path, origin: Path, api: StandIn
) -> None:
    """The bot on GitHub Actions names the comment on the diff (`review-comment`): the job
    answers in that review thread, as it would had it received the comment itself."""
    workspace = job(tmp_path, origin, "job1")
    api.add_pull(REPO, 9, head_ref="feature", head_sha="c" * 40, base_ref="main", head_repo=REPO)
    api.add_issue(REPO, 9, "Pick a cache eviction policy", "LRU or LFU?")
    api.add_review_comment(REPO, 9, "/freemad debate rounds=0 Use LRU?", 2002)
    event = {
        "inputs": {
            "mode": "auto",
            "requirement": "/freemad debate rounds=0 Use LRU?",
            "issue": "9",
            "sender": "alice",
            "review-comment": "2002",
        },
        "repository": repository(),
        "sender": user("freemad-app[bot]", "Bot"),
    }
    done, outputs, _ = run_job(
        workspace, api, "workflow_dispatch", event, write_config(workspace, "debate")
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs["status"] == "completed" and "Use LRU?" in outputs["final-answer"]
    [reply] = api.calls_to("POST", f"/repos/{REPO}/pulls/9/comments/2002/replies")
    assert reply.status == 201
    assert api.calls_to("POST", f"/repos/{REPO}/issues/9/comments") == []
    assert "**Winner:**" in api.review_comments[reply.reply["id"]]["body"]


def test_a_dispatch_with_a_review_comment_that_is_no_id_is_refused(
    tmp_path: Path, origin: Path, api: StandIn
) -> None:
    workspace = job(tmp_path, origin, "job1")
    api.add_issue(REPO, 7, "Pick a cache eviction policy", "LRU or LFU?")
    event = {
        "inputs": {
            "mode": "auto",
            "requirement": "/freemad debate",
            "issue": "7",
            "sender": "alice",
            "review-comment": "2002; rm -rf /",
        },
        "repository": repository(),
        "sender": user("freemad-app[bot]", "Bot"),
    }
    done, _, _ = run_job(
        workspace, api, "workflow_dispatch", event, write_config(workspace, "debate")
    )
    assert done.returncode != 0
    assert "review-comment is '2002; rm -rf /'; expected an id" in done.stdout + done.stderr
    assert [c for c in api.calls if c.method == "POST"] == []


def test_a_dispatch_for_someone_without_write_access_runs_nothing(
    tmp_path: Path, origin: Path, api: StandIn
) -> None:
    workspace = job(tmp_path, origin, "job1")
    api.add_issue(REPO, 7, "Pick a cache eviction policy", "LRU or LFU?")
    event = {
        "inputs": {"mode": "debate", "requirement": "", "issue": "7", "sender": "mallory"},
        "repository": repository(),
        "sender": user("freemad-app[bot]", "Bot"),
    }
    done, outputs, _ = run_job(
        workspace, api, "workflow_dispatch", event, write_config(workspace, "debate")
    )
    assert done.returncode == 0 and outputs["status"] == "refused"


def test_run_links_use_the_pages_site_github_reports(
    tmp_path: Path, origin: Path, api: StandIn
) -> None:
    """A custom domain (or a user site) is read from GitHub's Pages API, not guessed."""
    api.pages[REPO] = "https://dashboards.example.org"
    workspace = job(tmp_path, origin, "job1")
    config = write_config(workspace, "debate")

    done, outputs, _ = run_job(workspace, api, "issues", labeled_issue("freemad:debate"), config)

    assert done.returncode == 0, done.stdout + done.stderr
    _, body = the_comment(api)
    link = f"https://dashboards.example.org/runs/{outputs['run-id']}.html"
    assert link in body
    assert [c.path for c in api.calls].count(f"/repos/{REPO}/pages") == 1


def test_without_a_pages_site_no_run_link_is_guessed(
    tmp_path: Path, origin: Path, api: StandIn
) -> None:
    """GitHub's Pages API answers 404 (no site): no `OWNER.github.io` link, which would be dead;
    the comment says once how to turn Pages on."""
    from freemad.github.pages import ENABLE_PAGES

    workspace = job(tmp_path, origin, "job1")
    config = write_config(workspace, "debate")

    done, _, _ = run_job(workspace, api, "issues", labeled_issue("freemad:debate"), config)

    assert done.returncode == 0, done.stdout + done.stderr
    [pages] = [c for c in api.calls if c.path == f"/repos/{REPO}/pages"]
    assert pages.status == 404
    _, body = the_comment(api)
    assert "github.io" not in body and "/runs/" not in body and ENABLE_PAGES in body


def the_comment(api: StandIn) -> tuple[str, str]:
    """The one comment a run posted: where, and what it says now (posted at once as "starting",
    then edited in place as the run went on)."""
    [posted] = [c for c in api.calls if c.method == "POST" and c.path.endswith("/comments")]
    return posted.path, api.comments[posted.reply["id"]]["body"]


RUNNER = {
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_RUN_ID": "15550001234",
    "GITHUB_RUN_ATTEMPT": "2",
}
RUN_LINK = f"https://github.com/{REPO}/actions/runs/15550001234/attempts/2"


def test_the_first_comment_links_the_actions_run_doing_the_work_when_there_is_one(
    tmp_path: Path, origin: Path, api: StandIn
) -> None:
    workspace = job(tmp_path, origin, "job1")
    config = write_config(workspace, "task")
    # Outside a runner (no GITHUB_RUN_ID): nothing to link.
    done, _, _ = run_job(workspace, api, "issues", labeled_issue("freemad:plan"), config)
    assert done.returncode == 0, done.stdout + done.stderr
    sent = [c.body["body"] for c in api.calls if isinstance(c.body, dict) and "body" in c.body]
    assert sent and without_key(sent[0]) == "FREE-MAD is starting a plan task…"
    assert not any("/actions/runs/" in body for body in sent)

    on_runner = labeled_issue("freemad:plan")
    on_runner["issue"]["number"] = 8
    seen = len(api.calls)
    done, outputs, _ = run_job(workspace, api, "issues", on_runner, config, RUNNER)

    assert done.returncode == 0, done.stdout + done.stderr
    first = next(
        c for c in api.calls[seen:] if c.method == "POST" and c.path.endswith("/8/comments")
    )
    assert first.body["body"].startswith("FREE-MAD is starting a plan task…")
    assert f"[the GitHub Actions run]({RUN_LINK})" in first.body["body"]
    comment = next(c for c in api.comments.values() if c["issue_url"].endswith("/issues/8"))
    assert f"({RUN_LINK})" in comment["body"]  # edited in place since, and still linked
    assert outputs["status"] == "waiting_for_human"


def test_the_address_of_the_actions_run() -> None:
    from freemad.github.action import actions_run_url

    web = "https://github.example.com"
    base = {"GITHUB_REPOSITORY": REPO, "GITHUB_RUN_ID": "77"}
    assert actions_run_url(base, web) == f"{web}/{REPO}/actions/runs/77"
    assert actions_run_url({**base, "GITHUB_RUN_ATTEMPT": "3"}, web + "/") == (
        f"{web}/{REPO}/actions/runs/77/attempts/3"
    )
    assert actions_run_url({"GITHUB_REPOSITORY": REPO}, web) is None
    assert actions_run_url({**base, "GITHUB_RUN_ID": "77; rm -rf"}, web) is None
    assert actions_run_url({"GITHUB_RUN_ID": "77"}, web) is None


def test_a_comment_on_a_pull_requests_diff_runs_the_command_and_reacts_to_it(
    tmp_path: Path, origin: Path, api: StandIn
) -> None:
    """A pull_request_review_comment job: the commenter's access is checked, the 👀 goes on the
    review comment (GitHub's pulls endpoint; the issues one would not find it), and the result
    is posted in the comment's review thread (issue 44.6), edited there as rounds finish, with a
    check run on the pull request's head."""
    workspace = job(tmp_path, origin, "job1")
    payload = review_comment("/freemad debate rounds=0 Pick LRU or LFU")
    api.add_review_comment(REPO, 9, payload["comment"]["body"], payload["comment"]["id"])

    done, outputs, _ = run_job(
        workspace,
        api,
        "pull_request_review_comment",
        payload,
        write_config(workspace, "debate"),
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs["status"] == "completed" and "Pick LRU or LFU" in outputs["final-answer"]
    posts = [(c.path, c.status) for c in api.calls if c.method == "POST"]
    assert posts == [
        (f"/repos/{REPO}/pulls/comments/2002/reactions", 201),
        (f"/repos/{REPO}/pulls/9/comments/2002/replies", 201),
        (f"/repos/{REPO}/check-runs", 201),
    ]
    [reply] = [c.reply["id"] for c in api.calls if c.path.endswith("/replies")]
    assert "**Winner:**" in api.review_comments[reply]["body"]
    [check] = api.check_runs.values()
    assert check["conclusion"] == "success"
    checked = [c.path for c in api.calls if c.path.endswith("/permission")]
    assert checked == [f"/repos/{REPO}/collaborators/alice/permission"]
