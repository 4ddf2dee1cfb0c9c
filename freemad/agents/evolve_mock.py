"""A scripted evolve worker: each iteration it applies the next step of a JSON script to its worktree.

Usage: freemad-evolve-mock [task|generate|critique] --steps FILE [--cycle]
                           [--directions TEXT]... [--plan TEXT]
                           [--fault crash|garbage|hang] [--delay SECONDS]

Task mode (the mode word `task`, or no mode word and `Task request JSON:` in the prompt) reads the
EvolveRequest and applies step `iteration` (1-based) of the script; with --cycle the script
repeats, without it an iteration past the end changes nothing. FILE is a JSON list of steps (or
{"steps": [...]}), relative to the working folder (the worktree). A step, applied in this order:
  {"fault": "crash|garbage|hang", "delete": [PATH], "copy": {DEST: SOURCE},
   "files": {PATH: CONTENT}, "symlinks": {PATH: TARGET}, "as_writes": false, "summary": "..."}
Paths are relative to the worktree and never lead out of it (a symlink's target may point
anywhere); with as_writes the files are returned as TaskResponse writes, verbatim and unchecked.
A step may instead be {"candidates": [STEP, ...]}: candidate k of a generation (the request's
`candidate`, evolve.population) applies the k-th, and a candidate past the list changes nothing.
Debate modes: generate answers {"directions": [...]} when the prompt asks for directions, else the
plan; critique keeps its answer. --directions may be given several times.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from freemad import __version__

MARKER = "Task request JSON:"
FAULTS = ("crash", "garbage", "hang")
STEP_KEYS = {"summary", "files", "delete", "copy", "symlinks", "as_writes", "fault"}
CANDIDATES = "candidates"  # a step of alternatives, one per candidate of a generation
DEFAULT_DIRECTIONS = (
    "Replace the innermost loop with arithmetic that gives the same result.",
    "Measure before and after each change, and keep every test passing.",
)
DEFAULT_PLAN = (
    "1. Find the hottest loop with a profiler.\n"
    "2. Replace it with an equivalent closed-form computation.\n"
    "3. Run the tests and the benchmark before replying."
)


class ScriptError(ValueError):
    """The steps file cannot be used; the message says why, in one line."""


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    prompt = sys.stdin.read()
    mode = args.mode or _detect_mode(prompt)
    if args.delay:
        time.sleep(args.delay)
    if args.fault:
        return _fault(args.fault)
    if mode != "task":
        print(_debate_reply(mode, prompt, args.directions, args.plan))
        return 0
    try:
        reply = _task(prompt, Path(args.steps) if args.steps else None, cycle=args.cycle)
    except ScriptError as exc:
        print(f"freemad-evolve-mock: {exc}", file=sys.stderr)
        return 2
    if isinstance(reply, int):
        return reply
    print(json.dumps(reply))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="freemad-evolve-mock",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("mode", nargs="?", choices=("task", "generate", "critique"))
    parser.add_argument("--steps", help="the JSON script, relative to the working folder")
    parser.add_argument("--cycle", action="store_true", help="repeat the script past its end")
    parser.add_argument(
        "--directions",
        action="append",
        default=[],
        metavar="TEXT",
        help="one direction a directions debate answers (repeat for more)",
    )
    parser.add_argument("--plan", help="the plan a planning debate answers")
    parser.add_argument("--fault", choices=FAULTS, help="misbehave on every call")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to think first")
    parser.add_argument("--version", action="version", version=f"freemad-evolve-mock {__version__}")
    return parser


def _detect_mode(prompt: str) -> str:
    if MARKER in prompt:
        return "task"
    return "critique" if "DECISION:" in prompt else "generate"


def _debate_reply(mode: str, prompt: str, directions: list[str], plan: str | None) -> str:
    if mode == "critique":
        return "DECISION: KEEP\n\nREASONING:\nThe scripted agent keeps its own answer."
    if '"directions"' in prompt:
        solution = json.dumps({"directions": directions or list(DEFAULT_DIRECTIONS)})
        why = "Scripted directions for a stuck run."
    else:
        solution, why = plan or DEFAULT_PLAN, "A scripted plan."
    return f"SOLUTION:\n{solution}\n\nREASONING:\n{why}"


def _task(prompt: str, steps_file: Path | None, *, cycle: bool) -> dict[str, Any] | int:
    if MARKER not in prompt:
        raise ScriptError(f"task mode, but the prompt has no {MARKER!r} line")
    try:
        request = json.loads(prompt[prompt.index(MARKER) + len(MARKER) :])
        iteration = int(request["iteration"])
        candidate = int(request.get("candidate", 0))
        agent_id = str(request.get("agent_id", ""))
    except (ValueError, KeyError, TypeError) as exc:
        raise ScriptError(f"cannot read the request after {MARKER!r}: {exc}") from None
    if steps_file is None:
        raise ScriptError("task mode needs --steps FILE")
    steps = _load_steps(steps_file)
    reply: dict[str, Any] = {
        "agent_id": agent_id,
        "stage": "variation",
        "role": "implementer",
        "writes": [],
    }
    index = iteration - 1
    if cycle and steps and index >= 0:
        index %= len(steps)
    if not 0 <= index < len(steps):
        reply["content"] = f"No scripted step for iteration {iteration}; nothing changed."
        return reply
    step = steps[index]
    if CANDIDATES in step:
        alternatives = step[CANDIDATES]
        if candidate >= len(alternatives):
            reply["content"] = f"No scripted step for candidate {candidate}; nothing changed."
            return reply
        step = alternatives[candidate]
    if step.get("fault"):
        return _fault(str(step["fault"]))
    notes, writes = _apply(step, Path.cwd())
    summary = str(step.get("summary") or f"Scripted step {index + 1}.")
    reply["content"] = "\n".join([summary, *notes])
    reply["writes"] = writes
    return reply


def _load_steps(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScriptError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ScriptError(f"{path} is not JSON: {exc}") from None
    steps = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(steps, list):
        raise ScriptError(f"{path} must hold a list of steps, or an object with 'steps'")
    for number, step in enumerate(steps, 1):
        if isinstance(step, dict) and set(step) == {CANDIDATES}:
            alternatives = step[CANDIDATES]
            if not isinstance(alternatives, list):
                raise ScriptError(f"{path}: step {number}: candidates must be a list of steps")
            for k, alternative in enumerate(alternatives):
                _check_step(path, f"{number} candidate {k}", alternative)
        else:
            _check_step(path, str(number), step)
    return steps


def _check_step(path: Path, number: str, step: Any) -> None:
    if not isinstance(step, dict):
        raise ScriptError(f"{path}: step {number} is not an object")
    unknown = sorted(set(step) - STEP_KEYS)
    if unknown:
        raise ScriptError(f"{path}: step {number} has unknown key(s) {', '.join(unknown)}")
    if step.get("fault") not in (None, *FAULTS):
        raise ScriptError(f"{path}: step {number} has unknown fault {step['fault']!r}")
    for key in ("files", "copy", "symlinks"):
        if not isinstance(step.get(key, {}), dict):
            raise ScriptError(f"{path}: step {number}: {key} must be an object")
    if not isinstance(step.get("delete", []), list):
        raise ScriptError(f"{path}: step {number}: delete must be a list")


def _apply(step: dict[str, Any], root: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Carry out one step in `root`; returns notes on what was refused, and the writes to return."""
    tree = _Worktree(root)
    for rel in step.get("delete", []):
        tree.delete(str(rel))
    for dest, source in step.get("copy", {}).items():
        tree.copy(str(dest), str(source))
    files = {str(path): str(content) for path, content in step.get("files", {}).items()}
    writes: list[dict[str, str]] = []
    if step.get("as_writes"):
        writes = [{"path": path, "content": content} for path, content in files.items()]
    else:
        for rel, content in files.items():
            tree.write(rel, content)
    for rel, link_target in step.get("symlinks", {}).items():
        tree.link(str(rel), str(link_target))
    return tree.notes, writes


class _Worktree:
    """Edits inside one folder; what would leave it is refused and noted."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.notes: list[str] = []

    def _place(self, rel: str) -> Path | None:
        target = _inside(self.root, rel)
        if target is None:
            self.notes.append(f"(refused: {rel} leads outside the worktree)")
        return target

    def delete(self, rel: str) -> None:
        target = self._place(rel)
        if target is not None and not _remove(target):
            self.notes.append(f"(nothing to delete at {rel})")

    def copy(self, dest: str, source: str) -> None:
        target, origin = self._place(dest), self._place(source)
        if target is None or origin is None:
            return
        if not origin.exists():
            self.notes.append(f"(nothing to copy at {source})")
            return
        _remove(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():
            ignore = shutil.ignore_patterns("__pycache__")
            shutil.copytree(origin, target, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(origin, target)

    def write(self, rel: str, content: str) -> None:
        target = self._place(rel)
        if target is None:
            return
        if target.is_symlink() or target.is_dir():
            _remove(target)  # replace what is there; never write through a link
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")

    def link(self, rel: str, link_target: str) -> None:
        target = self._place(rel)
        if target is None:
            return
        _remove(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link_target, target)


def _inside(root: Path, rel: str) -> Path | None:
    """root/rel when it stays inside root, its parent folders' symlinks followed; else None."""
    if not rel or os.path.isabs(rel):
        return None
    normal = os.path.normpath(rel)
    if normal in (".", "..") or normal.startswith(".." + os.sep):
        return None
    target = root / normal
    base = root.resolve()
    parent = target.parent.resolve()
    if parent != base and base not in parent.parents:
        return None
    return target


def _remove(path: Path) -> bool:
    """Remove a file, a symlink (not what it points to) or a folder; False when nothing was there."""
    if path.is_symlink() or path.is_file():
        path.unlink()
        return True
    if path.is_dir():
        shutil.rmtree(path)
        return True
    return False


def _fault(kind: str) -> int:
    if kind == "crash":
        print("freemad-evolve-mock: simulated crash", file=sys.stderr)
        return 3
    if kind == "hang":
        time.sleep(3600)
        return 0
    print("I changed a few things, it should be faster now. Let me know what you think!")
    return 0


if __name__ == "__main__":
    sys.exit(main())
