"""The container judge's paths and sizes, checked as text: what may go into a `--mount` option,
where a read-only mount may land in the container, the folder stages run in, and sizes like
`512m`. The container sandbox (`freemad.sandbox.container`) checks its paths again once they are
absolute and real, so a path that reaches it another way cannot slip through either."""

from __future__ import annotations

import posixpath
import re

WORK = "/work"  # where the candidate's worktree is mounted in the container
# `--mount` splits its value on ',' and '=' (a ',' in a path would add options of its own,
# `readonly=false` say), docker reads it as CSV (a '"' starts quoting), `-v` splits on ':'.
UNSAFE_IN_MOUNT = (",", ":", '"')
# Where no extra mount may land: the worktree and anything below it (it would hide the
# candidate's files), the private /tmp, and the kernel's own file systems.
RESERVED = ("/work", "/tmp", "/proc", "/sys", "/dev")  # noqa: S108 (in the container)
_SIZE = re.compile(r"([1-9][0-9]*)([kmg])", re.IGNORECASE)
_UNIT = {"k": 1024, "m": 1024**2, "g": 1024**3}


def mount_path_problem(path: str) -> str | None:
    """Why `path` cannot be written into a `--mount` option as it is, or None."""
    for bad in UNSAFE_IN_MOUNT:
        if bad in path:
            return f"{path!r} has a {bad!r}, which would break the --mount option"
    if any(ord(char) < 32 or ord(char) == 127 for char in path):
        return f"{path!r} has a control character"
    return None


def _absolute(path: str) -> str:
    """An absolute container path, normalised ('/data/' -> '/data'); ValueError otherwise."""
    problem = mount_path_problem(path)
    if problem is not None:
        raise ValueError(problem)
    if not path.startswith("/"):
        raise ValueError(f"{path!r} must be an absolute path in the container")
    if ".." in path.split("/"):
        raise ValueError(f"{path!r} must not contain '..'")
    return "/" + posixpath.normpath(path).lstrip("/")  # POSIX keeps a leading "//"


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def mount_target(path: str) -> str:
    """Where a read-only mount lands: absolute, never `/` or a reserved folder or below one."""
    normal = _absolute(path)
    if normal == "/":
        raise ValueError(f"{path!r} would hide the whole container")
    for reserved in RESERVED:
        if _under(normal, reserved):
            raise ValueError(f"{path!r} would shadow {reserved}, which the container keeps")
    return normal


def workdir(path: str) -> str:
    """Where stages run in the container: /work or a folder below it."""
    normal = _absolute(path)
    if not _under(normal, WORK):
        raise ValueError(f"{path!r} must be {WORK} or a folder below it (the worktree)")
    return normal


def size(text: str, minimum: str) -> str:
    """A size like `512m` or `2g` (k, m, g: KiB, MiB, GiB), at least `minimum`, lower-cased."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a size: a whole number and k, m or g, e.g. 512m or 2g")
    if size_bytes(match[0]) < size_bytes(minimum):
        raise ValueError(f"{text!r} is too small: at least {minimum}")
    return match[0].lower()


def size_bytes(text: str) -> int:
    """The bytes a size `size` accepted stands for."""
    return int(text[:-1]) * _UNIT[text[-1].lower()]
