"""`freemad --health`: does each agent's program resolve, and does it answer `--version`?"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from freemad.agents.invocation import CommandNotFound, resolve_program
from freemad.config.models import AgentConfig

_TIMEOUT = 20.0


@dataclass(frozen=True, slots=True)
class Health:
    agent_id: str
    program: str
    ok: bool
    path: str | None = None
    version: str = ""
    problem: str = ""


def check_agent(agent: AgentConfig) -> Health:
    program = agent.command_words[0]
    try:
        path = resolve_program(program)
    except CommandNotFound as exc:
        return Health(agent.id, program, False, problem=f"{exc}; is it installed?")
    try:
        done = subprocess.run(
            [path, "--version"],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Health(
            agent.id, program, False, path, problem=f"--version gave no answer in {_TIMEOUT:.0f}s"
        )
    except OSError as exc:
        return Health(agent.id, program, False, path, problem=f"cannot run: {exc}")
    out = (done.stdout or done.stderr).decode("utf-8", "replace").strip()
    first = out.splitlines()[0] if out else ""
    if done.returncode != 0:
        return Health(agent.id, program, False, path, first, f"--version exited {done.returncode}")
    return Health(agent.id, program, True, path, first)


def check_agents(agents: list[AgentConfig]) -> list[Health]:
    with ThreadPoolExecutor(max_workers=max(len(agents), 1)) as pool:
        return list(pool.map(check_agent, agents))
