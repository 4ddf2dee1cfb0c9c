"""`freemad bot serve` and `freemad bot worker` as a user runs them: a signed `freemad:debate`
delivery to real gunicorn on loopback, worked by a real worker, ends as one comment with the
winner on the loopback stand-in of GitHub's API."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.github.standin import StandIn
from tests.conftest import free_port, wait_for
from tests.github.payloads import labeled_issue

BIN = Path(sys.executable).parent
SECRET = "end-to-end-secret"


@pytest.fixture
def api() -> Iterator[StandIn]:
    with StandIn(permissions={"alice": "write"}) as running:
        yield running


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real Redis server on loopback, for the queue several hosts can share."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
    pytest.importorskip(
        "redis", reason="the redis extra is not installed: pip install 'freemad[redis]'"
    )
    port = free_port()
    command = [
        server,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    process = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )

    def answering() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    try:
        wait_for(answering, "redis-server", 30)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_signed_debate_label_becomes_a_winner_comment(tmp_path: Path, api: StandIn) -> None:
    end_to_end(tmp_path, api, {})


def test_the_same_with_the_queue_on_redis(tmp_path: Path, api: StandIn, redis_url: str) -> None:
    end_to_end(tmp_path, api, {"FREEMAD_QUEUE_URL": redis_url})


def end_to_end(tmp_path: Path, api: StandIn, extra: dict[str, str]) -> None:
    mock = str(BIN / "freemad-mock-agent")
    agents = [
        {"id": f"mock-{p}", "cli_command": f"{mock} --persona {p}", "cli_mode_arg": True}
        for p in ("iterative", "recursive")
    ]
    config = {"agents": agents, "security": {"cli_allowed_commands": [mock]}}
    (tmp_path / "freemad.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
        "FREEMAD_WEBHOOK_SECRET": SECRET,
        "FREEMAD_GITHUB_TOKEN": "ghs_end_to_end",
        "FREEMAD_GITHUB_API_URL": api.base_url,
        "FREEMAD_CONFIG": str(tmp_path / "freemad.yaml"),
        "FREEMAD_STATE_DIR": str(tmp_path / "state"),
        "FREEMAD_EXECUTOR": "local",
        **extra,
    }
    freemad = str(BIN / "freemad")
    serve = [freemad, "bot", "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "2"]
    processes = [
        subprocess.Popen(
            serve, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        ),
        subprocess.Popen(
            [freemad, "bot", "worker"],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        ),
    ]
    try:
        url = f"http://127.0.0.1:{port}"

        def healthy() -> dict[str, Any] | None:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2) as answer:
                    data: dict[str, Any] = json.loads(answer.read())
                    return data if data.get("worker_heartbeat") is not None else None
            except OSError:
                return None

        wait_for(healthy, "the web edge and a worker heartbeat", 90)
        payload = labeled_issue("freemad:debate")
        api.seed(payload)  # the issue exists on GitHub
        body = json.dumps(payload).encode()
        signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        request = urllib.request.Request(
            f"{url}/webhook",
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "X-GitHub-Event": "issues",
                "X-GitHub-Delivery": "e2e-delivery-1",
                "X-Hub-Signature-256": signature,
            },
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 202

        def posted() -> list[dict[str, Any]]:
            return [c for c in api.comments.values() if "**Winner:**" in c["body"]]

        [comment] = wait_for(posted, "the winner's comment", 90)
        assert comment["repo"] == "octo-org/octo-repo" and "/issues/7#" in comment["html_url"]
        assert "Pick a cache eviction policy" in comment["body"]  # the issue reached the agents
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            _, err = process.communicate(timeout=60)
            assert process.returncode == 0, err.decode()[-2000:]
