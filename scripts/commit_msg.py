"""The commit-msg hook (.pre-commit-config.yaml): a subject of at most 72 characters, then a
blank line before the body. `git log --oneline` is the project's changelog; CONTRIBUTING.md says
how to write a message that reads well there."""

from __future__ import annotations

import sys
from pathlib import Path

SUBJECT_LIMIT = 72
SCISSORS = "# ------------------------ >8 ------------------------"


def problems(message: str) -> list[str]:
    """What is wrong with a commit message as git would record it (comments and the diff that
    `git commit -v` appends below the scissors line are not part of it)."""
    lines: list[str] = []
    for line in message.splitlines():
        if line == SCISSORS:
            break
        if not line.startswith("#"):
            lines.append(line.rstrip())
    while lines and not lines[0]:
        lines.pop(0)
    if not lines:
        return ["the message is empty"]
    found = []
    subject = lines[0]
    if len(subject) > SUBJECT_LIMIT:
        found.append(
            f"the subject is {len(subject)} characters; keep it to {SUBJECT_LIMIT} "
            "and put the why in the body"
        )
    if len(lines) > 1 and lines[1]:
        found.append("leave a blank line between the subject and the body")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: commit_msg.py MESSAGE_FILE", file=sys.stderr)
        return 2
    found = problems(Path(argv[1]).read_text(encoding="utf-8", errors="replace"))
    for problem in found:
        print(f"commit message: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
