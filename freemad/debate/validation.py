"""Checks of Python solutions: a syntax check, and an optional run in a sandboxed subprocess.

Nothing an agent wrote is ever executed in this process. The sandbox is a fresh interpreter in
isolated mode, in an empty temporary folder, with a scrubbed environment, resource limits, a time
limit, and no network where the system can give it a network namespace of its own (`unshare -n`).
Validation informs the transcript; it never changes the Free-MAD decision.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from freemad.config.models import ValidationConfig

_FENCE = re.compile(r"^(```|~~~)[ \t]*(python3?|py)?[ \t]*\n(.*?)^\1[ \t]*$", re.M | re.S | re.I)
_MEMORY = 512 * 1024 * 1024


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


@functools.cache
def network_isolation() -> list[str]:
    """The argv prefix that gives a child its own empty network namespace, if this system allows."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    try:
        probe = subprocess.run(
            [unshare, "-n", "--", sys.executable, "-c", "pass"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [unshare, "-n", "--"] if probe.returncode == 0 else []


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_MEMORY, _MEMORY))
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024 * 1024, 16 * 1024 * 1024))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_sandboxed(source: str, timeout_ms: int) -> dict[str, Any]:
    isolation = network_isolation()
    with tempfile.TemporaryDirectory(prefix="freemad-sandbox-") as folder:
        script = Path(folder) / "solution.py"
        script.write_text(source, encoding="utf-8")
        env = {"PATH": "/usr/bin:/bin", "HOME": folder, "LANG": "C.UTF-8"}
        argv = [*isolation, sys.executable, "-I", "-S", str(script)]
        process = subprocess.Popen(
            argv,
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_limits,  # noqa: PLW1509 - limits must be set in the child before exec
        )
        timed_out = False
        try:
            _, stderr = process.communicate(timeout=timeout_ms / 1000)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            _, stderr = process.communicate()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
    return {
        "ran": True,
        "exit_code": process.returncode,
        "timed_out": timed_out,
        "ok": not timed_out and process.returncode == 0,
        "network_isolated": bool(isolation),
        "stderr_tail": stderr.decode("utf-8", "replace")[-1000:],
    }


def validate_answers(
    solutions: Mapping[str, str], winner: str, config: ValidationConfig
) -> tuple[dict[str, dict[str, Any]], float | None]:
    """Per answer id, what the checks found; and a confidence for the winner (None: not Python)."""
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
        if config.enable_sandbox and entry.get("syntax_ok"):
            entry["sandbox"] = run_sandboxed(source, config.sandbox_timeout_ms)
        report[ident] = entry
    winner_report = report.get(winner, {})
    if winner_report.get("language") != "python":
        return report, None
    checks = [winner_report.get("syntax_ok", True)]
    if "sandbox" in winner_report:
        checks.append(winner_report["sandbox"]["ok"])
    return report, sum(map(bool, checks)) / len(checks)
