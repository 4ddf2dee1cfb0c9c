"""A config file the browser edits, and its last versions: every save replaces the file at once
(a temporary file beside it, then a rename) after keeping what it held in a history folder beside
it, and only when the file is still the version the editor started from; a save of the text it
already holds changes nothing. One lock file beside the config makes that check and the write one
step across threads and gunicorn's workers, so of two saves from the same version the later is
told the file changed and nothing is lost.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

KEEP = 10  # versions kept in the history folder
MAX_TEXT = 256 * 1024  # characters of a config the editor takes
_KEPT = re.compile(r"(\d{13})-([0-9a-f]{12})\.(?:ya?ml|json)")  # a kept version's file name
VERSION = re.compile(r"[0-9a-f]{64}")  # a file's version: the SHA-256 of its bytes


class StaleEdit(Exception):
    """The file is not the version the edit started from: another save came first."""


class NoSuchVersion(Exception):
    """No kept version has that name."""


def version_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Kept:
    """One kept version: its name (what the browser sends back), when it was replaced, and its
    version (the SHA-256 of its bytes)."""

    name: str
    saved_at: float
    version: str


class ConfigFile:
    """The config at `path`; its history in `.<file name>.history/` beside it. A symbolic link
    is followed, so a save replaces the file it points to and the link stays."""

    def __init__(self, path: str | Path) -> None:
        self.given = Path(path)

    @property
    def path(self) -> Path:
        return self.given.resolve()  # where a link points now

    @property
    def history(self) -> Path:
        return self.path.parent / f".{self.path.name}.history"

    @property
    def _lock(self) -> Path:
        return self.path.parent / f".{self.path.name}.lock"

    def read(self) -> tuple[str, str]:
        """The file's text and its version."""
        data = self.path.read_bytes()
        return data.decode("utf-8"), version_of(data)

    def kept(self) -> list[Kept]:
        """The kept versions, newest first."""
        if not self.history.is_dir():
            return []
        found = []
        for entry in self.history.iterdir():
            match = _KEPT.fullmatch(entry.name)
            if match and entry.is_file():
                found.append((int(match[1]), entry))
        found.sort(reverse=True)
        return [
            Kept(entry.name, millis / 1000, version_of(entry.read_bytes()))
            for millis, entry in found[:KEEP]
        ]

    def kept_text(self, name: str) -> str:
        """The text of the kept version `name`."""
        if not _KEPT.fullmatch(name) or not (self.history / name).is_file():
            raise NoSuchVersion(name)
        return (self.history / name).read_bytes().decode("utf-8")

    def save(self, text: str, base: str) -> str:
        """Replace the file with `text` if it is still version `base` (else StaleEdit), keeping
        what it held; the new version. Text the file already holds changes nothing (the version
        is `base`): a kept copy of it would push a real version out of the last KEEP."""
        data = text.encode("utf-8")
        with self._locked():
            before = self.path.read_bytes()
            if version_of(before) != base:
                raise StaleEdit(version_of(before))
            if data == before:
                return base
            self._keep(before)
            self._replace(data)
        return version_of(data)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self._lock, "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # let go when the file closes, or the process ends
            yield

    def _keep(self, data: bytes) -> None:
        self.history.mkdir(mode=0o700, exist_ok=True)
        millis = max(int(time.time() * 1000), self._newest() + 1)  # names sort as saves did
        suffix = self.path.suffix if self.path.suffix in (".yaml", ".yml", ".json") else ".yaml"
        name = f"{millis:013d}-{version_of(data)[:12]}{suffix}"
        _write_atomically(self.history / name, data, 0o600)
        for old in sorted(self._names(), reverse=True)[KEEP:]:
            (self.history / old).unlink(missing_ok=True)

    def _names(self) -> list[str]:
        return [e.name for e in self.history.iterdir() if _KEPT.fullmatch(e.name)]

    def _newest(self) -> int:
        names = self._names()
        return max((int(n[:13]) for n in names), default=0)

    def _replace(self, data: bytes) -> None:
        try:
            mode = self.path.stat().st_mode & 0o777
        except OSError:
            mode = 0o600
        _write_atomically(self.path, data, mode)


def _write_atomically(path: Path, data: bytes, mode: int) -> None:
    """`data` into `path` all at once: written and flushed to a file beside it, then renamed."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
