"""A pull request's unified diff as a review needs it: its files, and which new-file lines are in
the diff. No I/O.

GitHub takes an inline review comment only on a line of the diff: an added or a context line of
a hunk, on the new side (`side: RIGHT`). `Diff.in_diff(path, line)` says whether a finding can
be one; a finding on any other line goes to the review's body. Parsing is `unidiff`'s; a text
it cannot read as a diff is a `DiffError`, one line to show.

`fit_diff` cuts a large diff to what agents are shown: a file past `max_file_chars`, or past what
is left of `max_total_chars`, is replaced by a one-line summary (its path and counts), and every
summary is listed in `Fitted.left_out`, so the review says what it did not see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

__all__ = ["Diff", "DiffError", "DiffFile", "Fitted", "LeftOut", "fit_diff", "parse_diff"]

FileStatus = Literal["added", "modified", "deleted", "renamed"]


class DiffError(ValueError):
    """The text is not a unified diff FREE-MAD can review; the message is one line."""


@dataclass(frozen=True)
class DiffFile:
    """One file of the diff. `path` is the new path (the old one for a deleted file); `lines`
    are the new-file line numbers in the diff (added and context lines)."""

    path: str
    old_path: str
    status: FileStatus
    binary: bool
    patch: str
    lines: frozenset[int] = field(default_factory=frozenset)
    added: int = 0
    removed: int = 0
    hunks: int = 0

    def summary(self) -> str:
        """One line for a file agents were not shown."""
        what = "binary file" if self.binary else f"+{self.added} -{self.removed} lines"
        hunks = "" if self.binary else f" in {self.hunks} hunk{'s' * (self.hunks != 1)}"
        return f"{self.path} ({self.status}, {what}{hunks})"


@dataclass(frozen=True)
class Diff:
    files: tuple[DiffFile, ...]

    def file(self, path: str) -> DiffFile | None:
        return next((f for f in self.files if f.path == path), None)

    def resolve(self, path: str) -> str:
        """The diff's name for `path`: itself, or without git's `a/`/`b/` when only that is in
        the diff."""
        if self.file(path) is None and path.startswith(("a/", "b/")) and self.file(path[2:]):
            return path[2:]
        return path

    def in_diff(self, path: str, line: int) -> bool:
        """Whether a review comment on new-file `line` of `path` lands on a line of the diff."""
        found = self.file(path)
        return found is not None and line in found.lines

    @property
    def text_files(self) -> tuple[DiffFile, ...]:
        return tuple(f for f in self.files if not f.binary)


def _clean_path(name: str | None) -> str:
    if not name or name == "/dev/null":
        return ""
    return name[2:] if name.startswith(("a/", "b/")) else name


def parse_diff(text: str) -> Diff:
    """The files of unified diff `text` (`git diff`, GitHub's `.diff`); `DiffError` if the text
    is empty or not a diff."""
    if not text.strip():
        raise DiffError("the diff is empty: there is nothing to review")
    try:
        patch = PatchSet(text)
    except UnidiffParseError as exc:
        raise DiffError(f"not a unified diff FREE-MAD can read: {exc}") from None
    if not patch:
        raise DiffError("no file changes found: the text is not a unified diff")
    files = []
    for changed in patch:
        old, new = _clean_path(changed.source_file), _clean_path(changed.target_file)
        status: FileStatus = (
            "added"
            if changed.is_added_file
            else "deleted"
            if changed.is_removed_file
            else "renamed"
            if changed.is_rename or (old and new and old != new)
            else "modified"
        )
        lines = frozenset(
            row.target_line_no
            for hunk in changed
            for row in hunk
            if row.target_line_no is not None and (row.is_added or row.is_context)
        )
        files.append(
            DiffFile(
                path=new or old,
                old_path=old or new,
                status=status,
                binary=bool(changed.is_binary_file),
                patch=str(changed),
                lines=lines,
                added=changed.added,
                removed=changed.removed,
                hunks=len(changed),
            )
        )
    return Diff(tuple(files))


@dataclass(frozen=True)
class LeftOut:
    path: str
    reason: str  # "binary", "file_size" (past max_file_chars) or "total_size"
    summary: str


@dataclass(frozen=True)
class Fitted:
    """What agents are shown of a diff: `text`, and the files summarised instead of shown."""

    text: str
    shown: tuple[str, ...]
    left_out: tuple[LeftOut, ...]


REASONS: Mapping[str, str] = {
    "binary": "a binary file",
    "file_size": "past review.max_file_chars",
    "total_size": "past what review.max_diff_chars left",
}


def fit_diff(
    diff: Diff, *, max_file_chars: int, max_total_chars: int, max_listed: int = 50
) -> Fitted:
    """The diff's files in order, each whole or as its summary line (see the module doc).
    Smaller files are kept first when the total is short, so one huge file does not push out
    every other. Past `max_listed` summary lines the rest are counted in one line (all of them
    are in `left_out`)."""
    kept: set[str] = set()
    left: dict[str, LeftOut] = {}
    room = max_total_chars
    for changed in sorted(diff.files, key=lambda f: len(f.patch)):
        if changed.binary:
            left[changed.path] = LeftOut(changed.path, "binary", changed.summary())
        elif len(changed.patch) > max_file_chars:
            left[changed.path] = LeftOut(changed.path, "file_size", changed.summary())
        elif len(changed.patch) > room:
            left[changed.path] = LeftOut(changed.path, "total_size", changed.summary())
        else:
            kept.add(changed.path)
            room -= len(changed.patch)
    parts: list[str] = []
    listed = 0
    for changed in diff.files:
        if changed.path in kept:
            parts.append(changed.patch.rstrip("\n"))
        elif listed < max_listed:
            out = left[changed.path]
            parts.append(f"# not shown ({REASONS[out.reason]}): {out.summary}")
            listed += 1
    if len(left) > listed:
        parts.append(f"# not shown: {len(left) - listed} more file(s)")
    ordered: Sequence[LeftOut] = [left[f.path] for f in diff.files if f.path in left]
    shown = tuple(f.path for f in diff.files if f.path in kept)
    return Fitted("\n".join(parts) + "\n", shown, tuple(ordered))
