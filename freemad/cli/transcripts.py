"""`freemad transcript list|show`: the debates kept in the transcripts folder, and one in full,
each agent's replies as it gave them and the end of a failed CLI's stderr included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from freemad.cli.options import config_option
from freemad.errors import UsageError

_FOLDER_HELP = "The transcripts folder (default: output.transcript_dir of the config)."


@click.group("transcript")
def transcript_group() -> None:
    """The debates kept in the transcripts folder (output.transcript_dir).

    \b
    Examples:
      freemad transcript list
      freemad transcript show                  # the newest debate, every reply as it came
      freemad transcript show 3f2a9c           # a run id, or its first characters
      freemad transcript show transcripts/transcript-20261207T101500Z-3f2a9c0d1e2f.json --json
    """


def _folder(folder: str | None, config_path: str | None) -> Path:
    if folder is not None:
        return Path(folder)
    from freemad.cli.loading import load_config

    return Path(load_config(config_path).config.output.transcript_dir)


def _kept(folder: Path) -> list[Path]:
    """The transcripts in `folder`, oldest first (their names begin with when they started)."""
    if not folder.is_dir():
        raise UsageError(f"no transcripts in {folder}: no such folder")
    return sorted(p for p in folder.glob("transcript-*") if p.suffix in (".json", ".md"))


def _read(path: Path) -> dict[str, Any]:
    """A JSON transcript in the full shape; a one-line error for a file that is not one."""
    from freemad.debate.transcript_format import expand

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path} is not a readable transcript: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("transcript"), list):
        raise UsageError(f"{path} is not a FREE-MAD transcript (no rounds in it)")
    return expand(data)


def _find(run: str | None, folder: Path) -> Path:
    """`run`: a run id or its first characters; None: the newest."""
    kept = _kept(folder)
    if run is None:
        if not kept:
            raise UsageError(f"no transcripts in {folder} yet: run a debate first")
        return kept[-1]
    # A name ends with the run id's first 12 characters (and a counter if that was taken).
    found = [p for p in kept if p.stem.split("Z-", 1)[-1].startswith(run[:12])]
    if len(found) > 1 and len(run) > 12:
        found = [p for p in found if p.suffix == ".md" or _read(p)["run_id"].startswith(run)]
    if not found:
        raise UsageError(
            f"no transcript of run {run!r} in {folder}", hint="freemad transcript list shows them"
        )
    if len(found) > 1:
        names = ", ".join(p.name for p in found[:5])
        raise UsageError(f"{run!r} names {len(found)} transcripts ({names}): give more of the id")
    return found[0]


@transcript_group.command("list")
@click.option("--dir", "folder", metavar="DIR", help=_FOLDER_HELP)
@config_option()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per transcript.")
def list_transcripts(folder: str | None, config_path: str | None, as_json: bool) -> None:
    """The kept debates, oldest first: when, run id, status, winner and requirement."""
    rows = []
    for path in _kept(_folder(folder, config_path)):
        if path.suffix == ".md":
            rows.append({"path": str(path), "run_id": None, "status": "markdown"})
            continue
        try:
            data = _read(path)
        except UsageError as exc:
            rows.append({"path": str(path), "run_id": None, "status": f"unreadable: {exc}"})
            continue
        rows.append(
            {
                "path": str(path),
                "run_id": data.get("run_id"),
                "started_at": data.get("started_at"),
                "status": data.get("status"),
                "winner": data.get("final_answer_id"),
                "requirement": " ".join(str(data.get("requirement", "")).split())[:60],
            }
        )
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    if not rows:
        click.echo("No transcripts yet.")
    for row in rows:
        if row["run_id"] is None:
            click.echo(f"{row['path']}  ({row['status']})")
            continue
        click.echo(
            f"{str(row['started_at'])[:19]}  {str(row['run_id'])[:12]}  {row['status']:<9}  "
            f"{row['winner'] or '-':<10}  {row['requirement']}"
        )


@transcript_group.command("show")
@click.argument("run", required=False)
@click.option("--dir", "folder", metavar="DIR", help=_FOLDER_HELP)
@config_option()
@click.option("--json", "as_json", is_flag=True, help="The whole transcript as JSON.")
def show_transcript(
    run: str | None, folder: str | None, config_path: str | None, as_json: bool
) -> None:
    """One debate in full: its result, then every round, each agent's reply as it gave it
    (parsed or not) and the end of a failed CLI's stderr. RUN: a run id (or its first
    characters) or a transcript's path; the newest when omitted."""
    from freemad.debate.transcript import render_markdown

    given = run is not None and Path(run).is_file()
    path = Path(run) if given and run else _find(run, _folder(folder, config_path))
    if path.suffix == ".md":
        click.echo(path.read_text(encoding="utf-8", errors="replace"), nl=False)
        return
    data = _read(path)
    click.echo(json.dumps(data, indent=2) if as_json else render_markdown(data))
