"""Evaluation folders (`freemad eval run`/`rescore --out DIR`) as the site and dashboard read them:
each one's `report.json`, the name of its page, and its `transcripts/` as a debate source.

Only reads. A folder that is not one is a `SourceError` at once; its report is read each time it
is asked for, so a live dashboard shows a run's report once `freemad eval` writes it, and a
report that is missing or is not an evaluation's is an `EvalReportError` of one line.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from freemad.dashboard.reading.sources import Later, Source, SourceKind, TranscriptDir
from freemad.dashboard.run_records import SourceError, Warn, unique_name
from freemad.dashboard.views.eval_views import ReportShapeError, check_report

REPORT = "report.json"
EVAL_SLUG = re.compile(r"[a-z0-9_-]{1,48}")
_NOT_SLUG = re.compile(r"[^a-z0-9_-]+")
MAX_REPORT = 256 * 1024 * 1024  # bytes: a report of far more items than any dataset holds


class EvalReportError(SourceError):
    """An evaluation folder's report.json is missing or not an evaluation's report."""


class EvalFolder:
    """One evaluation's output folder, shown at `evals/<slug>.html`."""

    def __init__(self, path: str | Path, slug: str) -> None:
        self.path = Path(path)
        self.slug = slug
        self.name = self.path.absolute().name or str(self.path)

    @property
    def transcripts(self) -> Path:
        return self.path / "transcripts"

    def report(self) -> dict[str, Any]:
        """The report, checked; EvalReportError (one line) when it is missing or garbled."""
        where = self.path / REPORT
        try:
            if where.stat().st_size > MAX_REPORT:
                raise EvalReportError(f"{where}: larger than {MAX_REPORT >> 20} MiB")
            text = where.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise EvalReportError(
                f"{where} does not exist: no evaluation has finished in {self.path} "
                "(freemad eval run or rescore --out writes it)"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise EvalReportError(f"{where} cannot be read: {reason}") from None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise EvalReportError(f"{where} is not valid JSON: {exc}") from None
        try:
            check_report(data)
        except ReportShapeError as exc:
            raise EvalReportError(f"{where} is not an evaluation's report: {exc}") from None
        assert isinstance(data, dict)  # check_report says so
        return data


def eval_folders(paths: Sequence[str | Path]) -> list[EvalFolder]:
    """The folders named, each a folder (else SourceError), with page names from their own
    names, made distinct in the order given (`eval`, `eval-2`, ...)."""
    folders: list[EvalFolder] = []
    taken: set[str] = set()
    for given in paths:
        path = Path(given)
        if not path.is_dir():
            raise SourceError(f"evaluation folder {path} does not exist or is not a folder")
        base = _NOT_SLUG.sub("-", path.absolute().name.lower()).strip("-")[:40] or "eval"
        folders.append(EvalFolder(path, unique_name(base, taken)))
    return folders


def eval_sources(folders: Sequence[EvalFolder], warn: Warn) -> list[Source]:
    """Each folder's `transcripts/` as a debate source (read once it exists), so the items'
    debates have pages the evaluation's page links to."""
    sources: list[Source] = []
    for folder in folders:
        path = folder.transcripts
        if path.is_dir():
            sources.append(TranscriptDir(path, warn))
        else:
            make = functools.partial(TranscriptDir, path, warn)
            sources.append(Later(SourceKind.EVAL_TRANSCRIPTS, path, make))
    return sources
