"""An evolve run's lineage as git names it: the run's branch, its version tags, and the commit
message of an admitted version. No I/O; the git work is `freemad.workspace.lineage`'s."""

from __future__ import annotations

from collections.abc import Mapping


def branch_name(run_id: str) -> str:
    return f"freemad/evolve/{run_id}"


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
