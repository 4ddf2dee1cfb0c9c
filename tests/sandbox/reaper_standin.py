"""A stand-in for a FREE-MAD process, for the reaper's tests: it starts what its arguments say,
prints one JSON line of pids, then sleeps until it is killed.

    reaper_standin.py MARKER [watched] [unwatched] [kill-watcher] [fork]

`watched`: a sleeper in a session of its own, with the reaper's mark, announced (`watch`).
`unwatched`: the same, never announced (killed between its start and `watch`).
`kill-watcher`: kill the first watcher before starting anything, so a second takes over.
`fork`: do all that in a forked child, which prints and sleeps; the parent waits for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from freemad.sandbox import reaper


def sleeper(marker: str) -> int:
    name, token = reaper.mark()
    env = {"PATH": os.environ.get("PATH", ""), name: token}
    code = "import time; time.sleep(120)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, marker],
        env=env,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # not our pipe: the test reads it to its end
        stderr=subprocess.DEVNULL,
    )
    return proc.pid


def main() -> None:
    marker, *what = sys.argv[1:]
    first = reaper.watcher_pid() if reaper.enabled() else None
    if "fork" in what and os.fork():
        os.wait()
        return
    if "kill-watcher" in what and first is not None:
        os.kill(first, 9)
        time.sleep(0.2)
    pids: dict[str, int | None] = {"first_watcher": first}
    if "watched" in what:
        pids["watched"] = sleeper(marker)
        reaper.watch(pids["watched"])
    if "unwatched" in what:
        pids["unwatched"] = sleeper(marker)
    reaper.enabled()
    pids["watcher"] = reaper.watcher_pid()
    print(json.dumps(pids), flush=True)
    time.sleep(120)


if __name__ == "__main__":
    main()
