"""Grading one debate: each method's answer read from its transcript and judged by the item's
checker (code in the sandbox); the row the report is built from."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from freemad.adapters import Adapters
from freemad.config.models import FreemadConfig
from freemad.debate.debate_record import DebateResult
from freemad.errors import UsageError
from freemad.eval import math_check
from freemad.eval.checkers import matches
from freemad.eval.code_check import passes
from freemad.eval.items import Dataset, Item
from freemad.eval.math_text import plain_expression
from freemad.eval.method_costs import usage
from freemad.eval.methods import FINALIZED, FREEMAD_DEBATE, METHODS, decisions, trajectory
from freemad.sandbox.sandbox_port import Sandbox

Progress = Callable[[str], None]


def quiet(_line: str) -> None:
    return None


def grade(
    item: Item,
    result: DebateResult,
    sandbox: Sandbox | None,
    *,
    finalizer: bool = False,
    extra: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """One row: each method's answer (normal form) and verdict, and what the debate cost; with
    `finalizer` (the config has `debate.finalizer`), the finalizer's answer graded too; `extra`:
    the baselines' answers (normal forms) that cost calls of their own."""
    single, chosen = decisions(trajectory(result), item.normal, finalizer=finalizer)
    chosen = {**chosen, **(extra or {})}
    judge = Verdicts(item, sandbox)
    try:
        graded_single = {agent: _verdict(form, judge.right(form)) for agent, form in single.items()}
        graded = {method: _verdict(form, judge.right(form)) for method, form in chosen.items()}
    except Exception as exc:
        reason = f"the {item.checker} checker failed: {type(exc).__name__}: {exc}"
        return {**failed_row(item, reason, finalizer=finalizer), "unscorable": reason}
    metrics = result.metrics
    return {
        "id": item.id,
        "checker": item.checker,
        "expected": item.expected,
        "status": result.status,
        "error": result.error,
        "run_id": result.run_id,
        "single": graded_single,
        "methods": graded,
        **({"notes": judge.notes} if judge.notes else {}),
        "cost_usd": metrics.get("cost_usd_total"),
        "tokens": metrics.get("tokens_total"),
        "calls": metrics.get("calls"),
        "wall_time_ms": metrics.get("wall_time_ms"),
        "usage": usage(result),
    }


class Verdicts:
    """Whether an answer (a normal form) is right for one item; each form judged once. A `math`
    comparison sympy could not finish in time counts as wrong, with a note saying so."""

    def __init__(self, item: Item, sandbox: Sandbox | None) -> None:
        self.item = item
        self.sandbox = sandbox
        self.known: dict[str | None, bool] = {}
        self.notes: list[str] = []

    def right(self, form: str | None) -> bool:
        if form not in self.known:
            self.known[form] = self._judge(form)
        return self.known[form]

    def _judge(self, form: str | None) -> bool:
        item = self.item
        if item.checker == "code":
            return self.sandbox is not None and passes(item, form, self.sandbox)
        expected = item.expected or ""
        if item.checker != "math" or form is None or form == expected:
            return matches(item.checker, form, expected)
        left, right = plain_expression(form), plain_expression(expected)
        if left is None or right is None:
            return False
        equal = math_check.judge().equal(left, right)
        if equal is None:
            self.notes.append(f"sympy could not compare {form!r} in time or at all: wrong")
        return bool(equal)


def _verdict(form: str | None, right: bool) -> dict[str, Any]:
    return {"answer": form, "correct": right}


def failed_row(item: Item, error: str, *, finalizer: bool = False) -> dict[str, Any]:
    """An item whose debate did not run: every method wrong."""
    methods = [*METHODS[1:], FREEMAD_DEBATE, *([FINALIZED] if finalizer else [])]
    return {
        "id": item.id,
        "checker": item.checker,
        "expected": item.expected,
        "status": "error",
        "error": error,
        "run_id": None,
        "single": {},
        "methods": {method: _verdict(None, False) for method in methods},
        "cost_usd": None,
        "tokens": None,
        "calls": None,
        "wall_time_ms": None,
    }


def code_sandbox(dataset: Dataset, config: FreemadConfig, adapters: Adapters) -> Sandbox | None:
    """The sandbox `code` items run in; a one-line refusal, before any debate, when none can (or
    when `math` items are there and sympy is not)."""
    if any(item.checker == "math" for item in dataset.items):
        math_check.require_sympy()
    if not any(item.checker == "code" for item in dataset.items):
        return None
    sandbox = adapters.sandboxes.code(config.security.sandbox)
    problem = sandbox.problem()
    if problem is not None:
        raise UsageError(f"code items are checked in a sandbox, and {problem}")
    return sandbox


def write_json(path: Path, data: object) -> None:
    """Atomically: a reader (or a rerun after a crash) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
