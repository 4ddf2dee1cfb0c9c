"""The static site: `index.html` and `runs/<run_id>.html` for every run, ready for GitHub Pages.

A rebuild renders only the runs whose fingerprint changed since the last build (the manifest,
`.freemad-site.json`, remembers each run's fingerprint and index entry) and removes the pages of
runs that are gone. A new FREE-MAD version or changed templates rebuild everything. Pages are
written to a temporary file and renamed into place, so a reader never sees half a page.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import multiprocessing as mp
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pygments

from freemad import __version__
from freemad.dashboard.reading.eval_folders import EVAL_SLUG, EvalFolder, eval_sources
from freemad.dashboard.reading.sources import (
    RUN_ID,
    IndexFacts,
    Run,
    Source,
    TranscriptDir,
    agent_records,
    all_runs,
)
from freemad.dashboard.views.agent_views import AGENT_SLUG, agent_view, agents_table
from freemad.dashboard.views.eval_views import eval_summary, eval_view
from freemad.dashboard.views.html_pages import (
    render_agent,
    render_agents,
    render_eval,
    render_index,
    render_run,
    render_summary,
)
from freemad.dashboard.views.summary_views import summary_view
from freemad.errors import FreemadError

MANIFEST = ".freemad-site.json"


class SiteError(FreemadError):
    """The output folder cannot be written: bad input, so exit status 2 (docs/dashboards.md)."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class BuildReport:
    runs: int
    rendered: int
    unchanged: int
    removed: int
    failed: int
    seconds: float

    def line(self, out: Path) -> str:
        return (
            f"{out}: {self.runs} run(s); {self.rendered} page(s) rendered, {self.unchanged} "
            f"unchanged, {self.removed} removed{f', {self.failed} failed' if self.failed else ''} "
            f"in {self.seconds:.1f} s"
        )


@functools.lru_cache(maxsize=1)
def site_version() -> str:
    """Changes with FREE-MAD's version, any template or dashboard module, and the version of
    Pygments (which highlights the pages' code)."""
    digest = hashlib.sha256(f"{__version__}\0{pygments.__version__}".encode())
    package = resources.files("freemad")
    for folder in ("templates/dashboard", "dashboard"):
        for item in sorted(package.joinpath(folder).iterdir(), key=lambda p: p.name):
            if item.name.endswith((".j2", ".css", ".js", ".py")):
                digest.update(item.name.encode() + b"\0" + item.read_bytes())
    for name in ("evolve/run_report.py", "evolve/chart.py", "core/answer_identity.py"):
        digest.update(package.joinpath(name).read_bytes())
    return digest.hexdigest()[:16]


def build_site(
    sources: Sequence[Source],
    out: str | Path,
    *,
    base_url: str | None = None,
    commit_url: str | None = None,
    warn: Callable[[str], None] = lambda _: None,
    progress: Callable[[int, int], None] | None = None,
    evals: Sequence[EvalFolder] = (),
) -> BuildReport:
    """The site of `sources`' runs and of the evaluations `evals` (a report that is missing
    or garbled stops the build before it writes anything: EvalReportError)."""
    started = time.perf_counter()
    reports = [(evaluation, evaluation.report()) for evaluation in evals]
    sources = [*sources, *eval_sources(evals, warn)]
    folder = Path(out)
    pages = folder / "runs"
    try:
        pages.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SiteError(f"cannot create {pages}: {exc.strerror or exc}") from None
    settings = {"version": site_version(), "base_url": base_url, "commit_url": commit_url}
    old, caches = _read_manifest(folder, settings)
    for n, source in enumerate(sources):
        if isinstance(source, TranscriptDir):
            source.import_cache(caches.get(f"{n}:{source.path}"))
    runs = all_runs(sources)
    manifest: dict[str, Any] = {**settings, "runs": {}, "caches": {}}
    unchanged, todo = 0, []
    for run in runs:
        before = old.get(run.run_id)
        if before and before.get("fingerprint") == run.fingerprint and _page(pages, run).exists():
            unchanged += 1
            manifest["runs"][run.run_id] = {"fingerprint": run.fingerprint}
        else:
            todo.append(run)
    results = _render_all(todo, pages, base_url, commit_url, progress)
    failed = 0
    for run, problem in zip(todo, results, strict=True):
        if problem is None:
            manifest["runs"][run.run_id] = {"fingerprint": run.fingerprint}
        else:
            warn(problem)
            failed += 1
    facts = IndexFacts()
    facts.import_(caches.get("index"))
    entries = facts.entries([run for run in runs if run.run_id in manifest["runs"]])
    rendered = len(todo) - failed
    removed = 0
    for run_id in set(old) - set(manifest["runs"]):
        with contextlib.suppress(FileNotFoundError):
            (pages / f"{run_id}.html").unlink()
            removed += 1
    listed_evals = _write_evals(folder, reports, set(manifest["runs"]), base_url)
    _write(folder / "index.html", render_index(entries, base_url=base_url, evals=listed_evals))
    _write(folder / ".nojekyll", "")  # Pages serves the files as they are
    records = agent_records()
    records.import_(caches.get("agents"))
    listed = [run for run in runs if run.run_id in manifest["runs"]]
    _write_agents(folder, records.of(listed), base_url)
    for n, source in enumerate(sources):
        if isinstance(source, TranscriptDir):
            manifest["caches"][f"{n}:{source.path}"] = source.export_cache()
    manifest["caches"]["index"] = facts.export()
    manifest["caches"]["agents"] = records.export()
    _write(folder / MANIFEST, json.dumps(manifest, separators=(",", ":")))
    return BuildReport(
        len(runs), rendered, unchanged, removed, failed, time.perf_counter() - started
    )


def _write_agents(folder: Path, records: list[dict[str, Any]], base_url: str | None) -> None:
    """`agents.html` and `agents/<slug>.html` for each agent of the runs' `records`, and the
    summaries (`summary.html`); the pages of agents gone go."""
    table = agents_table(records)
    _write(folder / "summary.html", render_summary(summary_view(records), base_url=base_url))
    pages = folder / "agents"
    try:
        pages.mkdir(exist_ok=True)
    except OSError as exc:
        raise SiteError(f"cannot create {pages}: {exc.strerror or exc}") from None
    _write(folder / "agents.html", render_agents(table, base_url=base_url))
    for row in table:
        _write(pages / f"{row['slug']}.html", render_agent(agent_view(row), base_url=base_url))
    kept = {f"{row['slug']}.html" for row in table}
    for page in pages.glob("*.html"):  # only names agent_slug makes: nothing else is ours
        if page.name not in kept and AGENT_SLUG.fullmatch(page.stem):
            with contextlib.suppress(FileNotFoundError):
                page.unlink()


def _write_evals(
    folder: Path,
    reports: Sequence[tuple[EvalFolder, dict[str, Any]]],
    shown: set[str],
    base_url: str | None,
) -> list[dict[str, Any]]:
    """`evals/<slug>.html` for each evaluation (linking the debates of `shown`, the runs with a
    page); the pages of evaluations not named go. What the index lists of them."""
    views = [(f, eval_view(f.name, report, shown)) for f, report in reports]
    pages = folder / "evals"
    if views:
        try:
            pages.mkdir(exist_ok=True)
        except OSError as exc:
            raise SiteError(f"cannot create {pages}: {exc.strerror or exc}") from None
    for evaluation, view in views:
        _write(
            pages / f"{evaluation.slug}.html", render_eval(view, evaluation.slug, base_url=base_url)
        )
    kept = {f"{evaluation.slug}.html" for evaluation, _ in views}
    if pages.is_dir():
        for page in pages.glob("*.html"):  # only names eval_folders makes: nothing else is ours
            if page.name not in kept and EVAL_SLUG.fullmatch(page.stem):
                with contextlib.suppress(FileNotFoundError):
                    page.unlink()
    return [{"name": f.name, "slug": f.slug, **eval_summary(report)} for f, report in reports]


def _page(pages: Path, run: Run) -> Path:
    return pages / f"{run.run_id}.html"


# Set in the parent just before the pool forks; the children read it (Runs hold loaders, which
# do not pickle, so the children get them by inheritance and are sent indexes only).
_JOB: list[tuple[Sequence[Run], Path, str | None, str | None]] = []
PARALLEL_FROM = 200  # fewer pages than this render in the calling process
CHUNK = 100


def _render_all(
    runs: Sequence[Run],
    pages: Path,
    base_url: str | None,
    commit_url: str | None,
    progress: Callable[[int, int], None] | None,
) -> list[str | None]:
    """Render and write every run's page; None for each success, else the warning to give."""
    workers = min(len(os.sched_getaffinity(0)), 8) if hasattr(os, "sched_getaffinity") else 1
    if len(runs) < PARALLEL_FROM or workers < 2 or "fork" not in mp.get_all_start_methods():
        problems = []
        for done, run in enumerate(runs, start=1):
            problems.append(_render(run, pages, base_url, commit_url))
            if progress is not None and (done % 500 == 0 or done == len(runs)):
                progress(done, len(runs))
        return problems
    _JOB[:] = [(runs, pages, base_url, commit_url)]
    try:
        chunks = [range(i, min(i + CHUNK, len(runs))) for i in range(0, len(runs), CHUNK)]
        results: list[str | None] = [None] * len(runs)
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork")) as pool:
            done = 0
            for chunk, problems in zip(chunks, pool.map(_render_chunk, chunks), strict=True):
                for index, problem in zip(chunk, problems, strict=True):
                    results[index] = problem
                done += len(chunk)
                if progress is not None:
                    progress(done, len(runs))
        return results
    finally:
        _JOB.clear()


def _render_chunk(indexes: range) -> list[str | None]:
    runs, pages, base_url, commit_url = _JOB[0]
    return [_render(runs[i], pages, base_url, commit_url) for i in indexes]


def _render(run: Run, pages: Path, base_url: str | None, commit_url: str | None) -> str | None:
    try:
        html = render_run(run.load(), commit_url=commit_url, base_url=base_url)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        # A run this version cannot make sense of: say which and go on with the others.
        return f"{run.origin}: run {run.run_id} cannot be shown: {type(exc).__name__}: {exc}"
    _write(_page(pages, run), html)
    return None


def _read_manifest(
    folder: Path, settings: dict[str, Any]
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The last build's runs (fingerprints) and sources' caches; empty if its settings differ."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, {}
    if not isinstance(data, dict) or any(data.get(k) != v for k, v in settings.items()):
        return {}, {}  # another version or other settings: every page is rendered again
    runs, caches = data.get("runs"), data.get("caches")
    return (
        # Only run ids: a name from this file is unlinked in runs/, so "../x" must never pass.
        {k: v for k, v in runs.items() if isinstance(v, dict) and RUN_ID.fullmatch(k)}
        if isinstance(runs, dict)
        else {},
        caches if isinstance(caches, dict) else {},
    )


def _write(path: Path, text: str) -> None:
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise SiteError(f"cannot write {path}: {exc.strerror or exc}") from None
