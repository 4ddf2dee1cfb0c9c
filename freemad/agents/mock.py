"""A canned agent CLI that speaks the debate contract: the default config's agents, and the test suite's.
Given a task request it answers as freemad-task-mock does, so the default config runs tasks too.

Usage: freemad-mock-agent [generate|critique|task] [--persona NAME] [--solution TEXT] [--revise]
                          [--delay SECONDS] [--fault KIND [--fault-in MODE]]
The prompt arrives on stdin. Without a mode argument the mode is read from the prompt.
Faults exist so the tests can run real processes that misbehave in every way an agent can.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

from freemad import __version__
from freemad.core.review_findings import REVIEW_MARKER

PERSONAS = {
    "iterative": (
        "```python\ndef fibonacci(n: int) -> int:\n    a, b = 0, 1\n"
        "    for _ in range(n):\n        a, b = b, a + b\n    return a\n```",
        "Iterates n times keeping the last two values: O(n) time, O(1) memory, no recursion limit.",
    ),
    "recursive": (
        "```python\ndef fibonacci(n: int) -> int:\n    if n < 2:\n        return n\n"
        "    return fibonacci(n - 1) + fibonacci(n - 2)\n```",
        "Follows the definition directly; simple to read.",
    ),
    "memoized": (
        "```python\nfrom functools import lru_cache\n\n\n@lru_cache(maxsize=None)\n"
        "def fibonacci(n: int) -> int:\n    if n < 2:\n        return n\n"
        "    return fibonacci(n - 1) + fibonacci(n - 2)\n```",
        "Recursion with a cache: linear time, but deep n hits the recursion limit.",
    ),
}
FAULTS = (
    "crash",
    "hang",
    "garbage",
    "flood",
    "invalid-utf8",
    "not-logged-in",
    "spawn-child",
    "garbage-then-ok",
)
TASK_MARKER = "Task request JSON:"
_PEER = re.compile(r'<peer_answer label="([^"]+)">\s*(.*?)\s*</peer_answer>', re.DOTALL)
_SOLUTION = re.compile(r"SOLUTION:\s*\n(.*?)(?:\n\s*REASONING:|\Z)", re.DOTALL)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    prompt = sys.stdin.read()
    if args.mode == "task" or TASK_MARKER in prompt:
        # The built-in config's agents take task roles too: answer as the canned task agent.
        from freemad.agents.task_mock import answer_task

        print(answer_task(prompt))
        return 0
    mode = args.mode or ("critique" if "DECISION:" in prompt else "generate")
    if args.delay:
        time.sleep(args.delay)
    if args.fault and args.fault_in in (mode, "any"):
        fault = _fault(args.fault, prompt)
        if fault is not None:
            return fault
    solution, reasoning = _own_answer(args, prompt)
    if mode == "critique":
        _critique(args, prompt, solution)
    else:
        print(f"SOLUTION:\n{solution}\n\nREASONING:\n{reasoning}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="freemad-mock-agent", description=__doc__)
    parser.add_argument("mode", nargs="?", choices=("generate", "critique", "task"))
    parser.add_argument("--persona", choices=sorted(PERSONAS), default="iterative")
    parser.add_argument("--solution", help="answer this text instead of the persona's")
    parser.add_argument("--revise", action="store_true", help="adopt the first peer's answer")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to think first")
    parser.add_argument("--fault", choices=FAULTS)
    parser.add_argument("--fault-in", choices=("generate", "critique", "any"), default="any")
    parser.add_argument("--version", action="version", version=f"freemad-mock-agent {__version__}")
    return parser


def _own_answer(args: argparse.Namespace, prompt: str) -> tuple[str, str]:
    if args.solution is not None:
        return args.solution, "A fixed answer given on the command line."
    if REVIEW_MARKER in prompt:
        from freemad.agents.mock_review import review

        return review(args.persona, _requirement(prompt))
    if "fibonacci" in prompt.lower():
        return PERSONAS[args.persona]
    first = next((line.strip() for line in _requirement(prompt).splitlines() if line.strip()), "")
    return f"[{args.persona}] {first[:200]}", f"The {args.persona} mock answers every requirement."


def _requirement(prompt: str) -> str:
    # The finalizer's prompt fences it as <requirement_HEX> ... </requirement_HEX>.
    match = re.search(r"<requirement(_[0-9a-f]+|)>\s*(.*?)\s*</requirement\1>", prompt, re.DOTALL)
    return match.group(2) if match else prompt


def _critique(args: argparse.Namespace, prompt: str, default: str) -> None:
    own = re.search(r"<your_answer>\s*(.*?)\s*</your_answer>", prompt, re.DOTALL)
    current = default
    if own:
        found = _SOLUTION.search(own.group(1))
        current = found.group(1).strip() if found else default
    peers = [
        (label, found.group(1).strip())
        for label, body in _PEER.findall(prompt)
        if (found := _SOLUTION.search(body))
    ]
    different = [(label, text) for label, text in peers if text != current]
    if args.revise and different:
        label, text = different[0]
        print(
            f"DECISION: REVISE\n\nREVISED_SOLUTION:\n{text}\n\n"
            f"REASONING:\n{label}'s answer is better argued than mine."
        )
    else:
        print(f"DECISION: KEEP\n\nREASONING:\nI checked {len(peers)} peer answer(s); mine stands.")


def _fault(kind: str, prompt: str) -> int | None:
    out = sys.stdout.buffer
    if kind == "crash":
        print("mock agent: simulated crash", file=sys.stderr)
        return 3
    if kind == "hang":
        time.sleep(3600)
    elif kind == "garbage":
        out.write(b"\x1b[31mI am not following the format at all.\x1b[0m\n")
        return 0
    elif kind == "garbage-then-ok":
        # Garbage on the first try; answers properly once asked to fix the format.
        if "could not be parsed" not in prompt:
            out.write(b"Here you go, no markers.\n")
            return 0
    elif kind == "flood":
        block = b"x" * 65536
        for _ in range(16 * 1024):  # a gigabyte, unless the caller stops reading first
            out.write(block)
        return 0
    elif kind == "invalid-utf8":
        out.write(b"SOLUTION:\n\xff\xfe caf\xe9 \xc3\x28\n\nREASONING:\nbytes\n")
        return 0
    elif kind == "not-logged-in":
        print("Invalid API key \u00b7 Please run /login", file=sys.stderr)
        return 1
    elif kind == "spawn-child":
        # A grandchild that would outlive us if nobody killed our process group.
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(3600)"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        print(f"CHILD_PID={child.pid}", file=sys.stderr, flush=True)
        pidfile = os.environ.get("FREEMAD_MOCK_PIDFILE")
        if pidfile:
            with open(pidfile, "a", encoding="utf-8") as handle:
                handle.write(f"{os.getpid()}\n{child.pid}\n")
        time.sleep(3600)
    return None


if __name__ == "__main__":
    sys.exit(main())
