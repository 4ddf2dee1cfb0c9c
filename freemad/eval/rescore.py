"""Rescoring: the report of a dataset from transcripts that exist, matched to its items by id (an
`index.jsonl`) or by requirement == question; no agent is called."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from freemad.adapters import Adapters
from freemad.config.models import FreemadConfig
from freemad.debate.debate_record import DebateResult
from freemad.errors import UsageError
from freemad.eval.accuracy_report import build_report
from freemad.eval.datasets import Dataset, Item
from freemad.eval.grading import Progress, code_sandbox, grade, quiet, write_json

INDEX = "index.jsonl"


def read_transcripts(folder: Path, progress: Progress = quiet) -> list[tuple[str, DebateResult]]:
    """The JSON transcripts in `folder` (file name, transcript); others are skipped, one line each."""
    if not folder.is_dir():
        raise UsageError(f"no transcript folder {folder}")
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            found.append((path.name, DebateResult.model_validate_json(path.read_bytes())))
        except (OSError, ValidationError, ValueError):
            progress(f"skipped {path}: not a transcript")
    return found


def match_transcripts(
    items: list[Item], transcripts: list[tuple[str, DebateResult]], index: Mapping[str, str]
) -> dict[str, tuple[str, DebateResult]]:
    """Each item's transcript: the one `index` names for its id (a file name or a run id), else
    the latest whose requirement is its question; and each further repeat's, `id#r`, that the
    index names."""
    by_name = {name: (name, result) for name, result in transcripts}
    by_run = {result.run_id: (name, result) for name, result in transcripts}
    by_question: dict[str, tuple[str, DebateResult]] = {}
    for name, result in sorted(transcripts, key=lambda pair: pair[1].started_at):
        by_question[result.requirement.strip()] = (name, result)
    found: dict[str, tuple[str, DebateResult]] = {}
    for item in items:
        named = index.get(item.id)
        chosen = (by_name.get(named) or by_run.get(named)) if named else None
        chosen = chosen or by_question.get(item.question.replace("\x00", "").strip())
        if chosen is not None:
            found[item.id] = chosen
        repeat = 1  # `eval run --repeats`: repeat r of an item is `id#r` in the index
        while (named := index.get(f"{item.id}#{repeat}")) is not None:
            chosen = by_name.get(named) or by_run.get(named)
            if chosen is not None:
                found[f"{item.id}#{repeat}"] = chosen
            repeat += 1
    return found


def read_index(folder: Path) -> dict[str, str]:
    """`index.jsonl` of a transcript folder: item id to transcript file (or run id); later lines
    win, as a rerun appends."""
    index: dict[str, str] = {}
    path = folder / INDEX
    if not path.is_file():
        return index
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError, AttributeError, TypeError):
            entry = json.loads(line)
            target = entry.get("transcript") or entry.get("run_id")
            repeat = entry.get("repeat") or 0
            if isinstance(target, str) and isinstance(repeat, int):
                index[str(entry["id"]) + (f"#{repeat}" if repeat else "")] = target
    return index


def rescore(
    dataset: Dataset,
    transcripts: Path,
    config: FreemadConfig,
    out: Path,
    *,
    adapters: Adapters,
    progress: Progress = quiet,
) -> dict[str, Any]:
    """The report of `dataset` from the transcripts in `transcripts`: no agent is called."""
    sandbox = code_sandbox(dataset, config, adapters)
    if (transcripts / "run.json").is_file() and (transcripts / "transcripts").is_dir():
        transcripts = transcripts / "transcripts"  # an `eval run` folder: its transcripts
    found = match_transcripts(
        dataset.items, read_transcripts(transcripts, progress), read_index(transcripts)
    )
    if not found:
        raise UsageError(f"no transcript in {transcripts} matches an item of {dataset.name}")
    missing = [item.id for item in dataset.items if item.id not in found]
    for ident in missing:
        progress(f"no transcript for item {ident}: left out")
    rows = []
    finalizer = config.debate.finalizer is not None
    for item in dataset.items:
        repeat = 0
        while (key := item.id if repeat == 0 else f"{item.id}#{repeat}") in found:
            name, result = found[key]
            graded = grade(item, result, sandbox, finalizer=finalizer)
            rows.append({**graded, "transcript": name, "repeat": repeat})
            repeat += 1
    header = {"dataset": dataset.name, "transcripts": str(transcripts), "missing": missing}
    report = build_report(rows, header)
    write_json(out / "report.json", report)
    return report
