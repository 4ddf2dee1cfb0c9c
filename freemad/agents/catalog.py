"""`freemad agents`: every agent CLI FREE-MAD has a preset for, whether it is installed (on PATH
or beside the running Python), its version, whether it is logged in where that can be told
offline, and the config entry that uses it."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from freemad.agents.health import check_agent
from freemad.agents.invocation import CommandNotFound, resolve_program
from freemad.agents.presets import NOT_LOGGED_IN, PRESETS, Preset
from freemad.config.models import PRESET_COMMANDS, AgentConfig, AgentType

_LOGIN_CHECK_SECONDS = 20.0


@dataclass(frozen=True, slots=True)
class KnownAgent:
    type: str
    program: str
    installed: bool
    path: str | None = None
    version: str = ""
    problem: str = ""
    warning: str = ""  # outside the versions its preset was tested on
    # True, False, or None where the CLI cannot say offline; `login` says how it was told.
    logged_in: bool | None = None
    login: str = ""
    install: str = ""
    login_hint: str = ""
    entry: dict[str, Any] = field(default_factory=dict)


def known_types() -> list[AgentType]:
    return [t for t in PRESETS if t in PRESET_COMMANDS]


def config_entry(agent_type: AgentType) -> dict[str, Any]:
    """The smallest config entry for this CLI: an id, its type, and a model where it needs one."""
    preset = PRESETS[agent_type]
    entry: dict[str, Any] = {"id": PRESET_COMMANDS[agent_type].split()[0], "type": agent_type.value}
    if preset.entry_args:
        entry["cli_args"] = dict(preset.entry_args)
    return entry


def find_agent(agent_type: AgentType, env: Mapping[str, str] | None = None) -> KnownAgent:
    env = os.environ if env is None else env
    preset = PRESETS[agent_type]
    program = PRESET_COMMANDS[agent_type].split()[0]
    base = KnownAgent(
        type=agent_type.value,
        program=program,
        installed=False,
        install=preset.install,
        login_hint=preset.login_hint,
        entry=config_entry(agent_type),
    )
    try:
        path = resolve_program(program, env.get("PATH"))
    except CommandNotFound:
        return replace(base, problem="not installed")
    health = check_agent(AgentConfig(id=program, type=agent_type, cli_command=shlex.quote(path)))
    logged_in, how = login_state(preset, path, env)
    return replace(
        base,
        installed=True,
        path=path,
        version=health.version,
        problem=health.problem,
        warning=health.warning,
        logged_in=logged_in,
        login=how,
    )


def find_agents(env: Mapping[str, str] | None = None) -> list[KnownAgent]:
    types = known_types()
    with ThreadPoolExecutor(max_workers=len(types)) as pool:
        return list(pool.map(lambda t: find_agent(t, env), types))


def login_state(preset: Preset, path: str, env: Mapping[str, str]) -> tuple[bool | None, str]:
    """What can be told without the network: a key in the environment, the CLI's own quick
    check (codex, aider), or a login file under HOME. None: only a call would tell."""
    for name in preset.login_env:
        if env.get(name):
            return True, f"{name} is set"
    if preset.login_check:
        return _ask(path, preset, env)
    home = Path(env.get("HOME") or Path.home())
    for name in preset.login_files:
        if (home / name).is_file():
            return True, f"~/{name} exists"
    return None, "cannot tell offline; a one-round debate will"


def _ask(path: str, preset: Preset, env: Mapping[str, str]) -> tuple[bool | None, str]:
    argv = [path, *preset.login_check]
    said = " ".join([Path(path).name, *preset.login_check[:2]])
    try:
        done = subprocess.run(
            argv,
            input=preset.login_check_stdin,
            capture_output=True,
            timeout=_LOGIN_CHECK_SECONDS,
            env=dict(env),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"`{said}` failed: {exc}"
    if done.returncode == 0:
        return True, f"`{said}` says so"
    text = (done.stderr or done.stdout).decode("utf-8", "replace")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    why = next((line for line in lines if NOT_LOGGED_IN.search(line)), None)
    return False, f"`{said}`: {why or (lines[-1] if lines else f'exit {done.returncode}')}"
