"""Whether two math answers are equal, by sympy, in a child process that is killed when one
comparison overruns its time limit.

sympy evaluates eagerly: `simplify(10**10**10 - 1)` would build a ten-billion-digit integer and
never return, and no flag inside the process can interrupt it. So every comparison runs in a
worker process, under a memory limit, and the parent waits at most `time_limit` seconds for its
answer; past that it kills the worker's process group and starts another for the next comparison.
`parse_expr` evaluates Python, so only text made of digits, operators, brackets, single-letter
symbols and a short list of function names ever reaches it.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading

from freemad.errors import UsageError

TIME_LIMIT_SEC = 5.0
_START_LIMIT_SEC = 120.0  # importing sympy on a busy machine; not counted against a comparison
_MEMORY = 1024 * 1024 * 1024
_NAMES = frozenset({"sqrt", "pi", "oo", "log", "sin", "cos", "tan", "exp", "E", "I"})
_SAFE = re.compile(r"^[0-9A-Za-z+\-*/().,=\s]*$")
_WORD = re.compile(r"[A-Za-z]+")

_WORKER = f"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({_MEMORY}, {_MEMORY}))
from sympy import Tuple, simplify
from sympy.parsing.sympy_parser import (
    implicit_multiplication_application, parse_expr, standard_transformations)
RULES = standard_transformations + (implicit_multiplication_application,)
def read(text):
    text = text.split("=")[-1]
    return parse_expr(text, transformations=RULES, evaluate=False)
def same(a, b):
    if isinstance(a, (tuple, Tuple)) or isinstance(b, (tuple, Tuple)):
        a, b = tuple(a) if isinstance(a, (tuple, Tuple)) else (a,), \\
            tuple(b) if isinstance(b, (tuple, Tuple)) else (b,)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return simplify(a - b) == 0
print("ready", flush=True)
for line in sys.stdin:
    left, right = json.loads(line)
    try:
        verdict = bool(same(read(left), read(right)))
    except Exception:
        verdict = None
    print(json.dumps(verdict), flush=True)
"""


def safe_for_sympy(text: str) -> bool:
    """Whether `text` may be handed to `parse_expr`: no attribute access, no underscore, no name
    but single letters and the module's short list."""
    if not _SAFE.match(text) or re.search(r"\.(?!\d)", text):
        return False
    return all(len(word) == 1 or word in _NAMES for word in _WORD.findall(text))


def require_sympy() -> None:
    """A one-line refusal, before any debate, when `math` items cannot be compared."""
    if importlib.util.find_spec("sympy") is None:
        raise UsageError("math items are compared by sympy", hint="pip install 'freemad[eval]'")


class MathJudge:
    """One sympy worker, shared by threads (one comparison at a time), restarted after a kill."""

    def __init__(self, time_limit: float = TIME_LIMIT_SEC) -> None:
        self.time_limit = time_limit
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None

    def equal(self, left: str, right: str) -> bool | None:
        """True or False as sympy finds; None when it could not say in time or could not read
        them (the caller counts that as not equal, and says why)."""
        if not (safe_for_sympy(left) and safe_for_sympy(right)):
            return None
        with self._lock:
            process = self._worker()
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps([left, right]) + "\n")
            process.stdin.flush()
            line = self._line(process, self.time_limit)
            if line is None:
                self._kill()
                return None
            verdict = json.loads(line)
            return None if verdict is None else bool(verdict)

    def _worker(self) -> subprocess.Popen[str]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-c", _WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # its own process group, killed whole
        )
        if self._line(self._process, _START_LIMIT_SEC) != "ready":
            self._kill()
            raise UsageError("the sympy worker did not start", hint="pip install 'freemad[eval]'")
        return self._process

    @staticmethod
    def _line(process: subprocess.Popen[str], limit: float) -> str | None:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], limit)
        if not ready:
            return None
        line = process.stdout.readline()
        return line.strip() if line else None

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()

    def close(self) -> None:
        with self._lock:
            self._kill()


_JUDGES: dict[str, MathJudge] = {}
_JUDGES_LOCK = threading.Lock()


def judge() -> MathJudge:
    """The process's one worker, started on first use and killed at exit."""
    with _JUDGES_LOCK:
        if "shared" not in _JUDGES:
            _JUDGES["shared"] = MathJudge()
            atexit.register(_JUDGES["shared"].close)
        return _JUDGES["shared"]
