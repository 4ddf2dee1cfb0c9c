"""`freemad site build`: every run as a page of a static site (GitHub Pages, or a folder)."""

from __future__ import annotations

import re
import sys

import click

from freemad.cli.options import config_option, store_options

_URL = re.compile(r"https?://[^\s\"'<>]+")


@click.group("site")
def site_group() -> None:
    """The static dashboards: an index of every run and a page per run.

    \b
    Examples:
      freemad site build                    # the runs of the config found here, into _site/
      freemad site build --evolve-store toy/.freemad/evolve/evolve.db
      freemad site build --transcripts transcripts --task-store .freemad/tasks/tasks.db \\
          --evolve-store .freemad/evolve/evolve.db --out _site --base-url https://me.github.io/repo/
      freemad site build --eval eval/ --eval eval-he/   # evaluations' reports
    """


@site_group.command("build")
@click.option(
    "--transcripts",
    "transcripts",
    metavar="DIR",
    help="Folder of JSON debate transcripts (output.transcript_dir).",
)
@store_options
@click.option(
    "--state-dir",
    metavar="DIR",
    help="A checkout of the GitHub state branch (freemad-state): the Action's and bot's runs.",
)
@click.option(
    "--out",
    default="_site",
    show_default=True,
    metavar="DIR",
    help="Where the site goes (made if absent).",
)
@config_option(
    "The config whose transcripts and stores are read when not named (default: found from the "
    "current folder upward, else the built-in)."
)
@click.option(
    "--base-url",
    metavar="URL",
    help="Where the site will be served (canonical links); links stay relative either way.",
)
@click.option(
    "--commit-url",
    metavar="URL",
    help="A commit's web page with {commit} for its hash, e.g. "
    "https://github.com/OWNER/REPO/commit/{commit}; evolve versions link to it.",
)
@click.option(
    "--eval",
    "evals",
    metavar="DIR",
    multiple=True,
    help="An evaluation's folder (freemad eval run/rescore --out): a page of its report.json, "
    "its transcripts/ as debates; repeat for several.",
)
@click.option("--quiet", "-q", is_flag=True, help="Only errors and warnings.")
def build(
    transcripts: str | None,
    task_store: str | None,
    evolve_store: str | None,
    state_dir: str | None,
    out: str,
    base_url: str | None,
    commit_url: str | None,
    evals: tuple[str, ...],
    quiet: bool,
    config_path: str | None,
) -> None:
    """Build (or update) the static site in --out.

    A source not named is the config's own (output.transcript_dir, task.store_path,
    evolve.store_path), read if it exists; a named one must exist. Only runs that changed since
    the last build are rendered again. The pages need no server and load nothing from another
    host: open index.html, or publish the folder.
    """
    from pathlib import Path

    from freemad.cli.loading import load_config
    from freemad.config.discover import beside_named
    from freemad.dashboard.reading.eval_folders import eval_folders
    from freemad.dashboard.reading.sources import build_sources
    from freemad.dashboard.run_records import SourceError
    from freemad.dashboard.static_site import build_site

    named = {
        "--transcripts": transcripts,
        "--task-store": task_store,
        "--evolve-store": evolve_store,
        "--state-dir": state_dir,
    }
    for option, path in named.items():
        if path is not None and not Path(path).exists():
            raise SourceError(f"{option} {path}: no such file or folder")
    if state_dir is None:  # the config's own runs, where they exist
        transcripts, task_store, evolve_store = beside_named(
            load_config(config_path).config, transcripts, task_store, evolve_store
        )
    folders = eval_folders(evals)  # each a folder, else one line
    if not any((transcripts, task_store, evolve_store, state_dir, folders)):
        raise click.UsageError(
            "no runs yet here (no transcripts or stores of the config found from this folder); "
            "name at least one source: --transcripts, --task-store, --evolve-store, --state-dir "
            "or --eval"
        )
    for name, url in (("--base-url", base_url), ("--commit-url", commit_url)):
        if url is not None and not _URL.fullmatch(url):
            raise click.BadParameter("an http(s) URL, without spaces or quotes", param_hint=name)
    if commit_url is not None and "{commit}" not in commit_url:
        raise click.BadParameter("must contain {commit}", param_hint="--commit-url")

    def warn(message: str) -> None:
        click.echo(f"freemad: warning: {' '.join(message.split())}", err=True)

    sources = build_sources(
        transcripts=transcripts,
        task_store=task_store,
        evolve_store=evolve_store,
        state_dir=state_dir,
        warn=warn,
    )

    def progress(done: int, total: int) -> None:
        if not quiet and sys.stderr.isatty():
            click.echo(f"\r{done}/{total} runs", err=True, nl=done == total)

    report = build_site(
        sources,
        out,
        base_url=base_url,
        commit_url=commit_url,
        warn=warn,
        progress=progress,
        evals=folders,
    )
    if not quiet:
        click.echo(report.line(Path(out)))
