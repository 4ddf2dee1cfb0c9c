"""What an agent's interpreter needs beside itself, bound back into the sandbox's private /tmp:
its prefix and whatever that prefix's site-packages puts on the import path."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from freemad.agents.health import check_agent
from freemad.config import parse_config
from freemad.sandbox import agent_sandbox
from freemad.sandbox.bubblewrap import interpreter_paths
from tests.cli.helpers import freemad
from tests.conftest import needs_bwrap

SITE = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"


@pytest.fixture
def under_tmp() -> Iterator[Path]:
    """A folder under /tmp itself, the folder the sandbox makes private."""
    place = Path(tempfile.mkdtemp(prefix="freemad-interp-", dir="/tmp"))
    yield place
    shutil.rmtree(place, ignore_errors=True)


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def prefix_with(root: Path, files: dict[str, str]) -> Path:
    """A virtual environment (site-packages with `files`) and a script in its bin/."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    site = root / "venv" / SITE
    for name, text in files.items():
        (site / name).write_text(text)
    return executable(root / "venv" / "bin" / "agent", f"#!{python}\nprint('agent 1.0')\n")


def test_pth_lines_finders_and_egg_links_are_read_never_run(under_tmp: Path) -> None:
    marker = under_tmp / "ran"
    script = prefix_with(
        under_tmp,
        {
            "a.pth": f"# a comment\n{under_tmp / 'src'}\nrelative\nimport os; open({str(marker)!r}, 'w')\n",
            "__editable___pkg_0_1_finder.py": (
                "import sys\nMAPPING: dict[str, str] = {'pkg': "
                f"{str(under_tmp / 'mapped' / 'pkg')!r}}}\nNAMESPACES = {{}}\n"
            ),
            "old.egg-link": f"{under_tmp / 'linked'}\n.\n",
            "__editable___bad_finder.py": "MAPPING = {not python\n",
        },
    )
    found = set(interpreter_paths(str(script)))
    site = under_tmp / "venv" / SITE
    for wanted in (
        under_tmp / "src",
        site / "relative",
        under_tmp / "mapped" / "pkg",
        under_tmp / "linked",
        under_tmp / "venv",
    ):
        assert wanted in found, (wanted, found)
    assert not marker.exists()  # an `import` line of a .pth is never run


def test_a_program_that_is_not_a_script_brings_only_its_folder(under_tmp: Path) -> None:
    binary = executable(under_tmp / "bin" / "tool", "\x7fELF not really")
    assert interpreter_paths(str(binary)) == (under_tmp / "bin",)
    env_script = executable(under_tmp / "bin" / "envy", "#!/usr/bin/env python3\n")
    found = interpreter_paths(str(env_script))
    assert Path(shutil.which("python3") or "/nonexistent").parent in found


@needs_bwrap
def test_an_agent_whose_module_lives_under_tmp_starts_in_the_sandbox(under_tmp: Path) -> None:
    (under_tmp / "src").mkdir()
    (under_tmp / "src" / "hello_mod.py").write_text("VERSION = 'hello 1.2.3'\n")
    script = prefix_with(under_tmp, {"hello.pth": f"{under_tmp / 'src'}\n"})
    script.write_text(f"#!{script.parent / 'python'}\nimport hello_mod\nprint(hello_mod.VERSION)\n")
    config = parse_config(
        f"agents:\n  - id: a\n    cli_command: {script}\n"
        f"security:\n  cli_allowed_commands: [{script}]\n"
    )
    # On the host it starts; in the sandbox too, its source bound back read-only.
    assert subprocess.run([str(script)], capture_output=True, check=False).returncode == 0
    report = check_agent(config.agents[0], agent_sandbox("auto"))
    assert (report.ok, report.version) == (True, "hello 1.2.3"), report.problem


@needs_bwrap
def test_an_agent_that_cannot_start_in_the_sandbox_says_why(under_tmp: Path) -> None:
    script = executable(
        under_tmp / "bin" / "broken", f"#!{sys.executable}\nimport not_a_module_anywhere\n"
    )
    config = parse_config(
        f"agents:\n  - id: a\n    cli_command: {script}\n"
        f"security:\n  cli_allowed_commands: [{script}]\n"
    )
    report = check_agent(config.agents[0], agent_sandbox("auto"))
    assert report.ok is False
    assert report.problem == (
        "--version exited 1 in the sandbox: "
        "ModuleNotFoundError: No module named 'not_a_module_anywhere'"
    )


@needs_bwrap
def test_health_checks_where_the_debate_runs_its_agents(under_tmp: Path) -> None:
    """`freemad --health` starts each agent in the agents' sandbox when the debate would
    (security.sandbox_agents), so what the sandbox hides shows up before a debate, not in it."""
    hidden = under_tmp / "elsewhere" / "state"
    hidden.parent.mkdir()
    hidden.write_text("x")
    script = executable(
        under_tmp / "tools" / "probe",  # not a bin/ folder, which brings its whole prefix
        f"#!/bin/sh\n[ -e {hidden} ] || {{ echo 'Error: cannot read {hidden}' >&2; exit 1; }}\n"
        "echo 'probe 2.0'\n",
    )
    for sandboxed, code in ((False, 0), (True, 1)):
        (under_tmp / "freemad.yaml").write_text(
            f"agents:\n  - id: a\n    cli_command: {script}\n"
            f"security:\n  cli_allowed_commands: [{script}]\n"
            f"  sandbox_agents: {str(sandboxed).lower()}\n"
        )
        done = freemad("--health", cwd=under_tmp, home=under_tmp, code=code)
        if sandboxed:
            assert f"--version exited 1 in the sandbox: Error: cannot read {hidden}" in done.stdout
        else:
            assert "probe 2.0" in done.stdout


@needs_bwrap
def test_a_judge_program_hidden_by_the_private_tmp_is_refused_saying_so(
    under_tmp: Path, tmp_path: Path
) -> None:
    """A judge stage's program, or the #! interpreter of its script, that lives under /tmp is
    hidden by the sandbox: the stage is not run, and the reason names the path and the fix,
    where bwrap alone said `execvp ...: No such file or directory`."""
    from freemad.sandbox import View, code_sandbox

    work = tmp_path / "work"
    work.mkdir()
    tool = executable(under_tmp / "venv" / "bin" / "bench", "#!/bin/sh\necho ran\n")
    box = code_sandbox("auto", False)
    refused = box.run([str(tool)], work, 30, View.of([work]))
    assert refused.exit_code is None and refused.stdout == ""
    assert f"{tool} lives under /tmp, which the sandbox makes private" in refused.stderr
    assert "put its folder on PATH" in refused.stderr
    # A script of the worktree whose interpreter lives there: the interpreter is named.
    shell = under_tmp / "shells" / "sh"
    shell.parent.mkdir()
    shutil.copy2("/bin/sh", shell)
    executable(work / "run.sh", f"#!{shell}\necho ran\n")
    refused = box.run(["./run.sh"], work, 30, View.of([work]))
    assert f"./run.sh's #! interpreter {shell} lives under /tmp" in refused.stderr
    # The same program on PATH is bound back and runs; so does one in the worktree.
    os.environ["PATH"], saved = f"{tool.parent}{os.pathsep}{os.environ['PATH']}", os.environ["PATH"]
    try:
        assert box.run(["bench"], work, 30, View.of([work])).stdout == "ran\n"
    finally:
        os.environ["PATH"] = saved
    executable(work / "own.sh", "#!/bin/sh\necho ran\n")
    assert box.run(["./own.sh"], work, 30, View.of([work])).stdout == "ran\n"


@needs_bwrap
def test_a_failed_judge_stage_names_the_cause_it_printed(tmp_path: Path) -> None:
    from freemad.config.evolve_section import StageConfig
    from freemad.evolve.judging import run_stages
    from freemad.sandbox import code_sandbox

    script = "import sys; print('building', file=sys.stderr); sys.exit('bwrap-ish: no such file')"
    command = shlex.join([sys.executable, "-c", script])
    stage = StageConfig(name="tests", command=command, provides=["tests_pass"])
    measured, records = run_stages([stage], code_sandbox("auto", False), tmp_path)
    assert not measured.ok
    assert measured.reason == "exited with status 1: bwrap-ish: no such file"
    assert records[0]["stderr_tail"].endswith("bwrap-ish: no such file\n")
