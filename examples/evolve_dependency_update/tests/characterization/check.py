"""Characterization check: the report's output as it is today, recorded before the upgrade.

It says nothing about whether the output is right, only that it has not changed: the upgrade
must keep every byte of `python -m app.report` (report.golden.txt, written by it on the seed),
render another quarter as 1.x did, and call nothing deprecated. Exits 0 when all of that holds,
1 with a one-line reason if not.

The app never runs in this process, only in child Pythons: code under test that ran in the
checker's own process could end it early with status 0 or patch whatever does the comparing.
Standard library only, so `python tests/characterization/check.py` needs no pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository: app/ and vendor/ are here
GOLDEN = Path(__file__).with_name("report.golden.txt")
ONE_REGION = (  # render_report((("none", 0, 0.0, "-"),)) on the seed
    "Quarterly sales\n\n"
    "region | units | growth % | manager\n"
    "-------+-------+----------+--------\n"
    "none   | 0     | 0.0      | -\n\n"
    "total units     0\n"
    "best growth  none\n"
)
# Runs with -I (no current folder on sys.path, no PYTHON* variables), so its json, sys and
# warnings are the standard library's; only then does the repository go first on sys.path.
PROBE = """
import json, sys, warnings
sys.path.insert(0, "")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from app.report import render_report
    render_report()
    one_region = render_report((("none", 0, 0.0, "-"),))
warned = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
print(json.dumps({"one_region": one_region, "warnings": warned}))
"""


def run(label: str, *argv: str) -> tuple[str | None, str]:
    """A child Python's stdout, or None and why it failed."""
    try:
        ran = subprocess.run(
            [sys.executable, *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"{label} did not finish within 60 s"
    if ran.returncode != 0:
        error = (ran.stderr.strip().splitlines() or ["no error output"])[-1]
        return None, f"{label} exited with status {ran.returncode}: {error}"
    return ran.stdout, ""


def difference(name: str, got: str, expected: str) -> list[str]:
    """One problem naming the first line that differs, or none."""
    if got == expected:
        return []
    pairs = zip(got.splitlines(), expected.splitlines(), strict=False)
    for number, (have, want) in enumerate(pairs, 1):
        if have != want:
            return [f"{name} differs from the seed's at line {number}: {have!r}, not {want!r}"]
    return [f"{name} differs from the seed's in its length or line endings"]


def problems() -> list[str]:
    found: list[str] = []
    output, why = run("python -m app.report", "-m", "app.report")  # as a user runs it
    expected = GOLDEN.read_text(encoding="utf-8")
    found += [why] if output is None else difference("python -m app.report", output, expected)
    printed, why = run("the probe", "-I", "-c", PROBE)
    if printed is None:
        return [*found, why]
    try:
        probe = json.loads(printed.strip().splitlines()[-1])
        one_region, warned = str(probe["one_region"]), list(probe["warnings"])
    except (ValueError, KeyError, TypeError, IndexError):
        return [*found, f"the probe printed no results line, but {printed[-120:]!r}"]
    found += difference("render_report() of one region", one_region, ONE_REGION)
    return found + [f"render_report() warned: {warning}" for warning in warned]


def main() -> int:
    found = problems()
    if found:
        print(f"check.py: FAILED: {'; '.join(found)}", file=sys.stderr)
        return 1
    print("check.py: the report, one region and no warnings, as on the seed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
