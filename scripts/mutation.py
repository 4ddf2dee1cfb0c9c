"""`make mutation`: mutation testing of freemad/core/ with mutmut, a report per module, a threshold.

Runs ``mutmut run`` (configured in pyproject.toml's [tool.mutmut]) on every core module, or with
``--changed-since REF`` only on the core modules that a change since REF touched (their source or
their tests), then writes ``.mutation/report.json``::

    {"threshold": 0.95, "ok": true, "modules": {"freemad/core/NAME.py": {
        "killed": K, "survived": S, "equivalent": E, "score": 0.97,
        "survivors": [{"mutant": ..., "line": N, "change": "- old / + new"}],
        "equivalents": [{"mutant": ..., "line": N, "change": ..., "reason": ...}]}}}

A surviving mutant listed in .mutation/equivalents.toml (a change that cannot alter behaviour,
each with a one-line reason; reviewed by hand) counts neither as killed nor as survived. A
module passes when killed / (killed + survived) is at least the threshold; exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - tomli is a dependency on 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
CORE = "freemad/core"
REPORT = ROOT / ".mutation" / "report.json"
EQUIVALENTS = ROOT / ".mutation" / "equivalents.toml"
THRESHOLD = 0.95
# mutmut's verdicts (its stats.status_by_exit_code) that mean a test failed on the mutant.
_KILLED = {"killed", "timeout", "segfault", "caught by type check"}
# Not run by a single test, or run only slower: neither is a kill.
_SURVIVED = {"survived", "no tests", "suspicious"}
# Tests of core modules that live beside the layer that uses them (all pure, all fast).
_TESTS_ELSEWHERE = {
    "tests/github/test_untrusted.py": "untrusted",
    "tests/github/test_commands.py": "commands",
    "tests/github/test_permissions.py": "permissions",
}
# A change to the driver can change every verdict: every module is run again.
_GLOBAL_INPUTS = ("scripts/mutation.py",)


@dataclass
class ModuleResult:
    killed: int = 0
    survived: int = 0
    equivalent: int = 0
    survivors: list[dict[str, object]] = field(default_factory=list)
    equivalents: list[dict[str, object]] = field(default_factory=list)

    @property
    def score(self) -> float:
        judged = self.killed + self.survived
        return 1.0 if judged == 0 else self.killed / judged


def core_modules() -> list[str]:
    """The core's modules by dotted name below it (``scoring``, ``evolve.judge``), packages'
    ``__init__`` left out."""
    return sorted(
        ".".join(p.relative_to(ROOT / CORE).with_suffix("").parts)
        for p in (ROOT / CORE).rglob("*.py")
        if p.stem != "__init__" and p.stat().st_size
    )


def module_path(module: str) -> str:
    """``evolve.judge`` -> ``freemad/core/evolve/judge.py``."""
    return f"{CORE}/{module.replace('.', '/')}.py"


def _git(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    git = shutil.which("git")
    if git is None:
        raise SystemExit("mutation: --changed-since needs git")
    return subprocess.run([git, *args], cwd=ROOT, check=check, capture_output=True, text=True)


def changed_modules(since: str) -> list[str]:
    """The core modules whose source or tests differ from ``since`` (every one if the driver
    did, or if ``since`` names no commit, as in a clone with one commit)."""
    if _git("rev-parse", "--verify", "--quiet", f"{since}^{{commit}}", check=False).returncode:
        print(f"mutation: {since} is not a commit here; mutating every core module")
        return core_modules()
    out = _git("diff", "--name-only", since, "--").stdout.split()
    modules = core_modules()
    if any(path in _GLOBAL_INPUTS for path in out):
        return modules
    touched: set[str] = set()
    by_path = {module_path(m): m for m in modules}
    for path in out:
        name = Path(path).stem
        if path in by_path:
            touched.add(by_path[path])
        elif path in _TESTS_ELSEWHERE:
            touched.add(_TESTS_ELSEWHERE[path])
        elif path.startswith("tests/core/test_"):
            # tests/core/test_evolve_judge_admission.py is evolve.judge's
            touched.update(m for m in modules if name.startswith(f"test_{m.replace('.', '_')}"))
    return sorted(touched)


def load_equivalents() -> dict[tuple[str, str, str], str]:
    """(module path, original line, mutated line), stripped -> the reason it cannot matter; or
    (module path, function, "") for every mutant of a function mutmut cannot bring to life."""
    data = tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8"))
    found: dict[tuple[str, str, str], str] = {}
    for entry in data.get("equivalent", []):
        reason = entry["reason"].strip()
        if not reason:
            raise SystemExit(f"{EQUIVALENTS}: {entry} needs a reason")
        if "function" in entry:
            found[(entry["module"], entry["function"], "")] = reason
        else:
            found[(entry["module"], entry["original"].strip(), entry["mutant"].strip())] = reason
    return found


def _function_spans(source: str) -> dict[str, tuple[int, int]]:
    """mutmut's mangled names (``x_name``, ``xǁClassǁmethod``) -> their lines in ``source``."""
    spans: dict[str, tuple[int, int]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            spans[f"x_{node.name}"] = (node.lineno, node.end_lineno or node.lineno)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    span = (item.lineno, item.end_lineno or item.lineno)
                    spans[f"xǁ{node.name}ǁ{item.name}"] = span
    return spans


_MANGLED = re.compile(r"__mutmut_(?:orig|\d+)")


def _changed_lines(diff: str) -> tuple[str, str]:
    """The original and mutated lines of a mutmut diff, less the renamed function's name."""
    old: list[str] = []
    new: list[str] = []
    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("-"):
            old.append(_MANGLED.sub("", line[1:]))
        elif line.startswith("+"):
            new.append(_MANGLED.sub("", line[1:]))
    # A `def` line whose only change was the name is no change.
    same = [line for line in old if line in new and line.lstrip().startswith(("def ", "async "))]
    for line in same:
        old.remove(line)
        new.remove(line)
    return "\n".join(old), "\n".join(new)


_HUNK = re.compile(r"^@@ -(\d+)")


def _line_of(diff: str, old: str, lines: list[str], span: tuple[int, int] | None) -> int:
    """The source line of the mutated statement: the line holding its text that lies nearest to
    where the diff's hunk puts it (a statement may occur twice in a function)."""
    first, last = span or (1, len(lines))
    guess = first
    for number, line in enumerate(diff.splitlines()):
        hunk = _HUNK.match(line)
        if hunk:
            context = diff.splitlines()[number + 1 :]
            offset = next((i for i, c in enumerate(context) if c.startswith("-")), 0)
            guess = first + int(hunk.group(1)) - 1 + offset
            break
    wanted = old.strip().splitlines()[0].strip() if old.strip() else ""
    matches = [n for n in range(first, last + 1) if wanted and lines[n - 1].strip() == wanted]
    return min(matches, key=lambda n: abs(n - guess)) if matches else first


def collect(modules: list[str]) -> dict[str, ModuleResult]:
    """Read mutmut's verdicts for ``modules`` from mutants/ (mutmut must have run)."""
    from mutmut.configuration import config
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    config()
    equivalents = load_equivalents()
    results: dict[str, ModuleResult] = {}
    for module in modules:
        path = module_path(module)
        source = (ROOT / path).read_text(encoding="utf-8")
        lines, spans = source.splitlines(), _function_spans(source)
        data = SourceFileMutationData(path=Path(path))
        data.load()
        result = results.setdefault(path, ModuleResult())
        for key, code in sorted(data.exit_code_by_key.items()):
            status = status_by_exit_code[code]
            if status in _KILLED:
                result.killed += 1
                continue
            if status not in _SURVIVED:
                raise SystemExit(f"{key}: mutmut left it {status!r}; run make mutation again")
            diff = get_diff_for_mutant(key, path=Path(path))
            old, new = _changed_lines(diff)
            function = key.rpartition(".")[2].rpartition("__mutmut_")[0]
            entry: dict[str, object] = {
                "mutant": key,
                "line": _line_of(diff, old, lines, spans.get(function)),
                "change": f"- {old.strip()} / + {new.strip()}",
                "status": status,
            }
            # x_NAME for a function, xǁCLASSǁNAME for a method
            name = function[2:].replace("ǁ", ".")
            reason = equivalents.get((path, old.strip(), new.strip())) or equivalents.get(
                (path, name, "")
            )
            if reason:
                entry["reason"] = reason
                result.equivalent += 1
                result.equivalents.append(entry)
            else:
                result.survived += 1
                result.survivors.append(entry)
    return results


def _refresh_unmutated_copies() -> None:
    """mutmut copies the rest of freemad/ and the tests into mutants/ once and never again; drop
    those copies so that today's tests meet today's code beside the mutated core. A mutated copy
    of a core module that is gone (moved or renamed) goes too: a stale copy beside the new one
    would be imported by a stale test, and the run would fail to collect; and mutmut's record of
    which tests reach which function goes with it."""
    tests = ROOT / "mutants" / "tests"
    if tests.is_dir():
        shutil.rmtree(tests)
    copy = ROOT / "mutants" / "freemad"
    if not copy.is_dir():
        return
    for entry in copy.iterdir():
        if entry.name == "core":
            continue
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    stale = [
        mutated
        for mutated in (copy / "core").rglob("*.py")
        if not (ROOT / "freemad" / mutated.relative_to(copy)).exists()
    ]
    for mutated in stale:
        mutated.unlink()
    if stale:
        # mutmut's record of which tests reach which function names the functions by module:
        # after a move it says "no tests" for every function of the new module.
        (ROOT / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--changed-since", metavar="REF", help="only the core modules changed since REF"
    )
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="write the report from mutmut's last verdicts (after editing the equivalents)",
    )
    parser.add_argument("modules", nargs="*", help="core module names (default: all)")
    args = parser.parse_args()
    os.chdir(ROOT)
    modules = args.modules or (
        changed_modules(args.changed_since) if args.changed_since else core_modules()
    )
    if not modules:
        print(f"mutation: no core module changed since {args.changed_since}; nothing to mutate")
        return 0
    started = time.monotonic()
    if not args.report_only:
        _refresh_unmutated_copies()
        globs = [f"freemad.core.{module}.*" for module in modules]
        mutmut = Path(sys.executable).with_name("mutmut")
        run = subprocess.run(
            [str(mutmut), "run", "--max-children", str(args.max_children), *globs],
            stdout=subprocess.DEVNULL,
            check=False,
        )
        if run.returncode != 0:
            print(
                f"mutation: mutmut run exited {run.returncode}; `{mutmut} run` shows why",
                file=sys.stderr,
            )
            return run.returncode
    results = collect(modules)
    failing = [path for path, r in sorted(results.items()) if r.score < THRESHOLD]
    report = {
        "threshold": THRESHOLD,
        "ok": not failing,
        "modules": {
            path: {
                "killed": r.killed,
                "survived": r.survived,
                "equivalent": r.equivalent,
                "score": round(r.score, 4),
                "survivors": r.survivors,
                "equivalents": r.equivalents,
            }
            for path, r in sorted(results.items())
        },
    }
    REPORT.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for path, r in sorted(results.items()):
        mark = "FAIL" if path in failing else "ok  "
        print(
            f"{mark} {path}: {r.score:6.1%} killed ({r.killed} killed, {r.survived} survived, "
            f"{r.equivalent} equivalent)"
        )
        if path in failing:
            for survivor in r.survivors:
                print(f"       line {survivor['line']}: {survivor['change']}")
    print(f"mutation: {len(results)} modules in {time.monotonic() - started:.0f}s; {REPORT}")
    if failing:
        print(f"mutation: below {THRESHOLD:.0%} killed: {', '.join(failing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
