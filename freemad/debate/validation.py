"""Checks of answers: for Python ones a syntax check and an optional run in a sandboxed
subprocess; for every one a scan for credential-looking strings (`scan_secrets`).

Nothing an agent wrote is ever executed in this process. It runs in the sandbox's code profile
(`freemad.sandbox`): a fresh interpreter in isolated mode, in an empty temporary folder, with a
scrubbed environment, resource limits, a time limit and no network. Where no sandbox can run and
the config does not say `security.sandbox: host`, it is not run, and the report says why.
Validation informs the transcript and changes no score; with `scoring.tie_break: confidence`
its confidence chooses among answers tied for the top score.
"""

from __future__ import annotations

import ast
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from freemad.config.models import ValidationConfig
from freemad.redact import find_secrets
from freemad.sandbox.sandbox_port import Sandbox, View

_FENCE = re.compile(r"^(```|~~~)[ \t]*(python3?|py)?[ \t]*\n(.*?)^\1[ \t]*$", re.M | re.S | re.I)
_MEMORY = 512 * 1024 * 1024
_FILE_SIZE = 16 * 1024 * 1024


def python_source(solution: str) -> str | None:
    """The Python code in a solution: its python-tagged (or untagged) fences, or the whole text."""
    blocks = [m.group(3) for m in _FENCE.finditer(solution) if m.group(2) or "\n" in m.group(3)]
    if blocks:
        return "\n\n".join(blocks)
    text = solution.strip()
    if re.search(r"^\s*(def|class|import|from)\s", text, re.M):
        return text
    return None


def check_syntax(source: str) -> str | None:
    """None when the source parses; otherwise the error, one line. Parsing runs nothing."""
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except ValueError as exc:  # e.g. NUL bytes
        return str(exc)
    return None


_LIMITS = (
    "import resource, runpy, sys\n"
    f"resource.setrlimit(resource.RLIMIT_AS, ({_MEMORY}, {_MEMORY}))\n"
    f"resource.setrlimit(resource.RLIMIT_FSIZE, ({_FILE_SIZE}, {_FILE_SIZE}))\n"
    "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
    "sys.argv = ['solution.py']\n"
    "runpy.run_path('solution.py', run_name='__main__')\n"
)


def run_sandboxed(source: str, timeout_ms: int, sandbox: Sandbox) -> dict[str, Any]:
    """Run `source` as a script in an empty folder of its own, in `sandbox` (code's, as
    `security.sandbox` chose it); what it did, or why it was not run."""
    problem = sandbox.problem()
    if problem is not None:
        return {"ran": False, "ok": False, "reason": problem}
    with tempfile.TemporaryDirectory(prefix="freemad-sandbox-") as folder:
        Path(folder, "solution.py").write_text(source, encoding="utf-8")
        argv = [sys.executable, "-I", "-S", "-c", _LIMITS]
        result = sandbox.run(argv, Path(folder), timeout_ms / 1000, View.of([Path(folder)]))
    return {
        "ran": True,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "ok": result.ok(),
        "sandbox": sandbox.kind,
        "network_isolated": sandbox.network_isolated(),
        "stderr_tail": result.stderr[-1000:],
    }


def validate_answers(
    solutions: Mapping[str, str],
    winner: str,
    config: ValidationConfig,
    sandbox: Sandbox | None = None,
) -> tuple[dict[str, dict[str, Any]], float | None]:
    """Per answer id, what the checks found; and a confidence for the winner (None: not Python).
    `sandbox` runs them with `enable_sandbox`."""
    box = sandbox if config.enable_sandbox else None
    if config.enable_sandbox and box is None:
        raise LookupError(
            "validation.enable_sandbox runs answers in a sandbox and none was given "
            "(freemad.wiring.ADAPTERS has the sandbox factory)"
        )
    report: dict[str, dict[str, Any]] = {}
    for ident, solution in solutions.items():
        source = python_source(solution)
        if source is None:
            report[ident] = {"language": None}
            continue
        entry: dict[str, Any] = {"language": "python"}
        if config.enable_syntax_check or config.enable_sandbox:
            error = check_syntax(source)
            entry["syntax_ok"] = error is None
            if error:
                entry["syntax_error"] = error
        if box is not None and entry.get("syntax_ok"):
            entry["sandbox"] = run_sandboxed(source, config.sandbox_timeout_ms, box)
        report[ident] = entry
    return report, confidence_of(report.get(winner, {}))


def confidence_of(entry: Mapping[str, Any]) -> float | None:
    """An answer's validator confidence: the share of the checks run on it that passed (the
    syntax check, the sandboxed run, the secret scan); None when none ran."""
    checks = []
    if entry.get("language") == "python":
        checks.append(entry.get("syntax_ok", True))
    if "sandbox" in entry:
        checks.append(entry["sandbox"]["ok"])
    if "security" in entry:
        checks.append(entry["security"]["passed"])
    return sum(map(bool, checks)) / len(checks) if checks else None


def scan_secrets(texts: Sequence[tuple[str, int, str]]) -> dict[str, Any]:
    """The secret scan of one answer, given as its texts (agent, round, text): whether it passed,
    and each credential-looking string found, by kind and place (which agent's text, in which
    round, line and column); never a character of the string itself."""
    found: list[dict[str, Any]] = []
    seen: set[tuple[str, int, int]] = set()  # a text merged into the same answer says it again
    for agent, round_no, text in texts:
        for secret in find_secrets(text):
            if (secret.kind, secret.line, secret.column) not in seen:
                seen.add((secret.kind, secret.line, secret.column))
                found.append({**secret.report(), "agent": agent, "round": round_no})
    return {"passed": not found, "found": found}
