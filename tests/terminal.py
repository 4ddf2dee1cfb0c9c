"""Run a command with a pseudo-terminal, as a person at a terminal sees it."""

from __future__ import annotations

import os
import pty
import subprocess
from collections.abc import Sequence
from pathlib import Path


def on_terminal(
    argv: Sequence[str], *, cwd: Path, stdout_too: bool = False, timeout: float = 120
) -> tuple[int, str, str]:
    """Run `argv` with stderr (and with `stdout_too`, stdout) on a pseudo-terminal; return the
    exit status, what stdout printed when it is a pipe, and what the terminal showed."""
    controller, terminal = pty.openpty()
    stdout = terminal if stdout_too else subprocess.PIPE
    with subprocess.Popen(
        list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=terminal
    ) as process:
        os.close(terminal)
        seen = bytearray()
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: every holder of the terminal side has closed it
                break
            if not chunk:
                break
            seen += chunk
        os.close(controller)
        out = process.stdout.read().decode() if process.stdout is not None else ""
        status = process.wait(timeout=timeout)
    return status, out, seen.decode(errors="replace")
