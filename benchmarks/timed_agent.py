"""A benchmark agent that answers the debate contract exactly DELAY seconds after it was forked.

Usage: python -I -S timed_agent.py --delay SECONDS --answer N [--log FILE] generate|critique

It imports nothing beyond the interpreter's built-ins (run it with `-I -S`), reads its prompt
from stdin, and sleeps until fork + DELAY, so its interpreter start-up is inside the DELAY
rather than added to it. With --log it appends one tab-separated line per call:
mode, round, pid, fork time, main() time, reply time (all on CLOCK_BOOTTIME, in seconds; the
fork time comes from /proc in clock ticks, so it is up to 10 ms early).
"""

import os
import sys
import time


def fork_time() -> float:
    """When the kernel created this process, on the boot clock."""
    with open("/proc/self/stat", "rb") as handle:
        fields = handle.read().rsplit(b")", 1)[1].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime


def option(argv: list[str], name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else default


def round_of(prompt: str) -> int:
    where = prompt.find("critique round ")
    if where < 0:
        return 0
    digits = ""
    for char in prompt[where + len("critique round ") :]:
        if not char.isdigit():
            break
        digits += char
    return int(digits or 0)


def main(argv: list[str]) -> int:
    main_at = time.clock_gettime(time.CLOCK_BOOTTIME)
    forked_at = fork_time()
    mode = "critique" if "critique" in argv else "generate"  # cli_mode_arg appends it
    delay = float(option(argv, "--delay", "1.0"))
    answer = option(argv, "--answer", "0")
    log = option(argv, "--log", "")
    prompt = sys.stdin.read()
    time.sleep(max(0.0, forked_at + delay - time.clock_gettime(time.CLOCK_BOOTTIME)))
    replied_at = time.clock_gettime(time.CLOCK_BOOTTIME)
    if log:
        line = f"{mode}\t{round_of(prompt)}\t{os.getpid()}\t{forked_at}\t{main_at}\t{replied_at}\n"
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(line)
    if mode == "critique":
        reply = "DECISION: KEEP\n\nREASONING:\nMy answer stands after reading my peers.\n"
    else:
        reply = (
            f"SOLUTION:\n```python\ndef answer() -> int:\n    return {answer}\n```\n\n"
            f"REASONING:\nThe answer is {answer}.\n"
        )
    sys.stdout.write(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
