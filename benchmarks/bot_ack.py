"""How fast the webhook bot acknowledges deliveries: real gunicorn on loopback, 16 senders at once.

`freemad bot serve` with the local executor (SQLite delivery log and SQLite queue, as one machine
runs it); no worker runs, so every accepted delivery is verified, recorded and enqueued, which is
all the web process does. Each sender thread keeps one HTTP/1.1 connection and posts signed
deliveries of a realistic size (an issue_comment payload of about 8 KB), each with its own
delivery id. Latency is from sending the request to reading the whole answer.

Figures: acknowledgement latency (p50, p90, p99, max) against the 50 ms p99 budget, deliveries
per second over the run, and the resident memory of the gunicorn master and each web worker.

Run: .venv/bin/python benchmarks/bot_ack.py [--senders 16] [--per-sender 100] [--workers N]
(--workers defaults to the bot's own default, CPUs + 1.)
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from _common import console_script, emit, free_port, machine, progress, summary, wait_ready

SECRET = "benchmark-secret"
BUDGET_P99_MS = 50.0


def payload() -> bytes:
    body = {
        "action": "created",
        "issue": {
            "number": 7,
            "title": "A realistic issue title",
            "body": "x" * 4000,
            "user": {"login": "alice", "id": 1, "type": "User"},
            "labels": [],
            "state": "open",
            "html_url": "https://github.com/octo-org/octo-repo/issues/7",
        },
        "comment": {
            "id": 1001,
            "body": "A comment that is not a command. " * 100,
            "user": {"login": "alice", "id": 1, "type": "User"},
            "html_url": "https://github.com/octo-org/octo-repo/issues/7#issuecomment-1001",
        },
        "repository": {"id": 1, "name": "octo-repo", "full_name": "octo-org/octo-repo"},
        "sender": {"login": "alice", "id": 1, "type": "User"},
        "installation": {"id": 42},
    }
    return json.dumps(body).encode()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def sender(
    port: int, body: bytes, count: int, rate: float, latencies: list[float], errors: list[str]
) -> None:
    """`count` deliveries; with `rate` > 0 one every 1/rate seconds (open loop: the schedule does
    not wait for slow answers), else back to back (closed loop: as fast as the bot answers)."""
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    start = time.perf_counter()
    try:
        for number in range(count):
            if rate > 0:
                pause = start + number / rate - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
            headers = {
                "Content-Type": "application/json",
                "X-GitHub-Event": "issue_comment",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": signature,
            }
            began = time.perf_counter()
            connection.request("POST", "/webhook", body=body, headers=headers)
            answer = connection.getresponse()
            answer.read()
            latencies.append((time.perf_counter() - began) * 1000)
            if answer.status != 202:
                errors.append(str(answer.status))
    finally:
        connection.close()


def volley(
    port: int, senders: int, per_sender: int, rate: float = 0.0
) -> tuple[list[float], list[str], float]:
    body = payload()
    latencies: list[float] = []
    errors: list[str] = []
    threads = [
        threading.Thread(target=sender, args=(port, body, per_sender, rate, latencies, errors))
        for _ in range(senders)
    ]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, errors, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--senders", type=int, default=16)
    parser.add_argument("--per-sender", type=int, default=100)
    parser.add_argument("--workers", type=int, default=(os.cpu_count() or 1) + 1)
    parser.add_argument(
        "--rate", type=float, default=10.0, help="deliveries a second per sender, open loop"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="freemad-bot-bench-") as folder:
        port = free_port()
        env = {
            **os.environ,
            "FREEMAD_WEBHOOK_SECRET": SECRET,
            "FREEMAD_GITHUB_TOKEN": "not-used-by-the-web-edge",
            "FREEMAD_STATE_DIR": folder,
            "FREEMAD_EXECUTOR": "local",
            "HOME": folder,
        }
        command = [console_script("freemad"), "bot", "serve", "--host", "127.0.0.1"]
        command += ["--port", str(port), "--workers", str(args.workers)]
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            wait_ready(port, process, "/healthz")
            progress("warming up")
            volley(port, args.senders, 5)
            progress(f"closed loop: {args.senders} senders x {args.per_sender}, back to back")
            latencies, errors, seconds = volley(port, args.senders, args.per_sender)
            progress(f"open loop: {args.senders} senders x {args.per_sender} at {args.rate}/s each")
            paced, paced_errors, _ = volley(port, args.senders, args.per_sender, args.rate)
            errors += paced_errors
            workers = children(process.pid)
            memory = {
                "master_rss_kib": rss_kib(process.pid),
                "worker_rss_kib": [rss_kib(pid) for pid in workers],
            }
        finally:
            process.terminate()
            process.wait(timeout=30)
    emit(
        {
            "benchmark": "bot_ack",
            "machine": machine(),
            "senders": args.senders,
            "web_workers": args.workers,
            "payload_bytes": len(payload()),
            "closed_loop": {
                "deliveries": len(latencies),
                "ack_latency_ms": {**summary(latencies, 2), "p99": round(_p99(latencies), 2)},
                "deliveries_per_second": round(len(latencies) / seconds, 1),
            },
            "open_loop": {
                "offered_per_second": args.senders * args.rate,
                "deliveries": len(paced),
                "ack_latency_ms": {**summary(paced, 2), "p99": round(_p99(paced), 2)},
            },
            "non_202": len(errors),
            **memory,
            "budget_p99_ms": BUDGET_P99_MS,
            "open_loop_meets_budget": _p99(paced) < BUDGET_P99_MS,
            "closed_loop_meets_budget": _p99(latencies) < BUDGET_P99_MS,
        }
    )
    sys.exit(0 if not errors else 1)


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


if __name__ == "__main__":
    main()
