"""A canned agent for autonomous tasks: it speaks the task protocol and needs no login.

Its reviewer withholds approval until a product decision is made; its arbiter declines to make
that decision, so the task waits for a person; once a HUMAN_INPUT is in the feedback, the
reviewer approves. Usage: freemad-task-mock [task] [--approve] [--fault KIND [--fault-at STAGE]]
                         [--write PATH=CONTENT ...] [--command CMD ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from freemad import __version__

QUESTION = "Which storage backend should we use first? (SQLite, Postgres)"
MARKER = "Task request JSON:"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="freemad-task-mock", description=__doc__)
    parser.add_argument("mode", nargs="?", default="task")
    parser.add_argument("--approve", action="store_true", help="the reviewer approves at once")
    parser.add_argument("--fault", choices=("not-json", "crash", "hang", "no-decision"))
    parser.add_argument("--fault-at", help="only at this stage (default: every stage)")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument(
        "--write",
        action="append",
        default=[],
        metavar="PATH=CONTENT",
        help="the implementer writes",
    )
    parser.add_argument("--command", action="append", default=[], help="the implementer runs")
    parser.add_argument("--items", help="the plan's work items, as JSON")
    parser.add_argument("--rendezvous", help="folder where parallel work items wait for each other")
    parser.add_argument("--exclusive", help="folder that records work items running at once")
    parser.add_argument("--version", action="version", version=f"freemad-task-mock {__version__}")
    args = parser.parse_args(argv)
    prompt = sys.stdin.read()
    request = json.loads(prompt[prompt.index(MARKER) + len(MARKER) :])
    if args.delay:
        time.sleep(args.delay)
    if args.fault and args.fault_at in (None, request["stage"]):
        if args.fault == "not-json":
            print("I did the work but forgot the format.")
            return 0
        if args.fault == "crash":
            print("task mock: simulated crash", file=sys.stderr)
            return 3
        if args.fault == "hang":
            time.sleep(3600)
    response = _respond(request, approve=args.approve, no_decision=args.fault == "no-decision")
    if args.items and request["stage"] == "draft_plan":
        response["work_items"] = json.loads(args.items)
    item = (request.get("work_item") or {}).get("id", "")
    if args.rendezvous and request["role"] == "implementer":
        _meet(Path(args.rendezvous), item)
    if args.exclusive and request["role"] == "implementer":
        _alone(Path(args.exclusive), item, request["work_item"].get("write_scope") or [])
    if request["role"] == "implementer":
        writes = [dict(zip(("path", "content"), w.split("=", 1), strict=True)) for w in args.write]
        response.update(writes=writes, commands=args.command)
    print(json.dumps(response))
    return 0


def answer_task(prompt: str) -> str:
    """The reply to a task prompt with no options: the canned story of the module's docstring."""
    request = json.loads(prompt[prompt.index(MARKER) + len(MARKER) :])
    return json.dumps(_respond(request, approve=False, no_decision=False))


def _meet(folder: Path, item: str) -> None:
    """Wait until another work item has started too; a serial runner never gets there."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / item).touch()
    for _ in range(400):
        if any(p.name != item for p in folder.iterdir()):
            (folder / f"met-{item}").touch()
            return
        time.sleep(0.05)


def _alone(folder: Path, item: str, scope: list[str]) -> None:
    """Note whether an item with an overlapping write scope runs while this one does: the
    runtime must never let that happen."""
    from freemad.core.work_items import scopes_overlap

    folder.mkdir(parents=True, exist_ok=True)
    mine = folder / f"{item}.running"
    draft = folder / f"{item}.draft"
    draft.write_text(json.dumps(scope))
    draft.rename(mine)  # others never read half a file
    for other in folder.glob("*.running"):
        if other != mine and scopes_overlap(scope, json.loads(other.read_text())):
            (folder / f"overlap-{item}").write_text(other.name)
    time.sleep(0.3)
    mine.unlink()


def _respond(request: dict[str, Any], *, approve: bool, no_decision: bool) -> dict[str, Any]:
    role, stage, goal = request["role"], request["stage"], request["goal"]
    human = [
        f.removeprefix("HUMAN_INPUT: ") for f in request["feedback"] if f.startswith("HUMAN_INPUT:")
    ]
    base = {"agent_id": request["agent_id"], "stage": stage, "role": role}
    if role == "reviewer":
        if no_decision:
            return {**base, "content": "Looks fine, I think."}
        if approve or human:
            return {**base, "content": "The plan is ready.", "review_decision": "approve"}
        return {
            **base,
            "content": "The plan leaves a product decision open.",
            "review_decision": "revise",
            "findings": [QUESTION],
        }
    if role == "arbiter":
        return {
            **base,
            "content": "This is a product decision; the team must make it.",
            "review_decision": "needs_human",
            "findings": [QUESTION],
        }
    decided = f"\n\nDecision from a person: {human[-1]}" if human else ""
    contents = {
        "intake": f"Goal: {goal}",
        "research": "Findings: the architecture has two candidate storage backends.",
        "draft_plan": f"# Plan\n\n1. Pick the storage backend.\n2. Build it.{decided}",
        "finalize": f"# Final plan for: {goal}{decided}",
    }
    return {
        **base,
        "content": contents.get(stage, f"{stage} done."),
        "work_items": [{"id": "w1", "title": "Build it", "write_scope": ["src/"]}]
        if stage == "draft_plan"
        else [],
    }


if __name__ == "__main__":
    sys.exit(main())
