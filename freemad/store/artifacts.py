"""Content-addressed artifact files: <root>/<run_id>/<sha256[:2]>/<sha256>, written atomically."""

from __future__ import annotations

import hashlib
import os
import tempfile
from contextlib import suppress
from pathlib import Path

from freemad.store.store_port import ArtifactCorrupt, StoreError


def sha256_hex(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def artifact_id(run_id: str, name: str, sha256: str) -> str:
    """Derived from what makes an artifact the same, so a repeated put finds the same row."""
    key = "\0".join((run_id, name, sha256)).encode()
    return hashlib.sha256(key).hexdigest()[:32]


def relative_path(run_id: str, sha256: str) -> str:
    return f"{run_id}/{sha256[:2]}/{sha256}"


def ensure_file(path: Path, content: bytes, sha256: str, *, fsync: bool) -> None:
    """Leave `path` holding `content`: skip the write when an intact copy is already there."""
    if _intact(path, sha256):
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(content)
                out.flush()
                if fsync:
                    os.fsync(out.fileno())
            os.replace(temp, path)
        except BaseException:
            with suppress(OSError):
                os.unlink(temp)
            raise
        if fsync:  # make the rename itself durable before the row that points at it
            folder = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
    except OSError as exc:
        raise StoreError(f"cannot write artifact {path}: {exc.strerror or exc}") from exc


def read_verified(path: Path, sha256: str) -> bytes:
    """The file's bytes, provided they still hash to `sha256`."""
    try:
        content = path.read_bytes()
    except FileNotFoundError as exc:
        raise ArtifactCorrupt(f"artifact file {path} is missing") from exc
    except OSError as exc:
        raise StoreError(f"cannot read artifact {path}: {exc.strerror or exc}") from exc
    actual = sha256_hex(content)
    if actual != sha256:
        raise ArtifactCorrupt(
            f"artifact file {path} does not match its recorded sha256"
            f" (expected {sha256[:12]}…, found {actual[:12]}…)"
        )
    return content


def _intact(path: Path, sha256: str) -> bool:
    try:
        return sha256_hex(path.read_bytes()) == sha256
    except OSError:
        return False
