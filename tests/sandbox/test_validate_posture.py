"""`evolve validate` says what the sandbox defends: unsafe on purpose, no allowlist, or neither."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from freemad.evolve.validate import validate
from freemad.sandbox import agent_sandbox, code_sandbox
from tests.conftest import needs_bwrap
from tests.sandbox.attacks import runner, toy_judge, toy_repo


def report(tmp_path: Path, sandbox: str, editable: list[str] | None) -> dict[str, object]:
    repo = toy_repo(tmp_path)
    run, store = runner(
        tmp_path, repo, "daemon", "m", sandbox=sandbox, judge=toy_judge(), editable=editable
    )
    with store:
        return validate(run.evolve, run.repos, run.sandbox, run.agent_box)


def test_host_mode_is_reported_unsafe_and_a_missing_allowlist_is_warned(tmp_path: Path) -> None:
    found = report(tmp_path, "host", None)
    warnings = found["warnings"]
    assert isinstance(warnings, list)
    assert any(w.startswith("UNSAFE: security.sandbox is host") for w in warnings)
    assert any("evolve.editable_paths is unset" in w for w in warnings)
    assert found["ok"] is True  # unsafe on purpose is allowed, and said
    assert "UNSAFE against a hostile worker" in str(found["isolation"])


@needs_bwrap
def test_bubblewrap_with_an_allowlist_has_no_such_warning(tmp_path: Path) -> None:
    found = report(tmp_path, "auto", ["slow_sum.py"])
    warnings = found["warnings"]
    assert isinstance(warnings, list)
    assert not any("UNSAFE" in w or "editable_paths" in w for w in warnings), warnings
    isolation = found["isolation"]
    assert isinstance(isolation, list) and isolation[0].startswith("sandbox: bubblewrap")
    assert found["ok"] is True


def test_no_sandbox_here_is_an_error_naming_the_way_out(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    box, agent = code_sandbox("auto"), agent_sandbox("auto")
    assert box.kind == "unavailable" and agent.kind == "unavailable"
    problem = box.problem() or ""
    assert problem.startswith("no sandbox: bubblewrap (bwrap) is not installed")
    assert "security.sandbox: host" in problem


def test_the_cli_says_so_plainly_where_bubblewrap_is_missing(tmp_path: Path) -> None:
    toy = toy_repo(tmp_path)
    only_git = tmp_path / "bin"
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git") or "git")
    freemad = str(Path(sys.executable).with_name("freemad"))
    env = {**os.environ, "PATH": str(only_git)}
    for command in (["validate"], ["start", "make it fast"]):
        done = subprocess.run(
            [freemad, "evolve", *command[:1], "--config", "evolve.yaml", *command[1:]],
            cwd=toy,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        said = done.stdout + done.stderr
        assert done.returncode in (1, 2), said  # a problem found, or a usage error
        assert "Traceback" not in said
        assert "bubblewrap (bwrap) is not installed" in said
        assert "security.sandbox: host" in said
