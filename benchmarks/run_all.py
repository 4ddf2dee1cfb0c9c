"""Run every benchmark, each in a fresh interpreter, and print their figures as one JSON object.

Run: .venv/bin/python benchmarks/run_all.py [--repeat 3] [--runs 30]
(--repeat goes to debate_critical_path.py and debate_floor.py, --runs to cli_startup.py.)
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from _common import emit, machine, progress

HERE = Path(__file__).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    scripts = {
        "scoring_speed": [],
        "prompt_growth": [],
        "cli_startup": ["--runs", str(args.runs)],
        "debate_critical_path": ["--repeat", str(args.repeat)],
        "debate_floor": ["--repeat", str(args.repeat)],
        "debate_transcript_size": [],
        "store_speed": [],
        "evolve_iteration": [],
        "evolve_runtime_cost": [],
        "evolve_population": [],
        "site_build": [],
        "sandbox_cost": [],
        "eval_overhead": [],
    }
    combined: dict[str, Any] = {"machine": machine()}
    for name, extra in scripts.items():
        progress(f"== {name}")
        done = subprocess.run(
            [sys.executable, str(HERE / f"{name}.py"), *extra],
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
        figures = json.loads(done.stdout)
        figures.pop("machine", None)
        combined[name] = figures
    emit(combined)


if __name__ == "__main__":
    main()
