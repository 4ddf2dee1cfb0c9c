"""What the sandbox itself costs per call: bubblewrap against the plain host, in the same run.

Judge stages and task commands: `code_sandbox(mode).run(argv, cwd, 30, View.of([cwd]))` of
`python -c pass` (the running interpreter) and of `true`, with the network off (the default;
bubblewrap adds a network namespace and a seccomp filter, the host `unshare -n`) and on.
Agent calls: one `CliAgent` call of a tiny agent, the bundled `freemad-mock-agent generate` and
a `python -I -S -c` one-liner that reads the prompt and prints a reply, with
`sandbox=agent_sandbox("auto")` (bubblewrap) against `agent_sandbox("host")`, under asyncio.

Each round runs every case once in each sandbox, in a shuffled order, so the machine's noise
hits both alike; a case's cost is the median of its paired differences (bubblewrap minus host,
round by round). Times are wall time around the call, in ms. Budget: the sandbox adds under 50 ms
per call. Exits non-zero on an error only (a call that fails, no bubblewrap), never on a timing.

Run: .venv/bin/python benchmarks/sandbox_cost.py [--calls 60] [--warmup 3] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _common import console_script, emit, machine, progress, summary

from freemad import runner
from freemad.agents.agent_port import CallRequest
from freemad.agents.subprocess_agent import CliAgent
from freemad.config.models import AgentConfig, Mode
from freemad.sandbox import Sandbox, View, agent_sandbox, code_sandbox

BUDGET_MS = 50.0
MODES = ("bubblewrap", "host")
ONE_LINER = "import sys; sys.stdin.read(); print('SOLUTION:\\n42\\n\\nREASONING:\\nfixed')"
Call = Callable[[], Awaitable[float]]


def stage_call(box: Sandbox, argv: list[str], cwd: Path) -> Call:
    """One judge stage through `box`, timed; an error if it does not succeed."""

    async def call() -> float:
        began = time.perf_counter()
        result = box.run(argv, cwd, 30.0, View.of([cwd]))
        took = (time.perf_counter() - began) * 1000
        if not result.ok():
            raise RuntimeError(f"{box.kind} {argv}: exit {result.exit_code}: {result.stderr}")
        return took

    return call


def agent_call(box: Sandbox, command: str) -> Call:
    """One agent call of `command` through `box`, timed; an error if it does not succeed."""
    agent = CliAgent(
        AgentConfig(id="bench", cli_command=command), max_output_bytes=100_000, sandbox=box
    )
    request = CallRequest(Mode.GENERATE, "Say 42.", 30.0)

    async def call() -> float:
        began = time.perf_counter()
        result = await agent.call(request)
        took = (time.perf_counter() - began) * 1000
        if not result.ok:
            raise RuntimeError(f"{box.kind} {command}: {result.status.value}: {result.detail}")
        return took

    return call


def cases(cwd: Path) -> dict[str, dict[str, Call]]:
    """Every case, with its call under bubblewrap and under the host."""
    true = shutil.which("true")
    if true is None:
        raise RuntimeError("no `true` on PATH")
    boxes: dict[str, dict[bool, Sandbox]] = {
        "bubblewrap": {net: code_sandbox("auto", network=net) for net in (False, True)},
        "host": {net: code_sandbox("host", network=net) for net in (False, True)},
    }
    agents = {"bubblewrap": agent_sandbox("auto"), "host": agent_sandbox("host")}
    for box in [*boxes["bubblewrap"].values(), agents["bubblewrap"]]:
        if box.kind != "bubblewrap":
            raise RuntimeError(f"bubblewrap is not usable here: {box.problem()}")
    stages = {"python_c_pass": [sys.executable, "-c", "pass"], "true": [true]}
    found: dict[str, dict[str, Call]] = {}
    for network, label in ((False, "network_off"), (True, "network_on")):
        for name, argv in stages.items():
            found[f"stage_{name}_{label}"] = {
                mode: stage_call(boxes[mode][network], argv, cwd) for mode in MODES
            }
    commands = {
        "agent_mock_agent": shlex.join([console_script("freemad-mock-agent"), "generate"]),
        "agent_python_one_liner": shlex.join([sys.executable, "-I", "-S", "-c", ONE_LINER]),
    }
    for name, command in commands.items():
        found[name] = {mode: agent_call(agents[mode], command) for mode in MODES}
    return found


async def measure(
    found: dict[str, dict[str, Call]], calls: int, warmup: int, seed: int
) -> dict[str, dict[str, list[float]]]:
    """`calls` rounds after `warmup` untimed ones; each round every (case, sandbox) once,
    shuffled."""
    order = [(name, mode) for name in found for mode in MODES]
    shuffler = random.Random(seed)
    samples: dict[str, dict[str, list[float]]] = {n: {m: [] for m in MODES} for n in found}
    for round_ in range(warmup + calls):
        if round_ % 10 == 0:
            progress(f"round {round_ + 1}/{warmup + calls} ({warmup} untimed) ...")
        shuffler.shuffle(order)
        for name, mode in order:
            took = await found[name][mode]()
            if round_ >= warmup:
                samples[name][mode].append(took)
    return samples


def bwrap_version() -> str:
    program = shutil.which("bwrap")
    if program is None:
        return "not installed"
    done = subprocess.run([program, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or done.stderr.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60, help="timed calls per case and sandbox")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    parser.add_argument("--seed", type=int, default=1, help="for the order within each round")
    args = parser.parse_args()
    if args.calls < 1 or args.warmup < 0:
        parser.error("--calls must be at least 1 and --warmup at least 0")
    load_at_start = os.getloadavg()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sandbox-cost-") as folder:
        try:
            found = cases(Path(folder))
            samples = runner.run(measure(found, args.calls, args.warmup, args.seed))
        except RuntimeError as exc:
            sys.exit(f"sandbox_cost: {exc}")
    figures: dict[str, Any] = {}
    for name, by_mode in samples.items():
        paired = [b - h for b, h in zip(by_mode["bubblewrap"], by_mode["host"], strict=True)]
        difference = summary(paired, 1)
        figures[name] = {
            "bubblewrap_ms": summary(by_mode["bubblewrap"], 1),
            "host_ms": summary(by_mode["host"], 1),
            "bubblewrap_minus_host_ms": difference,
            "within_budget": difference["median"] < BUDGET_MS,
        }
    worst = max(figures.values(), key=lambda f: f["bubblewrap_minus_host_ms"]["median"])
    emit(
        {
            "benchmark": "sandbox_cost",
            "machine": machine(),
            "loadavg_at_start": [round(x, 2) for x in load_at_start],
            "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
            "bubblewrap": bwrap_version(),
            "calls_per_case_and_sandbox": args.calls,
            "seconds": round(time.perf_counter() - began, 1),
            "cases": figures,
            "budget_ms": BUDGET_MS,
            "worst_median_difference_ms": worst["bubblewrap_minus_host_ms"]["median"],
            "within_budget": all(f["within_budget"] for f in figures.values()),
        }
    )


if __name__ == "__main__":
    main()
