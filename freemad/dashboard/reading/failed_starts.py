"""Why a run started from the browser failed, kept where every worker of the server can read it.

A debate that fails leaves no transcript (its live journal goes with it), so its page, which the
browser was sent to when it started, would only say "no run". The process that watched it writes
one small file per failure into a hidden folder of the transcripts folder (`.failed-starts/`,
which the transcripts folder's readers skip, as they skip every hidden name); the page and
`/api/runs/<id>` of a run that cannot be found then give that reason. The newest `KEEP` are kept.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from freemad.store.store_port import RUN_ID

FOLDER = ".failed-starts"
KEEP = 200  # failures kept; older ones go when a new one is written
MAX_REASON = 500  # characters of a reason kept
_MAX_FILE = 8192  # bytes read of a kept failure: ours are far smaller, anything larger is not


class FailedStarts:
    """The failures of runs this dashboard started, one JSON file each, by run id."""

    def __init__(self, transcripts: Path) -> None:
        self.folder = transcripts / FOLDER

    def record(self, run_id: str, kind: str, reason: str) -> None:
        """Keep why `run_id` failed. Raises OSError when the folder cannot be written."""
        if not RUN_ID.fullmatch(run_id):
            return
        line = " ".join(reason.split())[:MAX_REASON] or "no reason given"
        entry = {"run_id": run_id, "kind": kind, "reason": line, "failed_at": time.time()}
        self.folder.mkdir(mode=0o700, exist_ok=True)
        if self.folder.is_symlink():  # whoever made it a link chose where we would write
            raise OSError(f"{self.folder} is a symbolic link; not writing through it")
        handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(entry, out)
            os.replace(temporary, self.folder / f"{run_id}.json")
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        self._prune()

    def reason(self, run_id: str) -> str | None:
        """Why `run_id` failed, or None when no failure of it is kept (or it cannot be read)."""
        if not RUN_ID.fullmatch(run_id):
            return None
        try:
            with (self.folder / f"{run_id}.json").open("rb") as kept:
                entry = json.loads(kept.read(_MAX_FILE))
        except (OSError, ValueError):
            return None
        reason = entry.get("reason") if isinstance(entry, dict) else None
        return reason if isinstance(reason, str) and reason else None

    def since(self, when: float) -> list[tuple[float, str]]:
        """(time, run id) of each failure kept at or after `when` (Unix time), for the event
        stream: an open page of the run learns it is gone."""
        found = []
        try:
            with os.scandir(self.folder) as entries:
                for entry in entries:
                    run_id = entry.name.removesuffix(".json")
                    if run_id == entry.name or not RUN_ID.fullmatch(run_id):
                        continue
                    written = entry.stat().st_mtime_ns / 1e9
                    if written >= when:
                        found.append((written, run_id))
        except OSError:
            return []
        return sorted(found)

    def _prune(self) -> None:
        try:
            with os.scandir(self.folder) as entries:
                kept = [e for e in entries if e.name.endswith(".json") and e.is_file()]
            kept.sort(key=lambda e: e.stat().st_mtime_ns, reverse=True)
        except OSError:
            return
        for entry in kept[KEEP:]:
            Path(entry.path).unlink(missing_ok=True)
