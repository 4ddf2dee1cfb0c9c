"""An on-disk memo of successful agent replies, keyed by everything that can change a reply."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from freemad import __version__

FORMAT = 1


def cache_key(**parts: Any) -> str:
    """A digest of the parts (agent config, argv, mode, prompt, ...) plus the cache format."""
    material = json.dumps({"format": FORMAT, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(material.encode()).hexdigest()


class ResponseCache:
    """One JSON file per key. Only successes are ever put here: a failure must be retried."""

    def __init__(self, directory: str | Path, max_entries: int) -> None:
        self.root = Path(directory)
        self.max_entries = max_entries

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used entries survive eviction
        value = entry.get("value")
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({"key": key, "freemad": __version__, "value": value})
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._evict()

    def _evict(self) -> None:
        entries = [p for p in self.root.glob("*/*.json") if p.is_file()]
        excess = len(entries) - self.max_entries
        if excess <= 0:
            return
        entries.sort(key=lambda p: p.stat().st_mtime)
        for path in entries[:excess]:
            with contextlib.suppress(OSError):
                path.unlink()
