"""`freemad --health` and `freemad evolve validate`: is each agent's program ready?

A program passes when it resolves, starts where its calls will run (inside the sandbox, when
they run in one) and answers `--version` with a version. A program that ignores the flag (it
prints nothing, echoes, or starts working) fails. One that cannot start fails with one line: the
cause that its output ends with. A version outside the range its preset was tested on passes
with a warning (freemad.agents.versions)."""

from __future__ import annotations

import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from freemad.agents.invocation import CommandNotFound, resolve_program
from freemad.agents.outputs import cause_line
from freemad.agents.presets import preset_of
from freemad.agents.versions import version_warning
from freemad.config.models import AgentConfig
from freemad.sandbox.sandbox_port import Sandbox, SandboxUnavailable, View

_TIMEOUT = 20.0
# A version: a number with a dot in it (1.2, v0.61.0, 2.1.197-beta), not inside a longer word.
_VERSION = re.compile(r"(?<![\w.])v?\d+(?:\.\d+)+(?!\d)")
# `--version` is answered in a line or two; a program that ignored it and did its work says more.
_MAX_LINES = 4
_MAX_CHARS = 120


@dataclass(frozen=True, slots=True)
class Health:
    agent_id: str
    program: str
    ok: bool
    path: str | None = None
    version: str = ""
    problem: str = ""
    # The CLI answers, but its version is outside what FREE-MAD's preset was tested on.
    warning: str = ""


def version_line(output: str, expected: str = "") -> str | None:
    """The first line of a `--version` answer when it is one: a short answer whose first line
    matches `expected` (a preset's regex) or, without one, looks like a version."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines or len(lines) > _MAX_LINES or len(lines[0]) > _MAX_CHARS:
        return None
    pattern = re.compile(expected) if expected else _VERSION
    return lines[0] if pattern.search(lines[0]) else None


def check_agent(agent: AgentConfig, sandbox: Sandbox | None = None) -> Health:
    """`agent`'s program asked for its version: in `sandbox`'s agent profile (in a throw-away
    folder, as a call would run there), or on the host without one."""
    program = agent.command_words[0]
    try:
        path = resolve_program(program)
    except CommandNotFound as exc:
        return Health(agent.id, program, False, problem=f"{exc}; is it installed?")
    with tempfile.TemporaryDirectory(prefix="freemad-health-") as folder:
        argv = [path, "--version"]
        try:
            if sandbox is not None:
                home = preset_of(agent).home
                argv = sandbox.agent_argv(argv, Path(folder), View.of([Path(folder)]), home)
            done = subprocess.run(
                argv,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=_TIMEOUT,
                check=False,
                cwd=folder,
            )
        except subprocess.TimeoutExpired:
            problem = f"--version gave no answer in {_TIMEOUT:.0f}s"
            return Health(agent.id, program, False, path, problem=problem)
        except SandboxUnavailable as exc:
            return Health(agent.id, program, False, path, problem=f"no sandbox: {exc}")
        except OSError as exc:
            return Health(agent.id, program, False, path, problem=f"cannot run: {exc}")
    out = (done.stdout or done.stderr).decode("utf-8", "replace").strip()
    first = out.splitlines()[0].strip()[:_MAX_CHARS] if out else ""
    if done.returncode != 0:
        said = (done.stderr + b"\n" + done.stdout).decode("utf-8", "replace")
        cause = cause_line(said)
        where = " in the sandbox" if sandbox is not None and sandbox.kind != "host" else ""
        problem = f"--version exited {done.returncode}{where}" + (f": {cause}" if cause else "")
        return Health(agent.id, program, False, path, first, problem)
    expected = preset_of(agent).version_answer
    version = version_line(out, expected)
    if version is None:
        said = f"it printed {first!r}" if first else "it printed nothing"
        wanted = f"a line matching {expected!r}" if expected else "a version number"
        return Health(
            agent.id,
            program,
            False,
            path,
            first,
            f"--version gave no version ({said}; wanted {wanted}): is this the agent's CLI?",
        )
    warning = version_warning(preset_of(agent), Path(program).name, version)
    return Health(agent.id, program, True, path, version, warning=warning)


def check_agents(agents: list[AgentConfig], sandbox: Sandbox | None = None) -> list[Health]:
    with ThreadPoolExecutor(max_workers=max(len(agents), 1)) as pool:
        return list(pool.map(lambda agent: check_agent(agent, sandbox), agents))
