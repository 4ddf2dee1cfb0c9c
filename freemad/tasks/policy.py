"""The tool policy, enforced: which agent writes and commands may touch the workspace, and running them."""

from __future__ import annotations

import contextlib
import os
import secrets
import selectors
import shlex
import signal
import stat
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from freemad.config.tasks import ToolPolicy
from freemad.core.work_items import path_parts, within

OUTPUT_CAP = 1024 * 1024
ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR")
_SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "CREDENTIAL")
_POLL = 0.02  # seconds between checks that the command's leader is still running
_DRAIN_GRACE = 2.0  # seconds to read what is left once the command's processes are killed


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


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What one command did; `exit_code` is None when it could not be started."""

    argv: list[str]
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration: float

    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass
class _Tail:
    """The last OUTPUT_CAP bytes of a stream, and how many it had in all."""

    data: bytearray = field(default_factory=bytearray)
    seen: int = 0

    def add(self, chunk: bytes) -> None:
        self.seen += len(chunk)
        self.data += chunk
        del self.data[:-OUTPUT_CAP]

    def text(self) -> str:
        body, dropped = self.data.decode("utf-8", errors="replace"), self.seen - len(self.data)
        return f"[freemad: {dropped} earlier bytes dropped]\n{body}" if dropped else body


def command_env(passthrough: Sequence[str]) -> dict[str, str]:
    for name in passthrough:
        if any(word in name.upper() for word in _SECRET_WORDS):
            raise ValueError(f"{name} looks like a secret; it is never passed to a command")
    names = (*ENV_ALLOWLIST, *passthrough)
    return {name: os.environ[name] for name in names if name in os.environ}


def _leader_exited(pid: int) -> bool:
    # WNOWAIT leaves the leader unreaped, so its pid (the group's id) cannot be reused before killpg.
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _collect(proc: subprocess.Popen[bytes], timeout: float) -> tuple[_Tail, _Tail, bool]:
    """Read both pipes until the command ends or its time is up; its whole group dies either way."""
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Tail(), _Tail()
    deadline = time.monotonic() + timeout
    timed_out = finished = False
    drain_until = 0.0
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ, out)
        selector.register(proc.stderr, selectors.EVENT_READ, err)
        while True:
            now = time.monotonic()
            exited = finished or _leader_exited(proc.pid)
            if not finished and (exited or now >= deadline):
                timed_out, finished = not exited, True
                _kill_group(proc.pid)  # background children do not outlive the command
                drain_until = now + _DRAIN_GRACE
            if finished and (not selector.get_map() or now >= drain_until):
                break
            if not selector.get_map():
                time.sleep(_POLL)
                continue
            for key, _ in selector.select(_POLL):
                chunk = os.read(key.fd, 65536)
                if chunk:
                    key.data.add(chunk)
                else:
                    selector.unregister(key.fileobj)
    return out, err, timed_out


def run_command(
    argv: Sequence[str],
    cwd: Path,
    timeout: float,
    *,
    env_passthrough: Sequence[str] = (),
    prefix: Sequence[str] = (),
) -> CommandResult:
    """Run argv without a shell, in its own session, with a scrubbed environment and a time limit.

    `prefix` goes before argv (say `unshare -n --`); the result still names argv alone.
    """
    words = list(argv)
    full = [*prefix, *words]
    env = command_env(env_passthrough)
    started = time.monotonic()
    try:
        if not words:
            raise ValueError("no program given")
        if not Path(cwd).is_dir():
            raise ValueError(f"its folder {cwd} does not exist")
        proc = subprocess.Popen(
            full,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        program = full[0] if words else "a command"
        failed = f"could not start {program}: {why}"
        return CommandResult(words, None, "", failed, False, time.monotonic() - started)
    with proc:
        out, err, timed_out = _collect(proc, timeout)
        exit_code = proc.wait()
    stderr = err.text()
    if timed_out:
        note = f"[freemad: killed at the {timeout:g}s time limit]"
        stderr = f"{stderr.rstrip()}\n{note}" if stderr.strip() else note
    duration = time.monotonic() - started
    return CommandResult(words, exit_code, out.text(), stderr, timed_out, duration)
