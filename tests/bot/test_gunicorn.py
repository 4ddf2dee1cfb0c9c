"""Real gunicorn on loopback serving the real create_app with the bot's gunicorn settings."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from tests.github.payloads import labeled_issue
from tests.processes import children

ROOT = Path(__file__).resolve().parents[2]
SECRET = "gunicorn-test-secret-5d1c"
TOKEN = "ghp_gunicorn_test_token_never_logged"
STARTUP_SECONDS = 60


def sign(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str
    submissions: Path
    stdout: Path
    stderr: Path

    def request(
        self, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        req = urllib.request.Request(self.url + path, data=body, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as response:  # loopback
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            with error:
                return error.code, json.loads(error.read())

    def deliver(self, delivery_id: str, payload: dict[str, Any] | None = None) -> tuple[int, Any]:
        # A body of its own by default: the same body under another id is a replay (200).
        body = json.dumps(payload or {**labeled_issue(), "test_delivery": delivery_id}).encode()
        headers = {
            "Content-Type": "application/json",
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": delivery_id,
            "X-Hub-Signature-256": sign(body),
        }
        return self.request("/webhook", body, headers)

    def submitted(self) -> list[str]:
        if not self.submissions.exists():
            return []
        lines = self.submissions.read_text().splitlines()
        return [json.loads(line)["delivery_id"] for line in lines]

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


def wait_until_ready(server: Server) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"gunicorn exited early:\n{server.stderr.read_text()[-3000:]}")
        try:
            if server.request("/healthz")[0] == 200:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    server.stop()
    pytest.fail(f"gunicorn never became ready:\n{server.stderr.read_text()[-3000:]}")


def bot_env(tmp_path: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FREEMAD_")}
    env.update(
        FREEMAD_BIND=f"127.0.0.1:{port}",
        FREEMAD_WORKERS="2",
        FREEMAD_WEBHOOK_SECRET=SECRET,
        FREEMAD_GITHUB_TOKEN=TOKEN,
        FREEMAD_STATE_DIR=str(tmp_path / "state"),
        FREEMAD_MAX_BODY=str(64 * 1024),
        FREEMAD_TEST_SUBMISSIONS=str(tmp_path / "submissions.jsonl"),
    )
    return env


def start(argv: list[str], env: dict[str, str], tmp_path: Path, port: int) -> Server:
    stdout, stderr = tmp_path / "stdout.log", tmp_path / "stderr.log"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=err)
    server = Server(
        process, f"http://127.0.0.1:{port}", tmp_path / "submissions.jsonl", stdout, stderr
    )
    wait_until_ready(server)
    return server


def gunicorn_argv() -> list[str]:
    """The bot's app under real gunicorn, with the settings file we ship."""
    config = str(ROOT / "bot" / "gunicorn.conf.py")
    return [sys.executable, "-m", "gunicorn", "--config", config, "tests.bot.app_for_gunicorn:app"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    port = free_port()
    argv = gunicorn_argv()
    running = start(argv, bot_env(tmp_path, port), tmp_path, port)
    yield running
    running.stop()


def test_concurrent_deliveries_are_accepted_once_across_workers(server: Server) -> None:
    ids = [f"delivery-{n}" for n in range(24)]
    # Every delivery four times at once: GitHub's redelivery racing the original.
    attempts = [delivery_id for delivery_id in ids for _ in range(4)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(server.deliver, attempts))
    accepted = Counter(answer["accepted"] for status, answer in results if status == 202)
    duplicates = Counter(answer["delivery_id"] for status, answer in results if status == 200)
    assert {status for status, _ in results} <= {200, 202}
    assert accepted == Counter(ids)
    assert duplicates == Counter(dict.fromkeys(ids, 3))
    assert sorted(server.submitted()) == sorted(ids)

    status, health = server.request("/healthz")
    assert status == 200 and health["deliveries"] == {"queued": len(ids)}
    assert health["queue_depth"] == len(ids) and health["worker_heartbeat"] is not None


def test_refusals_and_logs_over_real_http(server: Server) -> None:
    body = json.dumps(labeled_issue()).encode()
    forged = {
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": "f-1",
        "X-Hub-Signature-256": "sha256=00",
    }
    assert server.request("/webhook", body, forged)[0] == 401
    assert server.deliver("big", {"pad": "x" * (128 * 1024)})[0] == 413
    assert server.deliver("ok-1")[0] == 202
    assert server.submitted() == ["ok-1"]
    assert server.stop() == 0  # SIGTERM: a graceful, clean exit

    access = [json.loads(line) for line in server.stdout.read_text().splitlines()]
    assert {(entry["path"], entry["status"]) for entry in access} >= {
        ("/webhook", 401),
        ("/webhook", 413),
        ("/webhook", 202),
    }
    (accepted,) = [entry for entry in access if entry.get("delivery_id") == "ok-1"]
    assert accepted["status"] == 202 and accepted["event"]
    errors = [json.loads(line) for line in server.stderr.read_text().splitlines()]
    # One line per accepted delivery at the default level: the access line above.
    assert not any(e.get("delivery_id") == "ok-1" for e in errors)
    assert any(e["logger"] == "gunicorn.error" for e in errors)
    everything = server.stdout.read_text() + server.stderr.read_text()
    assert SECRET not in everything and TOKEN not in everything


def test_freemad_bot_serve_help_from_the_console_script() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "freemad", "bot", "serve", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "--workers" in done.stdout


def test_freemad_bot_serve_end_to_end(tmp_path: Path) -> None:
    """The product path: `freemad bot serve` -> gunicorn -> app_from_env() -> the local executor."""
    port = free_port()
    argv = [sys.executable, "-m", "freemad", "bot", "serve", "--host", "127.0.0.1"]
    env = {**bot_env(tmp_path, port), "FREEMAD_EXECUTOR": "local"}
    running = start([*argv, "--port", str(port), "--workers", "2"], env, tmp_path, port)
    try:
        body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
        headers = {
            "X-GitHub-Event": "ping",
            "X-GitHub-Delivery": "ping-1",
            "X-Hub-Signature-256": sign(body),
        }
        assert running.request("/webhook", body, headers)[0] == 200
    finally:
        assert running.stop() == 0


def conf_values(**env: str) -> dict[str, Any]:
    script = (
        "import json, freemad.bot.gunicorn_conf as c;"
        "print(json.dumps({k: getattr(c, k) for k in c.__all__ if k not in ('JsonLogger', 'logger_class', 'on_starting', 'pre_exec')}))"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FREEMAD_")}
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**clean, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    values: dict[str, Any] = json.loads(done.stdout)
    return values


def test_gunicorn_settings() -> None:
    defaults = conf_values()
    assert defaults["bind"] == ["127.0.0.1:8000"]
    assert defaults["workers"] == min((os.cpu_count() or 1) + 1, 8)
    # gunicorn's own gthread worker for either executor: its parser, its limits.
    worker = ("freemad.bot.gunicorn_worker.RecyclingThreadWorker", 4, 30)
    assert (defaults["worker_class"], defaults["threads"], defaults["timeout"]) == worker
    actions = conf_values(FREEMAD_EXECUTOR="actions")
    assert (actions["worker_class"], actions["threads"], actions["timeout"]) == worker
    limits = ("limit_request_line", "limit_request_fields", "limit_request_field_size")
    assert [defaults[name] for name in limits] == [4094, 100, 8190]
    assert defaults["keepalive"] == 5 and defaults["preload_app"] is False
    assert defaults["max_requests"] > 0 and defaults["max_requests_jitter"] > 0
    assert defaults["accesslog"] == "-"
    assert defaults["wsgi_app"] == "freemad.bot.web:app_from_env()"
    chosen = conf_values(
        FREEMAD_BIND="0.0.0.0:9999", FREEMAD_WORKERS="3", FREEMAD_LOG_LEVEL="DEBUG"
    )
    assert (chosen["bind"], chosen["workers"], chosen["loglevel"]) == (["0.0.0.0:9999"], 3, "debug")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds processes in /proc")
def test_usr2_starts_a_new_master_that_serves_after_the_old_one_stops(tmp_path: Path) -> None:
    """gunicorn's binary upgrade: USR2 execs a new master beside the old one (with the argv
    `freemad bot serve` started it with), the old one is stopped, the new one answers on the
    same socket. Started as `python -m gunicorn`, the new master used to die importing."""
    port = free_port()
    argv = [sys.executable, "-m", "freemad", "bot", "serve", "--host", "127.0.0.1"]
    env = {**bot_env(tmp_path, port), "FREEMAD_EXECUTOR": "local"}
    old = start([*argv, "--port", str(port), "--workers", "1"], env, tmp_path, port)
    workers = set(children(old.process.pid))
    new_master = None
    try:
        old.process.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + STARTUP_SECONDS
        while new_master is None and time.monotonic() < deadline:
            # The new master is the old one's child that has children of its own (its workers).
            fresh = [pid for pid in children(old.process.pid) if pid not in workers]
            new_master = next((pid for pid in fresh if children(pid)), None)
            time.sleep(0.1)
        assert new_master is not None, f"no new master:\n{old.stderr.read_text()[-3000:]}"
        assert old.stop() == 0
        status, health = old.request("/healthz")  # the same address, now the new master's
        assert status == 200 and health["ok"] is True
        assert old.deliver("after-usr2")[0] == 202
    finally:
        if new_master is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(new_master, signal.SIGTERM)
        old.stop()
    assert "ModuleNotFoundError" not in old.stderr.read_text()
