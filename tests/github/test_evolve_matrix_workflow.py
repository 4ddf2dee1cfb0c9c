"""The evolve matrix workflow's own step scripts, run with bash as the runner would: the real
`freemad github generation plan|candidate|admit` in fresh clones of a bare origin, a real agent
CLI (freemad-evolve-mock, one scripted change per candidate), the loopback stand-in as GitHub,
and the artifacts moved between jobs under the names the workflow gives them."""

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

from freemad.github.standin import StandIn
from tests.conftest import SANDBOX
from tests.evolve.runs import CALC, PY, git, make_repo
from tests.github.steps import run_script

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "freemad-evolve-matrix.yml"
BIN = Path(sys.executable).parent
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
REPO = "octo/widgets"
CALLER = ROOT / "action" / "evolve-matrix.yml"  # the example caller, as a repository copies it
CALLER_REF = f"{REPO}/.github/workflows/evolve-matrix.yml@refs/heads/main"


def config_text() -> str:
    """The repository's FREE-MAD config: a population of 2, one generation, a scripted worker."""
    config = {
        "agents": [
            {
                "id": "worker",
                "cli_command": "freemad-evolve-mock --steps scripted/steps.json",
                "cli_mode_arg": True,
                "timeout": 60,
            }
        ],
        "security": {"cli_allowed_commands": ["freemad-evolve-mock"], "sandbox": SANDBOX},
        "evolve": {
            "variation": {"mode": "single_agent", "agent_id": "worker"},
            "judge": {
                "stages": [
                    {
                        "name": "tests",
                        "command": f"{PY} tests/check.py",
                        "provides": ["tests_pass"],
                    },
                    {
                        "name": "bench",
                        "command": f"{PY} bench.py",
                        "parse": "json_stdout",
                        "provides": ["runtime_ms"],
                        "timeout_sec": 60,
                    },
                ],
                "gate": ["tests_pass == 1"],
                "comparator": [{"component": "runtime_ms", "direction": "minimize"}],
                "protected_paths": ["tests", "bench.py", "scripted"],
            },
            "population": {"size": 2, "parallel": 2},
            "stop": {"max_iterations": 1},
            "worker_budget": {"timeout_sec": 60},
        },
    }
    return yaml.safe_dump(config)


def jobs() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]
    return data


def step(job: str, step_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in jobs()[job]["steps"] if s.get("id") == step_id)
    return found


def expand(text: str, known: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        assert match.group(1) in known, f"unexpected expression {match.group(0)}"
        return known[match.group(1)]

    return EXPRESSION.sub(one, text)


class Runner:
    """Jobs on runners of their own: a fresh clone, a fresh RUNNER_TEMP with FREE-MAD in it."""

    def __init__(self, root: Path, bare: Path, api: StandIn) -> None:
        self.root, self.bare, self.api, self.count = root, bare, api, 0

    def prepare(self) -> tuple[Path, Path]:
        """A new runner: its workspace (a clone of origin) and RUNNER_TEMP, FREE-MAD in it."""
        self.count += 1
        where = self.root / f"runner{self.count}"
        workspace, temp = where / "workspace", where / "temp"
        subprocess.run(["git", "clone", "-q", str(self.bare), str(workspace)], check=True)
        (temp / "freemad-venv" / "bin").mkdir(parents=True)
        (temp / "freemad-venv" / "bin" / "freemad").symlink_to(BIN / "freemad")
        return workspace, temp

    def run(self, job: str, step_id: str, known: dict[str, str]) -> dict[str, str]:
        workspace, temp = self.prepare()
        return self.script(job, step_id, known, workspace, temp)

    def script(
        self, job: str, step_id: str, known: dict[str, str], workspace: Path, temp: Path
    ) -> dict[str, str]:
        found = step(job, step_id)
        output = temp / "github_output"
        env = {
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(temp),
            "RUNNER_TEMP": str(temp),
            "GITHUB_ACTIONS": "true",
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_API_URL": self.api.base_url,
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(temp / "summary.md"),
            "GITHUB_WORKFLOW_REF": CALLER_REF,  # the caller's workflow, as GitHub sets it
            **{name: expand(str(value), known) for name, value in found["env"].items()},
        }
        done, outputs = run_script(found["run"], workspace, env, output)
        assert done.returncode == 0, done.stdout + done.stderr
        return outputs


@pytest.fixture
def origin(tmp_path: Path) -> tuple[Path, str]:
    seed = make_repo(tmp_path / "seed")
    (seed / ".github").mkdir()
    (seed / ".github" / "freemad.yaml").write_text(config_text())
    (seed / "scripted").mkdir()
    steps = [
        {"candidates": [{"files": {"calc.py": CALC.format(cost=c, bug="")}} for c in (40, 30)]}
    ]
    (seed / "scripted" / "steps.json").write_text(json.dumps(steps))
    git(seed, "add", "-A")
    git(seed, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "freemad")
    git(seed, "checkout", "-q", "-b", "feature")
    (seed / "NOTES.md").write_text("the pull request\n")
    git(seed, "add", "-A")
    git(seed, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "notes")
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(seed, "push", "-q", str(bare), "main", "feature")
    return bare, git(seed, "rev-parse", "feature")


def generation(
    tmp_path: Path, bare: Path, head: str, api: StandIn, **more: str
) -> tuple[dict[str, str], dict[str, str]]:
    """One run of the workflow's jobs for a new run's first generation: the planner's outputs and
    the admitting job's. `more`: further expressions the steps read (carry-on)."""
    inputs = {
        "inputs.config || vars.FREEMAD_CONFIG": ".github/freemad.yaml",
        "inputs.pull-request": "7",
        "github.token": "ghs_matrix",
        **{f"secrets.{key}": "" for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")},
        **{f"secrets.{key}": "" for key in ("CODEX_API_KEY", "GEMINI_API_KEY")},
        "inputs.carry-on": "false",
        **more,
    }
    api.add_pull(REPO, 7, head_ref="feature", head_sha=head, base_ref="main", head_repo=REPO)
    runner = Runner(tmp_path, bare, api)

    plan = runner.run(
        "plan", "plan", {**inputs, "inputs.goal": "make add cheaper", "inputs.run-id": ""}
    )
    assert json.loads(plan["matrix"]) == {"candidate": [0, 1]}
    assert (plan["generation"], plan["count"], plan["parallel"]) == ("1", "2", "2")
    assert int(plan["timeout-minutes"]) == (60 + 300 + 60 + 600) // 60
    needs = {f"needs.plan.outputs.{name}": value for name, value in plan.items()}

    artifacts = tmp_path / "artifacts"
    upload = next(
        s for s in jobs()["candidate"]["steps"] if "upload-artifact@" in s.get("uses", "")
    )
    for k in json.loads(plan["matrix"])["candidate"]:
        known = {**inputs, **needs, "matrix.candidate": str(k)}
        outputs = runner.run("candidate", "candidate", known)
        name = expand(upload["with"]["name"], known)
        folder = Path(
            expand(upload["with"]["path"], {"steps.candidate.outputs.folder": outputs["folder"]})
        )
        assert folder.name == name == f"candidate-1-{k}"
        shutil.copytree(folder, artifacts / name)  # what upload, then download, carry

    # The admitting job downloads into RUNNER_TEMP/freemad-results.
    download = next(
        s for s in jobs()["admit"]["steps"] if "download-artifact@" in s.get("uses", "")
    )
    assert download["with"]["path"] == "${{ runner.temp }}/freemad-results"
    workspace, temp = runner.prepare()
    shutil.copytree(artifacts, temp / "freemad-results")
    admitted = runner.script("admit", "admit", {**inputs, **needs}, workspace, temp)
    return plan, admitted


def test_the_workflow_scripts_plan_judge_on_separate_runners_and_admit(
    tmp_path: Path, origin: tuple[Path, str]
) -> None:
    bare, head = origin
    with StandIn() as api:
        plan, admitted = generation(tmp_path, bare, head, api, **{"inputs.carry-on": "true"})
        assert admitted == {
            "run-id": plan["run-id"],
            "status": "stopped",
            "missing": "0",
            "next": "",  # the run stopped: nothing to carry on
        }
        assert api.dispatches == []
        run_id = plan["run-id"]
        v1 = git(bare, "rev-parse", f"refs/tags/evolve/{run_id}/v1")
        assert git(bare, "rev-parse", f"{v1}^") == head
        assert "COST = 30" in git(bare, "show", f"{v1}:calc.py")  # candidate 1 won
        [draft] = [p for (_, n), p in api.pulls.items() if n != 7]
        assert "admitted v1" in draft["body"]


def two_generations(bare: Path, tmp_path: Path) -> None:
    """Origin's config asks for two generations, so the run goes on after the first."""
    work = tmp_path / "edit"
    git(tmp_path, "clone", "-q", str(bare), str(work))
    config = work / ".github" / "freemad.yaml"
    config.write_text(config.read_text().replace("max_iterations: 1", "max_iterations: 2"))
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "two generations")
    git(work, "push", "-q", "origin", "main")


@pytest.mark.parametrize("carry_on", [True, False])
def test_a_run_that_goes_on_starts_the_callers_workflow_for_its_next_generation(
    tmp_path: Path, origin: tuple[Path, str], carry_on: bool
) -> None:
    bare, head = origin
    two_generations(bare, tmp_path)
    with StandIn() as api:
        api.add_workflow(REPO, "evolve-matrix.yml", CALLER.read_text(encoding="utf-8"))
        flag = {"inputs.carry-on": "true" if carry_on else "false"}
        plan, admitted = generation(tmp_path, bare, head, api, **flag)
        run_id = plan["run-id"]
        assert admitted["status"] == "running"
        if not carry_on:
            assert (admitted["next"], api.dispatches) == ("", [])
            return
        [dispatch] = api.dispatches
        assert (dispatch["repo"], dispatch["workflow"], dispatch["ref"]) == (
            REPO,
            "evolve-matrix.yml",
            "main",
        )
        assert dispatch["inputs"] == {"pull-request": "7", "run-id": run_id}
        assert admitted["next"]
        # The run that dispatch starts plans the second generation from the state branch.
        runner = Runner(tmp_path / "next", bare, api)
        (tmp_path / "next").mkdir()
        known = {
            "inputs.config || vars.FREEMAD_CONFIG": ".github/freemad.yaml",
            "inputs.pull-request": dispatch["inputs"]["pull-request"],
            "inputs.run-id": dispatch["inputs"]["run-id"],
            "inputs.goal": "",
            "github.token": "ghs_matrix",
            **{f"secrets.{key}": "" for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")},
            **{f"secrets.{key}": "" for key in ("CODEX_API_KEY", "GEMINI_API_KEY")},
        }
        second = runner.run("plan", "plan", known)
        assert (second["run-id"], second["generation"]) == (run_id, "2")
        assert json.loads(second["matrix"]) == {"candidate": [0, 1]}


@pytest.mark.parametrize(
    ("workflow_ref", "expected"),
    [
        ("", "not OWNER/REPO/.github/workflows/FILE@REF"),
        ("octo/widgets/.github/workflows/x.yml", "not OWNER/REPO/.github/workflows/FILE@REF"),
        ("octo/widgets/.github/workflows/x.yml@refs/pull/7/merge", "cannot be dispatched"),
        ("../../.github/workflows/x.yml@refs/heads/main", "not OWNER/REPO"),
    ],
)
def test_a_workflow_ref_that_cannot_be_dispatched_is_one_line(
    workflow_ref: str, expected: str
) -> None:
    from freemad.errors import UsageError
    from freemad.github.evolve_matrix import next_generation
    from freemad.github.forge import RecordingForge

    forge = RecordingForge()
    with pytest.raises(UsageError, match=re.escape(expected)) as raised:
        next_generation(forge, workflow_ref, 7, "r" * 32)
    assert "\n" not in str(raised.value) and forge.dispatches == []
