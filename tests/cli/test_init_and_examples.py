"""`freemad init` (a starter config, and the GitHub workflow and labels) and `freemad example`
(the evolve toy as a repository of its own); the toy run in place refuses in one line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from freemad.config import load_config
from tests.cli.helpers import BIN, files_under, freemad

ROOT = Path(__file__).resolve().parents[2]


def fake_cli(folder: Path, name: str) -> None:
    folder.mkdir(exist_ok=True)
    program = folder / name
    program.write_text("#!/bin/sh\necho fake 1.0\n")
    program.chmod(0o755)


def test_init_without_agent_clis_writes_the_mock_agents(tmp_path: Path) -> None:
    done = freemad("init", cwd=tmp_path, home=tmp_path)
    assert "wrote freemad.yaml: the mock agents" in done.stdout
    config = load_config(tmp_path / "freemad.yaml")
    assert [a.id for a in config.agents] == ["mock-iterative", "mock-recursive", "mock-memoized"]
    # Found by every command from here: a debate and a plan task work with no --config.
    assert freemad("config", "check", cwd=tmp_path, home=tmp_path).stdout.startswith(
        "freemad.yaml: ok (3 enabled agent(s)"
    )
    again = freemad("init", cwd=tmp_path, home=tmp_path, code=2)
    assert "freemad.yaml exists" in again.stderr and "--force" in again.stderr
    freemad("init", "--force", cwd=tmp_path, home=tmp_path)


def test_init_uses_the_agent_clis_it_finds(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    fake_cli(tools, "claude")
    fake_cli(tools, "codex")
    path = f"{tools}{os.pathsep}{BIN}{os.pathsep}/usr/bin:/bin"
    done = freemad("init", cwd=tmp_path, home=tmp_path, path=path)
    assert "wrote freemad.yaml: claude, codex" in done.stdout
    data = yaml.safe_load((tmp_path / "freemad.yaml").read_text())
    assert [(a["id"], a["type"]) for a in data["agents"]] == [
        ("claude", "claude_code"),
        ("codex", "openai_codex"),
    ]
    assert data["agents"][1]["roles"][0] == "reviewer"
    assert data["security"]["cli_allowed_commands"] == ["claude", "codex"]
    load_config(tmp_path / "freemad.yaml")


def test_init_with_one_agent_cli_gives_it_a_reviewer(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    fake_cli(tools, "gemini")
    path = f"{tools}{os.pathsep}{BIN}{os.pathsep}/usr/bin:/bin"
    freemad("init", cwd=tmp_path, home=tmp_path, path=path)
    config = load_config(tmp_path / "freemad.yaml")
    assert [(a.id, a.roles[0]) for a in config.agents] == [
        ("gemini", "planner"),
        ("gemini-reviewer", "reviewer"),
    ]


def test_init_github_writes_the_caller_workflow_and_prints_the_labels(tmp_path: Path) -> None:
    done = freemad("init", "--github", cwd=tmp_path, home=tmp_path)
    workflow = tmp_path / ".github" / "workflows" / "freemad.yml"
    data = yaml.safe_load(workflow.read_text())
    assert data["jobs"]["freemad"]["with"]["config"] == "freemad.yaml"
    assert "uses: OWNER/freemad/.github/workflows/freemad.yml@SHA" in workflow.read_text()
    labels = ("freemad:debate", "freemad:plan", "freemad:code", "freemad:evolve", "freemad:review")
    for label in labels:
        assert f"gh label create {label} --color" in done.stdout
    assert (ROOT / "docs" / "github.md").read_text().count("gh label create") == 5


def test_example_evolve_toy_is_a_repository_of_its_own(tmp_path: Path) -> None:
    done = freemad("example", "evolve-toy", "toy", cwd=tmp_path, home=tmp_path)
    toy = tmp_path / "toy"
    assert "cd toy" in done.stdout and "freemad evolve start" in done.stdout
    assert (toy / "freemad.yaml").is_file() and not (toy / "evolve.yaml").exists()
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=toy, capture_output=True, text=True, check=True
    )
    assert status.stdout == ""  # committed, clean: evolve can start from it
    assert ".freemad" not in files_under(toy)
    # Its config is found there without --config.
    checked = freemad("config", "check", cwd=toy, home=tmp_path)
    assert checked.stdout.startswith("freemad.yaml: ok")
    taken = freemad("example", "evolve-toy", "toy", cwd=tmp_path, home=tmp_path, code=2)
    assert "not an empty folder" in taken.stderr


def test_the_toy_in_place_is_refused_in_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    """From a clone: examples/evolve_toy is inside FREE-MAD's own repository."""
    clone = tmp_path / "clone"
    (clone / "examples").mkdir(parents=True)
    freemad("example", "evolve-toy", "seed", cwd=tmp_path, home=tmp_path)
    (tmp_path / "seed" / ".git").rename(clone / ".git")  # the toy now sits inside another repo
    (tmp_path / "seed").rename(clone / "examples" / "evolve_toy")
    subprocess.run(["git", "add", "-A"], cwd=clone, check=True, capture_output=True)
    toy = clone / "examples" / "evolve_toy"
    before = files_under(clone)
    for args, code in ((["validate"], 1), (["start", "go"], 2)):
        done = freemad(
            "evolve",
            *args,
            "--config",
            str(toy / "freemad.yaml"),
            cwd=clone,
            home=tmp_path,
            code=code,
        )
        said = (done.stdout + done.stderr).splitlines()
        problem = [line for line in said if "inside the git repository" in line]
        assert problem, done.stdout + done.stderr
        assert "freemad example evolve-toy DIR" in problem[0]
        assert "InvalidGitRepositoryError" not in done.stdout + done.stderr
    branches = subprocess.run(
        ["git", "branch", "--list", "freemad/*"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    )
    assert branches.stdout == ""
    assert files_under(clone) == before
