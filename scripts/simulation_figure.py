"""Regenerate docs/research.md's simulation figures and print its table (byte-identical per seed).

    .venv/bin/python scripts/simulation_figure.py            # writes docs/images/simulation-*.svg
    .venv/bin/python scripts/simulation_figure.py --out DIR  # writes them into DIR instead

Each figure is exactly one `freemad eval simulate` command (FIGURES below, printed as it runs);
the table (markdown, on stdout) is one more sweep per cell row.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path
from typing import Literal

from freemad.cli.eval_simulate import simulate
from freemad.eval.simulate import Scenario, run

ROOT = Path(__file__).resolve().parent.parent
CONFORMITY = ",".join(f"{tenth / 10:g}" for tenth in range(11))
COMMON = ["--agents", "5", "--p-correct", "0.6", "--malicious", "1", "--rounds", "1"]
COMMON += ["--items", "2000", "--seed", "0", "--sweep", f"conformity={CONFORMITY}"]
FIGURES = {
    "simulation-keep.svg": [*COMMON, "--independent", "keep"],
    "simulation-rederive.svg": [*COMMON, "--independent", "rederive"],
}
TABLE_METHODS = ("freemad", "majority_final", "majority_initial", "single")


def write_figures(out: Path) -> list[Path]:
    """Run each figure's command, writing its SVG into `out`; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, args in FIGURES.items():
        path = out / name
        command = [*args, "--json", "--svg", str(path)]
        print("freemad eval simulate " + " ".join(args) + f" --svg {name}", file=sys.stderr)
        simulate.main(command, standalone_mode=False)
        written.append(path)
    return written


def table() -> str:
    """Accuracy by model, malicious agents and conformity (5 agents, p-correct 0.6, 1 round)."""
    head = "| non-conformers | malicious | conformity | " + " | ".join(TABLE_METHODS) + " |"
    rows = [head, "|" + "---|" * (3 + len(TABLE_METHODS))]
    independents: tuple[Literal["keep", "rederive"], ...] = ("keep", "rederive")
    for independent in independents:
        for malicious in (0, 1, 2):
            for conformity in (0.0, 0.5, 1.0):
                scenario = Scenario(
                    agents=5,
                    p_correct=0.6,
                    conformity=conformity,
                    malicious=malicious,
                    rounds=1,
                    independent=independent,
                )
                outcome = run(scenario, 2000, 0)
                cells = " | ".join(f"{outcome.methods[m].accuracy:.3f}" for m in TABLE_METHODS)
                rows.append(f"| {independent} | {malicious} | {conformity:g} | {cells} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--no-table", action="store_true", help="Only the figures.")
    options = parser.parse_args(argv)
    with contextlib.redirect_stdout(io.StringIO()):  # the commands' JSON is not the table
        write_figures(options.out)
    if not options.no_table:
        print(table())


if __name__ == "__main__":
    main()
