"""Grading one debate: each method's answer read from its transcript and judged by the item's
checker (code in the sandbox); the row the report is built from."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from freemad.config.models import FreemadConfig
from freemad.debate.records import DebateResult
from freemad.errors import UsageError
from freemad.eval.checkers import matches, normal_form
from freemad.eval.code_check import passes
from freemad.eval.datasets import Dataset, Item
from freemad.eval.methods import FINALIZED, METHODS, decisions, trajectory
from freemad.ports import Adapters
from freemad.sandbox.port import Sandbox

Progress = Callable[[str], None]


def quiet(_line: str) -> None:
    return None


def grade(
    item: Item, result: DebateResult, sandbox: Sandbox | None, *, finalizer: bool = False
) -> dict[str, Any]:
    """One row: each method's answer (normal form) and verdict, and what the debate cost; with
    `finalizer` (the config has `debate.finalizer`), the finalizer's answer graded too."""
    normalize = _normalizer(item.checker)
    single, chosen = decisions(trajectory(result), normalize, finalizer=finalizer)
    verdicts: dict[str | None, bool] = {}

    def right(form: str | None) -> bool:
        if form not in verdicts:
            if item.checker == "code":
                verdicts[form] = sandbox is not None and passes(item, form, sandbox)
            else:
                verdicts[form] = matches(item.checker, form, item.expected or "")
        return verdicts[form]

    metrics = result.metrics
    return {
        "id": item.id,
        "checker": item.checker,
        "expected": item.expected,
        "status": result.status,
        "error": result.error,
        "run_id": result.run_id,
        "single": {agent: _verdict(form, right(form)) for agent, form in single.items()},
        "methods": {method: _verdict(form, right(form)) for method, form in chosen.items()},
        "cost_usd": metrics.get("cost_usd_total"),
        "tokens": metrics.get("tokens_total"),
        "calls": metrics.get("calls"),
        "wall_time_ms": metrics.get("wall_time_ms"),
    }


def _normalizer(checker: str) -> Callable[[str | None], str | None]:
    return lambda text: normal_form(checker, text)


def _verdict(form: str | None, right: bool) -> dict[str, Any]:
    return {"answer": form, "correct": right}


def failed_row(item: Item, error: str, *, finalizer: bool = False) -> dict[str, Any]:
    """An item whose debate did not run: every method wrong."""
    methods = [*METHODS[1:], *([FINALIZED] if finalizer else [])]
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
    """The sandbox `code` items run in; a one-line refusal, before any debate, when none can."""
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
