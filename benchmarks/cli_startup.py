"""How long `freemad --version` takes, beside the interpreter's own floor, and what it imports.

Runs `freemad --version` (the installed console script) and `python -c pass` (the same
interpreter) alternately, N times each, then `python -X importtime` over the console script to
list what `--version` imports. For contrast it also times the debate command's import stack
(`freemad --help` and the modules a debate loads), which is what a real run pays before its
first agent starts; both as the environment has it and with a bytecode cache (see _common.py).
Target: `freemad --version` well under 150 ms.

Run: .venv/bin/python benchmarks/cli_startup.py [--runs 30]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import cached_bytecode_env, console_script, emit, machine, progress, summary

TARGET_MS = 150
HEAVY = ("pydantic", "jinja2", "yaml", "click", "asyncio", "freemad.cli", "freemad.debate", "git")
# What `freemad debate` imports before its first agent starts; the adapters (`freemad.wiring`)
# included, so GitPython coming back into a debate's start-up shows as "git" in heavy_imported.
DEBATE_STACK = (
    "import freemad.cli.root, freemad.cli.output, freemad.config, freemad.debate, freemad.logs, "
    "freemad.redact, freemad.wiring"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    load_at_start = os.getloadavg()[0]
    freemad = console_script("freemad")
    with tempfile.TemporaryDirectory(prefix="freemad-pycache-") as folder:
        cached = cached_bytecode_env(Path(folder))
        commands: dict[str, tuple[list[str], dict[str, str] | None]] = {
            "python_c_pass": ([sys.executable, "-c", "pass"], None),
            "freemad_version": ([freemad, "--version"], None),
            "freemad_version_with_bytecode_cache": ([freemad, "--version"], cached),
            "python_I_S_c_pass": ([sys.executable, "-I", "-S", "-c", "pass"], None),
            "freemad_help": ([freemad, "--help"], None),
            "import_debate_stack": ([sys.executable, "-c", DEBATE_STACK], None),
            "import_debate_stack_with_bytecode_cache": (
                [sys.executable, "-c", DEBATE_STACK],
                cached,
            ),
        }
        for argv, env in commands.values():  # warm the page cache and the bytecode cache
            subprocess.run(argv, capture_output=True, check=True, env=env)
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for i in range(args.runs):
            if i % 10 == 0:
                progress(f"run {i + 1}/{args.runs} ...")
            for name, (argv, env) in commands.items():  # interleaved: load hits all alike
                samples[name].append(wall_ms(argv, env))
    times = {name: summary(values, 1) for name, values in samples.items()}
    version = times["freemad_version"]
    floor = times["python_c_pass"]
    figures: dict[str, Any] = {
        "benchmark": "cli_startup",
        "machine": machine(),
        "loadavg_1m_at_start": load_at_start,
        "runs": args.runs,
        "wall_ms": times,
        "freemad_version_over_python_floor_ms": {
            "min": round(version["min"] - floor["min"], 1),
            "median": round(version["median"] - floor["median"], 1),
        },
        "target_ms": TARGET_MS,
        "meets_target": version["p90"] < TARGET_MS,
        "version_imports": import_times([sys.executable, "-X", "importtime", freemad, "--version"]),
        "debate_stack_imports": import_times(
            [sys.executable, "-X", "importtime", "-c", DEBATE_STACK], top=15
        ),
    }
    emit(figures)


def wall_ms(argv: list[str], env: dict[str, str] | None) -> float:
    started = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True, env=env)
    return (time.perf_counter() - started) * 1000


def import_times(argv: list[str], top: int = 10) -> dict[str, Any]:
    """Parse `-X importtime`: module count, total, the slowest top-level imports, heavy ones."""
    stderr = subprocess.run(argv, capture_output=True, text=True, check=True).stderr
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line.removeprefix("import time:").split("|")
        depth = (len(name) - len(name.lstrip())) // 2
        rows.append((name.strip(), int(self_us), int(cumulative_us), depth))
    top_level = sorted((r for r in rows if r[3] == 0), key=lambda r: -r[2])
    by_self = sorted(rows, key=lambda r: -r[1])
    names = {r[0] for r in rows}
    return {
        "modules": len(rows),
        "total_ms": round(sum(r[2] for r in rows if r[3] == 0) / 1000, 1),
        "top_level_by_cumulative_ms": {r[0]: round(r[2] / 1000, 1) for r in top_level[:top]},
        "by_self_ms": {r[0]: round(r[1] / 1000, 1) for r in by_self[:top]},
        "heavy_imported": sorted(h for h in HEAVY if h in names),
        "freemad_modules": sorted(n for n in names if n.startswith("freemad")),
    }


if __name__ == "__main__":
    main()
