"""The tool policy, enforced: which agent writes and commands may touch a workspace.

Running a command that passes is the sandbox's work (`freemad.sandbox`).
"""

from __future__ import annotations

import os
import secrets
import shlex
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from freemad.config.task_section import ToolPolicy
from freemad.core.work_items import path_parts, within


@dataclass(frozen=True, slots=True)
class Violation:
    """A refused write or command; returned as data so it becomes a finding the reviewer sees."""

    kind: Literal["write", "command"]
    target: str
    reason: str

    def finding(self) -> str:
        if self.kind == "write":
            return f"refused write to {self.target}: {self.reason}"
        return f"refused command `{self.target}`: {self.reason}"


def _scope_parts(scope: Sequence[str]) -> list[tuple[str, ...]]:
    return [path_parts(entry) for entry in ([scope] if isinstance(scope, str) else scope)]


def check_write(
    workspace: Path, rel_path: str, policy: ToolPolicy, scope: Sequence[str]
) -> Path | Violation:
    """The absolute, symlink-resolved path a write may go to, or why it may not."""

    def refuse(reason: str) -> Violation:
        return Violation("write", rel_path, reason)

    if not policy.allow_workspace_write:
        return refuse("the tool policy does not allow workspace writes")
    if not rel_path or "\x00" in rel_path:
        return refuse("it is not a usable file path")
    if rel_path.startswith("/") or Path(rel_path).is_absolute():
        return refuse("it is an absolute path")
    if ".." in rel_path.split("/"):
        return refuse("it leaves the workspace")
    parts = path_parts(rel_path)
    if not parts:
        return refuse("it names the workspace itself, not a file")
    root = workspace.resolve()
    # realpath follows every symlink that exists, the file's own included, even a dangling one.
    resolved = Path(os.path.realpath(root.joinpath(*parts)))
    if resolved == root or not resolved.is_relative_to(root):
        return refuse("it leaves the workspace through a symlink")
    roots = _scope_parts(policy.allowed_write_roots)
    scopes = _scope_parts(scope)
    # Both the path as written and where it really lands must pass, so a symlink cannot widen a scope.
    for candidate in (parts, resolved.relative_to(root).parts):
        if any(part.casefold() == ".git" for part in candidate):
            return refuse("it writes into .git")
        if roots and not within(candidate, roots):
            listed = ", ".join(policy.allowed_write_roots)
            return refuse(f"it is outside allowed_write_roots ({listed})")
        if scopes and not within(candidate, scopes):
            shown = ", ".join("/".join(entry) for entry in scopes)
            return refuse(f"it is outside the work item's write scope ({shown})")
    return resolved


def _write_atomically(target: Path, content: str) -> None:
    data = content.encode("utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.parent / f".freemad-{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(temporary, flags, 0o666)  # the umask applies, as for any new file
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if target.is_file():
            os.chmod(temporary, stat.S_IMODE(target.stat().st_mode))  # keep an executable bit
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def apply_writes(
    workspace: Path, writes: Sequence[Mapping[str, Any]], policy: ToolPolicy, scope: Sequence[str]
) -> tuple[list[str], list[Violation]]:
    """Apply the allowed writes atomically; the workspace-relative paths written, and the refusals."""
    written: list[str] = []
    refused: list[Violation] = []
    for write in writes:
        path = write.get("path") if isinstance(write, Mapping) else None
        content = write.get("content") if isinstance(write, Mapping) else None
        if not isinstance(path, str) or not isinstance(content, str):
            target = path if isinstance(path, str) else "(no path)"
            refused.append(Violation("write", target, "a write needs a text path and text content"))
            continue
        checked = check_write(workspace, path, policy, scope)
        if isinstance(checked, Violation):
            refused.append(checked)
            continue
        try:
            _write_atomically(checked, content)
        except (OSError, UnicodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            refused.append(Violation("write", path, f"it could not be written ({why})"))
            continue
        written.append("/".join(path_parts(path)))
    return written, refused


def check_command(command: str | Sequence[str], policy: ToolPolicy) -> list[str] | Violation:
    """The argv a command may run as, or why it may not. No shell ever sees it."""
    shown = command if isinstance(command, str) else " ".join(map(str, command))
    if not policy.allow_local_commands:
        return Violation("command", shown, "the tool policy does not allow local commands")
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            return Violation("command", shown, f"it cannot be split into words ({exc})")
    else:
        argv = list(command)
    if not argv or not all(isinstance(word, str) for word in argv):
        return Violation("command", shown, "it is not a list of words")
    if argv[0] not in policy.allowed_local_commands:
        return Violation("command", shown, f"{argv[0]} is not in allowed_local_commands")
    return argv
