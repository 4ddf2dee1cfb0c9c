"""What the plain-text wrappers in bin/ share: the mode argument, and turning a CLI's output into
the answer on stdout or its error on stderr."""

from __future__ import annotations

import subprocess
import sys

from freemad.agents.presets import extract
from freemad.config.models import Mode


def split_mode(args: list[str]) -> tuple[Mode, list[str]]:
    """The mode given as the first argument (generate when none), and the rest."""
    if args and args[0] in {m.value for m in Mode}:
        return Mode(args[0]), args[1:]
    return Mode.GENERATE, args


def print_answer(
    prog: str, cli: str, output_format: str, done: subprocess.CompletedProcess[bytes]
) -> int:
    """Print the final answer and return 0, or print the CLI's error and return its exit status
    (1 when it exited 0 but reported an error)."""
    found = extract(output_format, done.stdout.decode("utf-8", errors="replace"))
    if done.returncode == 0 and found.error is None:
        print(found.text.rstrip("\n"))
        return 0
    message = found.error or found.text.strip() or "no output"
    print(f"{prog}: {cli} failed (exit status {done.returncode}): {message}", file=sys.stderr)
    return done.returncode or 1
