"""Running one command: no shell, a session of its own, a scrubbed environment, a time limit,
and its whole process group killed when it ends; what it printed, capped."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from freemad.sandbox import reaper

OUTPUT_CAP = 1024 * 1024
ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR")
_SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "CREDENTIAL")
# FREE-MAD's own credentials: the GitHub token it comments and pushes with, the webhook secret,
# the App's private key, the queue's URL (it may hold a password), the token that starts debates
# on the dashboard. No agent or candidate sees them, nor any FREEMAD_* variable named like a
# credential (`freemad_secret`).
FREEMAD_CREDENTIALS = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "INPUT_GITHUB_TOKEN",
    "INPUT_GITHUB-TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "FREEMAD_GITHUB_TOKEN",
    "FREEMAD_WEBHOOK_SECRET",
    "FREEMAD_APP_PRIVATE_KEY",
    "FREEMAD_QUEUE_URL",
    "FREEMAD_DASHBOARD_TOKEN",
)


def looks_secret(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential."""
    upper = name.upper()
    return (
        upper in FREEMAD_CREDENTIALS
        or any(word in upper for word in _SECRET_WORDS)
        or (upper.endswith(("_KEY", "PRIVATE_KEY")))
    )


def freemad_secret(name: str) -> bool:
    """Whether a variable is one of FREE-MAD's own credentials (a server's, say), which no agent
    CLI is given: those named, and any FREEMAD_* variable named like a credential."""
    upper = name.upper()
    return upper in FREEMAD_CREDENTIALS or (upper.startswith("FREEMAD_") and looks_secret(upper))


_POLL = 0.02  # seconds between checks that the command's leader is still running
_DRAIN_GRACE = 2.0  # seconds to read what is left once the command's processes are killed


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


def _exit_watch(pid: int) -> int | None:
    """A pidfd that turns readable when `pid` exits (Linux 5.3+), so the wait wakes at once
    instead of at the next poll; None where there is none, and polling does."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _collect(proc: subprocess.Popen[bytes], timeout: float) -> tuple[_Tail, _Tail, bool]:
    """Read both pipes until the command ends or its time is up; its whole group dies either way."""
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Tail(), _Tail()
    deadline = time.monotonic() + timeout
    timed_out = finished = False
    drain_until = 0.0
    watch = _exit_watch(proc.pid)
    with selectors.DefaultSelector() as selector, contextlib.ExitStack() as closing:
        selector.register(proc.stdout, selectors.EVENT_READ, out)
        selector.register(proc.stderr, selectors.EVENT_READ, err)
        if watch is not None:
            closing.callback(os.close, watch)
            selector.register(watch, selectors.EVENT_READ, None)
        while True:
            now = time.monotonic()
            exited = finished or _leader_exited(proc.pid)
            if not finished and (exited or now >= deadline):
                timed_out, finished = not exited, True
                _kill_group(proc.pid)  # background children do not outlive the command
                drain_until = now + _DRAIN_GRACE
            streams = [key for key in selector.get_map().values() if key.data is not None]
            if finished and (not streams or now >= drain_until):
                break
            if not selector.get_map():
                time.sleep(_POLL)
                continue
            for key, _ in selector.select(_POLL):
                if key.data is None:  # the leader exited: decided at the top of the loop
                    selector.unregister(key.fileobj)
                    continue
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
    env: Mapping[str, str] | None = None,
    pass_fds: Sequence[int] = (),
) -> CommandResult:
    """Run argv without a shell, in its own session, with a scrubbed environment and a time limit.

    `prefix` goes before argv (say a sandbox's own command line); the result still names argv
    alone. `env`, when given, is the whole environment instead of the allowlist and passthrough.
    """
    words = list(argv)
    full = [*prefix, *words]
    environment = dict(env) if env is not None else command_env(env_passthrough)
    name, token = reaper.mark()  # so that it dies with FREE-MAD, its children included
    environment[name] = token
    started = time.monotonic()
    try:
        if not words:
            raise ValueError("no program given")
        if not Path(cwd).is_dir():
            raise ValueError(f"its folder {cwd} does not exist")
        proc = subprocess.Popen(
            full,
            cwd=cwd,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        program = full[0] if words else "a command"
        failed = f"could not start {program}: {why}"
        return CommandResult(words, None, "", failed, False, time.monotonic() - started)
    reaper.watch(proc.pid)
    with proc:
        try:
            out, err, timed_out = _collect(proc, timeout)
        finally:
            _kill_group(proc.pid)  # done by now unless interrupted; the leader is not yet reaped
            reaper.forget(proc.pid)
        exit_code = proc.wait()
    stderr = err.text()
    if timed_out:
        note = f"[freemad: killed at the {timeout:g}s time limit]"
        stderr = f"{stderr.rstrip()}\n{note}" if stderr.strip() else note
    duration = time.monotonic() - started
    return CommandResult(words, exit_code, out.text(), stderr, timed_out, duration)
