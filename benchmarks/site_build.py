"""How long `freemad site build` takes for 10,000 debate transcripts (target: under 30 s).

One real debate with the bundled mock agents (three agents, two critique rounds) gives the
transcript; it is copied N times with a different run id, requirement and start time each, so
every page is rendered from a real transcript's shape. Three builds: the first (every page),
a rebuild with nothing changed (only the index), and a rebuild after 1% of the transcripts
changed.

Run: .venv/bin/python benchmarks/site_build.py [--transcripts 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from _common import emit, machine, progress

from freemad.config import default_config
from freemad.dashboard.reading.sources import TranscriptDir
from freemad.dashboard.static_site import build_site
from freemad.debate import run_debate, write_transcript
from freemad.redact import Redactor
from freemad.wiring import ADAPTERS

TARGET_S = 30.0


def make_transcripts(folder: Path, count: int) -> int:
    config = default_config()
    result = run_debate(
        "Write a function that returns Fibonacci(n).", config, rounds=2, adapters=ADAPTERS
    )
    template = json.loads(
        write_transcript(
            result, config.output.model_copy(update={"transcript_dir": str(folder)}), Redactor([])
        ).read_text()
    )
    for old in folder.iterdir():
        old.unlink()
    size = 0
    for i in range(count):
        data = dict(template)
        data["run_id"] = f"{i:08x}{template['run_id'][8:]}"
        data["requirement"] = f"{template['requirement']} (variant {i})"
        data["started_at"] = f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00.000Z"
        text = json.dumps(data, indent=2)
        size = len(text)
        (folder / f"transcript-{i:06d}.json").write_text(text)
    return size


def timed_build(source: TranscriptDir, out: Path) -> tuple[float, dict[str, int]]:
    started = time.perf_counter()
    report = build_site([source], out)
    seconds = time.perf_counter() - started
    return seconds, {"rendered": report.rendered, "unchanged": report.unchanged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="freemad-site-bench-") as tmp:
        transcripts, out = Path(tmp) / "transcripts", Path(tmp) / "site"
        transcripts.mkdir()
        progress(f"writing {args.transcripts} transcripts")
        size = make_transcripts(transcripts, args.transcripts)
        warnings: list[str] = []
        source = TranscriptDir(transcripts, warnings.append)
        progress("first build")
        first, first_counts = timed_build(TranscriptDir(transcripts, warnings.append), out)
        progress("rebuild, nothing changed")
        again, again_counts = timed_build(source, out)
        changed = max(1, args.transcripts // 100)
        for i in range(changed):
            path = transcripts / f"transcript-{i * 100:06d}.json"
            path.write_text(path.read_text().replace("(variant", "(changed variant"))
            os.utime(path, ns=(time.time_ns() + 1_000_000_000, time.time_ns() + 1_000_000_000))
        progress(f"rebuild, {changed} changed")
        partial, partial_counts = timed_build(TranscriptDir(transcripts, warnings.append), out)
        index_bytes = (out / "index.html").stat().st_size
        page_bytes = next((out / "runs").iterdir()).stat().st_size
    emit(
        {
            "benchmark": "site_build",
            "transcripts": args.transcripts,
            "transcript_bytes": size,
            "first_build_s": round(first, 2),
            "first_build_ms_per_run": round(first * 1000 / args.transcripts, 3),
            "first_build_counts": first_counts,
            "rebuild_unchanged_s": round(again, 2),
            "rebuild_unchanged_counts": again_counts,
            "rebuild_1pct_changed_s": round(partial, 2),
            "rebuild_1pct_changed_counts": partial_counts,
            "index_bytes": index_bytes,
            "page_bytes": page_bytes,
            "warnings": len(warnings),
            "target_s": TARGET_S,
            "within_target": first < TARGET_S,
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
