"""An evolve run's lineage as git names it: the run's branch, its version tags, and the commit
message of an admitted version. No I/O; the git work is `freemad.workspace.lineage`'s."""

from __future__ import annotations

import re
from collections.abc import Mapping

DEFAULT_BRANCH_PREFIX = "freemad/evolve"
_PREFIX_CHARS = re.compile(r"[A-Za-z0-9._/-]+")
_PREFIX_LIMIT = 100


def branch_name(run_id: str, prefix: str = DEFAULT_BRANCH_PREFIX) -> str:
    """The run's branch, `prefix/run_id` (a run started before prefixes were set: the default)."""
    return f"{prefix}/{run_id}"


def check_branch_prefix(prefix: str) -> str:
    """`prefix` when `prefix/<run id>` is a branch name git accepts and no option; else a
    ValueError saying why. Only letters, digits and `._-/`, so no space, control character,
    `~^:?*[\\`, `@{` or non-ASCII look-alike gets in."""
    problem = None
    parts = prefix.split("/")
    if not _PREFIX_CHARS.fullmatch(prefix):
        problem = "may hold only letters, digits and '.', '_', '-', '/'"
    elif len(prefix) > _PREFIX_LIMIT:
        problem = f"is longer than {_PREFIX_LIMIT} characters"
    elif prefix.startswith("-"):
        problem = "may not start with '-' (git would read it as an option)"
    elif "" in parts:
        problem = "may not start or end with '/' or hold '//'"
    elif ".." in prefix:
        problem = "may not hold '..'"
    elif any(part.startswith(".") or part.endswith((".", ".lock")) for part in parts):
        problem = "has a part starting with '.' or ending with '.' or '.lock'"
    if problem is not None:
        raise ValueError(f"{prefix!r} {problem}: it must be part of a git branch name")
    return prefix


def tag_name(run_id: str, version: int) -> str:
    return f"evolve/{run_id}/v{version}"


def commit_message(
    goal: str,
    run_id: str,
    version: int,
    iteration: int,
    components: Mapping[str, float],
    first_line_limit: int = 72,
) -> str:
    """The commit message of an admitted version: the goal on one line, then git trailers."""
    subject, words = f"evolve v{version}: ", " ".join(goal.split()) or "(no goal)"
    room = max(first_line_limit - len(subject), 4)
    subject += words if len(words) <= room else words[: room - 3].rstrip() + "..."
    score = ", ".join(
        f"{'_'.join(str(name).split())}={float(value)!r}" for name, value in components.items()
    )
    return (
        f"{subject}\n\nEvolve-Run: {run_id}\nEvolve-Version: v{version}\n"
        f"Evolve-Iteration: {iteration}\nEvolve-Score: {score or 'none'}\n"
    )
