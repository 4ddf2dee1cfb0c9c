"""Transcripts on disk: JSON or markdown, redacted, written atomically under a name that never collides."""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import jinja2

from freemad.config.models import OutputConfig
from freemad.debate.debate_record import DebateResult
from freemad.debate.transcript_format import compact
from freemad.redact import Redactor


def transcript_data(
    result: DebateResult, redactor: Redactor, *, compacted: bool = True
) -> dict[str, Any]:
    """The transcript as JSON data, redacted; compacted (format 2, each answer text once)
    unless asked for the full shape. Compacting first leaves less text to redact."""
    data = result.model_dump(mode="json", exclude={"transcript_path"})
    redacted: dict[str, Any] = redactor.data(compact(data) if compacted else data)
    return redacted


def render_markdown(data: dict[str, Any]) -> str:
    """The transcript (in the full shape, `transcript_format.expand`) as markdown."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("freemad", "templates"),
        autoescape=False,  # noqa: S701 - markdown, not HTML
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["fenced"] = fenced
    return env.get_template("transcript.md.j2").render(t=data)


def fenced(text: str) -> str:
    """`text` in a markdown code block whose fence is longer than any run of backticks in
    it: what an agent said cannot close the block and pass for the transcript's own text."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text.rstrip(chr(10))}\n{fence}"


def write_transcript(result: DebateResult, output: OutputConfig, redactor: Redactor) -> Path:
    """Write the transcript into `output.transcript_dir` and return its path."""
    markdown = output.format == "markdown"
    data = transcript_data(result, redactor, compacted=not markdown)
    suffix = ".md" if output.format == "markdown" else ".json"
    text = render_markdown(data) if markdown else json.dumps(data, indent=2)
    folder = Path(output.transcript_dir)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = result.started_at.replace("-", "").replace(":", "").split(".")[0]
    stem = f"transcript-{stamp}Z-{result.run_id[:12]}"
    return _publish(folder, stem, suffix, text)


def _publish(folder: Path, stem: str, suffix: str, text: str) -> Path:
    """Write to a temporary file, then link it into place: readers never see half a file, and an
    existing transcript is never overwritten (a name already taken gets a counter)."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        for attempt in range(1000):
            target = folder / (f"{stem}{suffix}" if attempt == 0 else f"{stem}-{attempt}{suffix}")
            try:
                os.link(tmp, target)
            except FileExistsError:
                continue
            return target
        raise FileExistsError(f"no free transcript name for {stem} in {folder}")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
