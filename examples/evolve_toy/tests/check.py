"""The correctness gate: slow_sum(n) is the int 0 + 1 + ... + (n - 1) for every case below, and
slow_sum(-1) raises ValueError. Exits 0 when all of that holds, 1 with a one-line reason if not.

The candidate never runs in this process. A child Python imports slow_sum, calls it and prints
one JSON line of results; this process works out the expected values itself and compares. Code
under test that ran in the checker's own process could end it early with status 0 (os._exit(0)
at import) or patch whatever does the comparing; from a child it can only print results, and a
child that exits early, prints nothing or prints anything else fails the gate. Standard library
only, so `python tests/check.py` works wherever freemad is installed, without pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository: slow_sum.py is here
CASES = sorted({0, 1, 2, 3, 10, *range(60), 1000, 2001})
# The child runs with -I (no current folder on sys.path, no PYTHON* variables), so its json and
# sys are the standard library's; only then does the repository go first on sys.path.
PROBE = """
import json, sys
sys.path.insert(0, "")
from slow_sum import slow_sum
results = [[type(value).__name__, value] for value in map(slow_sum, json.loads(sys.argv[1]))]
refused = False
try:
    slow_sum(-1)
except ValueError:
    refused = True
print(json.dumps({"results": results, "refuses_negative": refused}, default=repr))
"""


def problems() -> list[str]:
    """What is wrong with the candidate; empty when it passes."""
    argv = [sys.executable, "-I", "-c", PROBE, json.dumps(CASES)]
    try:
        ran = subprocess.run(
            argv,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return ["slow_sum did not get through the cases within 60 s"]
    lines = ran.stdout.strip().splitlines()
    if ran.returncode != 0 or not lines:
        error = (ran.stderr.strip().splitlines() or ["no error output"])[-1]
        return [f"the probe stopped with status {ran.returncode} before its results: {error}"]
    try:
        report = json.loads(lines[-1])
        results = [(str(kind), value) for kind, value in report["results"]]
        refused = report["refuses_negative"] is True
    except (ValueError, KeyError, TypeError):
        return [f"the probe printed no results line, but {lines[-1][:120]!r}"]
    if len(results) != len(CASES):
        return [f"the probe returned {len(results)} results for {len(CASES)} cases"]
    found = [
        f"slow_sum({n}) = {value!r} ({kind}), expected {sum(range(n))}"
        for n, (kind, value) in zip(CASES, results, strict=True)
        if kind != "int" or type(value) is not int or value != sum(range(n))
    ]
    return found + ([] if refused else ["slow_sum(-1) did not raise ValueError"])


def main() -> int:
    found = problems()
    if found:
        more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
        print(f"check.py: FAILED: {'; '.join(found[:3])}{more}", file=sys.stderr)
        return 1
    print(f"check.py: {len(CASES)} cases and slow_sum(-1) as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
