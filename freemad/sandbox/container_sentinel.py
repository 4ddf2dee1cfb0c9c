"""A container stage's sentinel: a program of its own (run as `python -I -S container_sentinel.py
PROGRAM NAME`, the standard library only) that stops container NAME unless told the stage ended.

The `docker`/`podman` client a stage runs in dies with FREE-MAD (the reaper sees to it), but
the container does not: the daemon, or podman's `conmon`, keeps it. The sentinel starts with the
stage, in a session of its own and without the reaper's mark, so it outlives whatever kills
FREE-MAD. It reads its stdin, a pipe whose only writer is FREE-MAD: `done` there means the stage
ended and its container is gone (`--rm`); end of file without it (a timeout, an interruption,
FREE-MAD killed outright) means `PROGRAM kill NAME`, then exit.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

KILL_TIMEOUT = 15.0
_NAME = re.compile(r"freemad-judge-[0-9a-f]{12}")
_PROGRAMS = ("docker", "podman")


def main(argv: list[str]) -> int:
    # The runtime as the stage ran it (a name, or the path it resolved to), and a stage's name.
    if len(argv) != 3 or os.path.basename(argv[1]) not in _PROGRAMS:
        return 2
    if not _NAME.fullmatch(argv[2]):
        return 2
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_IGN)  # only the pipe's end decides
    said = sys.stdin.buffer.read(64)
    if said.strip() == b"done":
        return 0
    try:
        done = subprocess.run(
            [argv[1], "kill", argv[2]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=KILL_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return 1
    return 0 if done.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
