"""A CLI's first call in a new home runs alone: `llm prompt` started three times at once in a
fresh home races to create its logs database and two calls die (seen with llm 0.36 and
SmolLM2). A real program named llm that makes its state file as llm does, without a lock."""

from __future__ import annotations

import asyncio
import stat
import sys
from pathlib import Path

from freemad.agents.agent_port import CallRequest
from freemad.agents.subprocess_agent import CliAgent
from freemad.config.models import AgentConfig, AgentType, Mode

# It makes ~/.config/io.datasette.llm/logs.db on its first call, slowly, and fails as llm did
# when another process is making it at the same time.
RACY_LLM = """\
import json, os, sys, time
sys.stdin.read()
home = os.environ.get("LLM_USER_PATH") or os.path.expanduser("~/.config/io.datasette.llm")
os.makedirs(home, exist_ok=True)
db = os.path.join(home, "logs.db")
if not os.path.exists(db):
    try:
        fd = os.open(db + ".making", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        sys.exit("sqlite3.IntegrityError: UNIQUE constraint failed: _llm_migrations.name")
    time.sleep(1.5)
    open(db, "w").close()
    os.close(fd)
    os.unlink(db + ".making")
print(json.dumps([{"response": "SOLUTION:\\n42\\n\\nREASONING:\\nsum", "input_tokens": 3, "output_tokens": 2}]))
"""


def racy_llm(folder: Path) -> Path:
    program = folder / "bin" / "llm"
    program.parent.mkdir(parents=True)
    program.write_text(f"#!{sys.executable}\n{RACY_LLM}")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


def three_at_once(program: Path, env: dict[str, str], kind: AgentType) -> list[str]:
    agents = [
        CliAgent(
            AgentConfig(id=f"a{n}", type=kind, cli_command=str(program), timeout=30),
            max_output_bytes=1 << 20,
            env=env,
        )
        for n in range(3)
    ]

    async def all_calls() -> list[str]:
        request = CallRequest(Mode.GENERATE, "what is 40 + 2?", 30)
        results = await asyncio.gather(*(agent.call(request) for agent in agents))
        return [r.status.value for r in results]

    return asyncio.run(all_calls())


def test_the_first_calls_in_a_new_home_do_not_race(tmp_path: Path) -> None:
    program = racy_llm(tmp_path)
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    assert three_at_once(program, env, AgentType.LLM) == ["ok", "ok", "ok"]
    assert (tmp_path / "home" / ".config" / "io.datasette.llm" / "logs.db").exists()
    # The folder LLM_USER_PATH names is where llm keeps it then.
    moved = {**env, "HOME": str(tmp_path / "other"), "LLM_USER_PATH": str(tmp_path / "state")}
    assert three_at_once(program, moved, AgentType.LLM) == ["ok", "ok", "ok"]
    assert (tmp_path / "state" / "logs.db").exists()


def test_without_the_preset_the_same_program_races(tmp_path: Path) -> None:
    """The baseline: this program does race when nothing holds its first call alone."""
    program = racy_llm(tmp_path)
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    statuses = three_at_once(program, env, AgentType.GENERIC)
    assert statuses.count("exit_error") >= 1, statuses
