"""`make image-test`'s look at the bot in the image: `freemad bot serve` and `freemad bot worker`
run in the container (on Redis when there is a redis-server here, as bot/compose.yaml runs
them), /healthz answering through the image's own HEALTHCHECK command, gunicorn running as the
image's numeric non-root user, and both stopping cleanly on SIGTERM as a service manager stops
them. Only the standard library, like image_test.py, which calls `check_bot`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from image_test import Checks, Container

BOT_ENV = {
    "FREEMAD_WEBHOOK_SECRET": "image-test",
    "FREEMAD_GITHUB_TOKEN": "image-test",
    "FREEMAD_STATE_DIR": "/home/freemad/state",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def background(
    container: Container, args: Sequence[str], env: dict[str, str], stopped: list[int]
) -> Iterator[int]:
    """A process in the container, stopped as a service manager would: SIGTERM to it.

    `buildah run` kills its child outright on SIGTERM, so the signal goes to the container's own
    top process (the first of buildah's descendants that is neither root's nor buildah's own
    helper); buildah's exit status is
    appended to `stopped`. Its process group is killed only if it is still there 30 s later.
    """
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            container.command(args, env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield process.pid
        finally:
            _stop(process)
            stopped.append(process.returncode)
            if process.returncode != 0:
                log.seek(0)
                print(log.read().decode(errors="replace")[-2000:], flush=True)


def _stop(process: subprocess.Popen[bytes]) -> None:
    for pid in descendants(process.pid):
        if _uid(pid) not in ("0", "") and not _cmdline(pid).startswith("buildah"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            break
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    return ""


def _uid(pid: int) -> str:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return line.split()[1]
    return ""


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in sorted(children.get(todo.pop(0), [])):
            found.append(child)
            todo.append(child)
    return found


def uids_of(pids: Sequence[int], word: str) -> set[str]:
    uids = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            if word in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("Uid:"):
                        uids.update(line.split()[1:])
    return uids


def check_bot(container: Container, healthcheck: list[str], checks: Checks) -> None:
    port = free_port()
    env = dict(BOT_ENV)
    stopped: list[int] = []
    # Debian puts redis-server in /usr/bin, and some PATHs lack /usr/sbin where others put it.
    redis = shutil.which("redis-server", path=f"{os.environ.get('PATH', '')}:/usr/sbin")
    with contextlib.ExitStack() as stack:
        if redis:
            # The queue on Redis, as bot/compose.yaml runs it: exercises the image's redis extra.
            redis_port = free_port()
            stack.enter_context(_redis(redis, redis_port))
            env["FREEMAD_QUEUE_URL"] = f"redis://127.0.0.1:{redis_port}/0"
        queue = "Redis" if redis else "SQLite (no redis-server here)"
        serve = [
            "freemad",
            "bot",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ]
        web = stack.enter_context(background(container, serve, env, stopped))
        stack.enter_context(background(container, ["freemad", "bot", "worker"], env, stopped))
        url = f"http://127.0.0.1:{port}/healthz"
        healthy = _poll(
            lambda: container.run(healthcheck, {"FREEMAD_HEALTH_URL": url}).returncode == 0
        )
        checks.expect(
            f"bot serve: the HEALTHCHECK command passes on /healthz (queue: {queue})", healthy
        )
        body = _healthz(url)
        alive = _poll(lambda: _healthz(url).get("workers_alive") is True, 30)
        checks.expect("bot worker: /healthz reports it alive", alive, json.dumps(body))
        uids = uids_of(descendants(web), "gunicorn")
        checks.expect(
            "gunicorn runs as the image's numeric non-root user",
            bool(uids) and "0" not in uids and all(u.isdigit() for u in uids),
            ",".join(sorted(uids)) or "no gunicorn process found",
        )
    checks.expect(
        "bot serve and bot worker stop cleanly on SIGTERM", stopped == [0, 0], f"{stopped}"
    )
    closed = f"http://127.0.0.1:{free_port()}/healthz"
    failing = container.run(healthcheck, {"FREEMAD_HEALTH_URL": closed}).returncode
    checks.expect("the HEALTHCHECK command fails when nothing answers", failing != 0)


@contextlib.contextmanager
def _redis(server: str, port: int) -> Iterator[None]:
    process = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _poll(lambda: _connects(port), 10)
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


def _connects(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _healthz(url: str) -> dict[str, Any]:
    if not url.startswith("http://127.0.0.1:"):
        raise ValueError(f"not the loopback bot: {url}")
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:  # noqa: S310  # checked above
            body: dict[str, Any] = json.loads(answer.read())
            return body
    except (OSError, ValueError):
        return {}


def _poll(probe: Any, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if probe():
            return True
        time.sleep(1)
    return False
