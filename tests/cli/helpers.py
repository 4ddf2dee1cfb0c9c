"""Running the real console scripts as a user would: from a folder of their choice, with a home
folder of the test's own (so no config of the machine's is found) and the venv's bin on PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
FREEMAD = BIN / "freemad"


def user_env(home: Path, path: str | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FREEMAD_", "GIT_")) and k not in ("HOME", "PATH")
    }
    env["HOME"] = str(home)
    env["PATH"] = path if path is not None else f"{BIN}{os.pathsep}/usr/local/bin:/usr/bin:/bin"
    env["GIT_CONFIG_GLOBAL"] = str(home / ".gitconfig")
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    return env


def freemad(
    *args: str, cwd: Path, home: Path, code: int | None = 0, stdin: str | None = None, **kw: str
) -> subprocess.CompletedProcess[str]:
    env = user_env(home, kw.get("path"))
    done = subprocess.run(
        [str(FREEMAD), *args],
        cwd=cwd,
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if code is not None:
        assert done.returncode == code, f"{args}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def script_agents(folder: Path, source: str, arguments: dict[str, str], settings: str) -> None:
    """`folder/freemad.yaml` whose agents each run the Python script `source` (written as
    `folder/agent.py`) with their own `arguments`, on the host; `settings`: more of the config,
    as YAML lines."""
    script = folder / "agent.py"
    script.write_text(source)
    python = sys.executable
    agents = "".join(
        f"  - {{id: {agent}, cli_command: '{python} {script} {args}'}}\n"
        for agent, args in arguments.items()
    )
    (folder / "freemad.yaml").write_text(
        f"agents:\n{agents}"
        f"security: {{cli_allowed_commands: ['{python}'], sandbox: host}}\n"
        f"{settings}"
        "logging: {console: false}\n"
    )
