"""`freemad-dashboard` as a user runs it, for the tests: real gunicorn on loopback, and a client
of its event stream (an EventSource stand-in)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import MOCK_AGENT, SANDBOX, free_port, wait_for

DASHBOARD = [sys.executable, "-m", "freemad.cli.dashboard"]


def write_mock_config(path: Path, rounds: object, redact: Sequence[str] = ()) -> None:
    """A config of one mock agent with `rounds` critique rounds (anything, for an invalid one)
    and `redact` as its redact patterns."""
    security: dict[str, object] = {"cli_allowed_commands": [MOCK_AGENT], "sandbox": SANDBOX}
    if redact:
        security["redact_patterns"] = list(redact)
    config = {
        "agents": [{"id": "a", "cli_command": MOCK_AGENT, "cli_mode_arg": True}],
        "security": security,
        "debate": {"rounds": rounds},
    }
    path.write_text(yaml.safe_dump(config))


def allowed_to_start(
    tmp_path: Path, rounds: object, redact: Sequence[str] = ()
) -> tuple[Path, Path, tuple[str, ...]]:
    """A transcripts folder, a config (`write_mock_config`) and the `freemad-dashboard`
    arguments that start runs with it into that folder."""
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    config = tmp_path / "freemad.yaml"
    write_mock_config(config, rounds, redact)
    return (
        transcripts,
        config,
        ("--dir", str(transcripts), "--allow-start", "--config", str(config)),
    )


@dataclass(frozen=True)
class Served:
    process: subprocess.Popen[bytes]  # gunicorn's master: `freemad-dashboard` becomes it
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str, timeout: float = 30) -> tuple[int, bytes]:
        """GET `path` on a new connection: the status and body, whatever the status."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as refused:
            with refused:
                return refused.code, refused.read()

    def post(self, path: str, token: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        """POST `body` as JSON (none when None) to `path` as the pages do: the start token as a
        bearer token and the CSRF token of the cookie `/api/csrf` sets; the status and the JSON
        answer."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request("GET", "/api/csrf")
            answer = connection.getresponse()
            csrf = json.loads(answer.read())["csrf"]
            headers = {
                "Authorization": f"Bearer {token}",
                "X-CSRF-Token": csrf,
                "Cookie": answer.getheader("Set-Cookie", "").split(";", 1)[0],
                "Content-Type": "application/json",
            }
            sent = b"" if body is None else json.dumps(body).encode("utf-8")
            connection.request("POST", path, body=sent, headers=headers)
            answer = connection.getresponse()
            return answer.status, json.loads(answer.read())
        finally:
            connection.close()

    def workers(self) -> list[int]:
        pid = self.process.pid
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


@contextlib.contextmanager
def serve(tmp_path: Path, *args: str, env: Mapping[str, str] | None = None) -> Iterator[Served]:
    """`freemad-dashboard ARGS` on a free loopback port, once /health answers; stopped after."""
    port = free_port()
    environment = {
        **os.environ,
        "HOME": str(tmp_path),
        "FREEMAD_DASHBOARD_POLL_INTERVAL": "0.1",
        "FREEMAD_DASHBOARD_HEARTBEAT": "0.5",  # so streams notice a closed client soon
        "FREEMAD_DASHBOARD_THREADS": "8",
        **(env or {}),
    }
    command = [*DASHBOARD, *args, "--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "dashboard.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=tmp_path,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    served = Served(process, port, log)
    try:

        def healthy() -> bool:
            if process.poll() is not None:
                pytest.fail(f"freemad-dashboard exited: {log.read_text()}")
            try:
                status, body = served.get("/health", timeout=2)
            except OSError:
                return False
            return status == 200 and bool(json.loads(body)["ok"])

        wait_for(healthy, "the dashboard's /health")
        yield served
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the master and its workers: our own group
            process.wait(timeout=30)


class Browser(threading.Thread):
    """An EventSource stand-in: GET /events (from `source`, an address on loopback, with
    `headers`, with Last-Event-ID if given), every change's id; a refusal's status and body."""

    def __init__(
        self,
        port: int,
        last_event_id: str | None = None,
        *,
        source: str = "127.0.0.1",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.last_event_id = last_event_id
        self.source = source
        self.extra = dict(headers or {})
        self.answered = threading.Event()  # the server has answered: a stream or a refusal
        self.connected = threading.Event()  # the server has sent a stream's first bytes
        self.stop = threading.Event()
        self.ids: list[str] = []
        self.data: list[dict[str, Any]] = []
        self.status: int | None = None
        self.body = b""  # a refusal's
        self.headers: dict[str, str] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        conn = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=30, source_address=(self.source, 0)
        )
        try:
            headers = {"Accept": "text/event-stream", **self.extra}
            if self.last_event_id:
                headers["Last-Event-ID"] = self.last_event_id
            conn.request("GET", "/events", headers=headers)
            answer = conn.getresponse()
            self.status = answer.status
            self.headers = {k.lower(): v for k, v in answer.getheaders()}
            if answer.status != 200:
                self.body = answer.read()
                return
            buffer = ""
            while not self.stop.is_set():
                chunk = answer.read1(65536)
                if not chunk:
                    break
                buffer += chunk.decode()
                while "\n\n" in buffer:
                    block, buffer = buffer.split("\n\n", 1)
                    self.take(block)
        except BaseException as exc:
            self.error = exc
        finally:
            self.answered.set()
            conn.close()

    def take(self, block: str) -> None:
        fields = dict(line.partition(": ")[::2] for line in block.split("\n"))
        if "retry" in fields:
            self.connected.set()
            self.answered.set()
        if "id" in fields:
            self.data.append(json.loads(fields["data"]))
            self.ids.append(fields["id"])  # last: a reader that sees the id sees its data

    def wait(self, seconds: float = 30) -> int | None:
        """Until the server answered; its status."""
        assert self.answered.wait(seconds), f"no answer to /events from {self.source}"
        return self.status

    def close(self) -> None:
        self.stop.set()
        self.join(timeout=30)
        assert not self.is_alive()
