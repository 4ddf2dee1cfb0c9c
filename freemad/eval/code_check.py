"""The `code` checker's verdict: the answer's code, then the item's `test`, then
`check(entry_point)`, run as HumanEval runs them, but in the sandbox's code profile (no network,
nothing writable but an empty folder of its own, a private /tmp, credential stores hidden, memory
and time limits). Nothing an agent wrote runs in this process.

Passing means exit status 0 and, as the last line on stdout, a token the harness read (and
deleted) before any of the candidate's code ran: printing "passed", exiting early with status 0
or raising SystemExit does not pass. Code written to dig the token out of the harness's own frame
could still forge a pass; the sandbox bounds what such code can do, not the verdict.
"""

from __future__ import annotations

import secrets
import sys
import tempfile
from pathlib import Path

from freemad.eval.items import Item
from freemad.sandbox.sandbox_port import Sandbox, View

TIMEOUT_SEC = 10.0
_MEMORY = 1024 * 1024 * 1024
_FILE_SIZE = 16 * 1024 * 1024

_HARNESS = f"""
import os, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({_MEMORY}, {_MEMORY}))
resource.setrlimit(resource.RLIMIT_FSIZE, ({_FILE_SIZE}, {_FILE_SIZE}))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
def main():
    with open("token", encoding="utf-8") as handle:
        token = handle.read()
    os.unlink("token")
    with open("program.py", encoding="utf-8") as handle:
        program = handle.read()
    scope = {{"__name__": "candidate", "__builtins__": __builtins__}}
    exec(compile(program, "program.py", "exec"), scope)
    sys.stdout.flush()
    sys.stdout.write("\\n" + token + "\\n")
    sys.stdout.flush()
    os._exit(0)
main()
"""


def program(item: Item, code: str) -> str:
    """What runs: the item's prompt (HumanEval's signature and docstring), the answer's code, the
    item's tests, and the call of `check`."""
    return f"{item.prompt}\n\n{code}\n\n\n{item.test}\n\n\ncheck({item.entry_point})\n"


def passes(item: Item, code: str | None, sandbox: Sandbox, timeout: float = TIMEOUT_SEC) -> bool:
    """Whether `code` passes `item`'s tests in `sandbox`; False when it cannot run there."""
    if code is None or sandbox.problem() is not None:
        return False
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="freemad-eval-") as name:
        folder = Path(name)
        (folder / "token").write_text(token, encoding="utf-8")
        (folder / "program.py").write_text(program(item, code), encoding="utf-8")
        argv = [sys.executable, "-I", "-S", "-c", _HARNESS]
        result = sandbox.run(argv, folder, timeout, View.of([folder]))
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return result.ok() and bool(lines) and lines[-1].strip() == token
