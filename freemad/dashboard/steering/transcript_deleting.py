"""Deleting a debate's transcript from the browser: `POST /api/runs/<run_id>/delete`, only with
`--allow-start`, behind the start token and the CSRF check every POST of the dashboard passes
(`Starter.refused`).

Only a finished debate's JSON transcript, in one of the transcripts folders the server was started
with, is ever removed, and only that file: not a debate in flight (its journal is the runner's),
not a task's or an evolve run's events (a store is an append-only log), not an evaluation's
transcripts (its report was graded from them). The browser names the run by its id, never a path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from flask import Flask, Response, jsonify

from freemad.dashboard.http_errors import Problem
from freemad.dashboard.reading.sources import Source, is_transcripts_folder
from freemad.dashboard.run_records import Run
from freemad.dashboard.steering.starter import Starter


def transcript_folders(sources: Sequence[Source]) -> tuple[Path, ...]:
    """The transcripts folders among `sources` (those not there yet included), resolved."""
    return tuple(Path(source.path).resolve() for source in sources if is_transcripts_folder(source))


class Deleter:
    """Removes a finished debate's transcript from one of `folders`; `find` is the dashboard's
    lookup of a run by id (a 404 when there is none)."""

    def __init__(
        self, starter: Starter, folders: Sequence[Path], find: Callable[[str], Run]
    ) -> None:
        self.starter = starter
        self.folders = tuple(folders)
        self.find = find

    def register(self, app: Flask) -> None:
        app.add_url_rule(
            "/api/runs/<run_id>/delete",
            endpoint="delete_run",
            view_func=self.delete,
            methods=["POST"],
        )

    def delete(self, run_id: str) -> tuple[Response, int]:
        refused = self.starter.refused()
        if refused is not None:
            return refused
        run = self.find(run_id)
        path = self._transcript(run)
        try:
            os.unlink(path)  # a symbolic link is removed, never what it points to
        except FileNotFoundError:
            raise Problem(404, f"no run {run.run_id}") from None
        except OSError as exc:
            raise Problem(500, f"run {run.run_id} could not be deleted: {exc.strerror}") from None
        return jsonify({"done": f"deleted run {run.run_id}", "deleted": run.run_id}), 200

    def deletable(self, run: Run) -> bool:
        """Whether `run`'s page offers its delete form."""
        try:
            self._transcript(run)
        except Problem:
            return False
        return True

    def _transcript(self, run: Run) -> Path:
        """The file to remove, or the refusal (409) that says why there is none."""
        if run.kind != "debate":
            raise Problem(
                409, f"only debates can be deleted here; run {run.run_id} is a {run.kind}"
            )
        if run.status == "running":
            raise Problem(409, f"debate {run.run_id} is still running; delete it once it ends")
        path = Path(run.origin)
        if path.suffix != ".json" or path.parent.resolve() not in self.folders:
            raise Problem(409, f"debate {run.run_id} is not in the dashboard's transcripts folder")
        return path
