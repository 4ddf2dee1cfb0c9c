"""The floor a debate is measured against: bare asyncio driving the same agent processes.

Each round starts every agent (benchmarks/timed_agent.py under `python -I -S`) with
asyncio's subprocess support, writes the prompt on its stdin and reads its answer: no prompts
built, no parsing, scoring, logging or transcript. Stdlib only, so run as a script its start-up
is the interpreter's and asyncio's, nothing else (debate_floor.py runs it that way, and in-process).

Run: python benchmarks/asyncio_floor.py --agents 16 --rounds 2 --delay 0.5 [--log FILE]
     [--pdeathsig]  (wrap each agent in `setpriv --pdeathsig KILL --`, as FREE-MAD does)
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path

AGENT = Path(__file__).with_name("timed_agent.py")
REQUIREMENT = "Return the answer to the benchmark question as a Python function."


def agent_argv(index: int, delay: float, log: str | None) -> list[str]:
    """The same command line debate_critical_path.py configures for agent `index`."""
    answer = str(index % 4)  # four distinct answers, so scoring has something to do
    argv = [sys.executable, "-I", "-S", str(AGENT), "--delay", str(delay), "--answer", answer]
    return argv + (["--log", log] if log else [])


def pdeathsig_prefix() -> list[str]:
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


async def call(argv: list[str], prompt: bytes) -> bytes:
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    answer, _ = await process.communicate(prompt)
    return answer


async def debate(
    agents: int, rounds: int, delay: float, log: str | None, prefix: list[str]
) -> None:
    for round_no in range(rounds + 1):
        mode = "critique" if round_no else "generate"
        prompt = f"{REQUIREMENT}\nThis is critique round {round_no}.\n".encode()
        argvs = [[*prefix, *agent_argv(i, delay, log), mode] for i in range(agents)]
        await asyncio.gather(*(call(argv, prompt) for argv in argvs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--log")
    parser.add_argument("--pdeathsig", action="store_true")
    args = parser.parse_args()
    prefix = pdeathsig_prefix() if args.pdeathsig else []
    asyncio.run(debate(args.agents, args.rounds, args.delay, args.log, prefix))


if __name__ == "__main__":
    main()
