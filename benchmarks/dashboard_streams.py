"""The live dashboard under 500 open pages: real gunicorn on loopback, 500 event streams at once.

`freemad-dashboard` over a folder with one real debate (the bundled mock agents), its default
gunicorn settings unless told (2 workers of 32 threads). 500 clients each open `GET /events` at
once and keep what they are given open; each comes from an address of its own on loopback
(127.1.x.y) unless `--addresses` is fewer, so the per-client cap is met only when asked for. A
client refused with Retry-After asks once more after it (times 1 to 1.5, as the pages' script
spreads it) if that is within the `--hold` seconds the streams stay open. Meanwhile one prober
asks `/health` and another the debate's page, each on a new connection, one after another.

Figures: the streams served (200 and the stream's first bytes), refused (by status, with the
Retry-After given) and not answered within `--answer-timeout`, at the first attempt and after
the retry; the time to a first answer; `/health` and page latency (p50, p90, p99, max) and how
many probes got no answer in time.

Run: .venv/bin/python benchmarks/dashboard_streams.py [--clients 500] [--addresses N]
     [--hold 45] [--workers N] [--threads N] [--pythonpath DIR]
(--pythonpath runs the dashboard from another source tree, such as an export of an older commit.)
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import select
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import console_script, emit, free_port, machine, progress, summary, wait_ready

from freemad.config import default_config
from freemad.debate import run_debate, write_transcript
from freemad.redact import Redactor
from freemad.wiring import ADAPTERS


def one_debate(folder: Path) -> str:
    config = default_config()
    output = config.output.model_copy(update={"transcript_dir": str(folder)})
    result = run_debate("Write a function that returns Fibonacci(n).", config, adapters=ADAPTERS)
    write_transcript(result, output, Redactor([]))
    return result.run_id


class Client(threading.Thread):
    """One open page's event stream, from `source` (an address on loopback). Refused, it asks
    once more after Retry-After (spread as the pages' script spreads it) if that is in time."""

    def __init__(
        self, port: int, source: str, timeout: float, stop: threading.Event, until: float
    ) -> None:
        super().__init__(daemon=True)
        self.port, self.source, self.timeout, self.stop, self.until = (
            port,
            source,
            timeout,
            stop,
            until,
        )
        self.first = self.outcome = "no answer"  # "served", an HTTP status, or an error's name
        self.retry_after: str | None = None
        self.seconds: float | None = None  # from connecting to the first answer
        self.answered = threading.Event()  # the first attempt was answered

    def run(self) -> None:
        self.first = self.outcome = self.attempt()
        self.answered.set()
        if self.outcome.isdigit() and (self.retry_after or "").isdigit():
            pause = int(self.retry_after or 0) * (1 + random.random() / 2)
            if time.monotonic() + pause < self.until and not self.stop.wait(pause):
                self.outcome = self.attempt()

    def attempt(self) -> str:
        began = time.perf_counter()
        connection = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=self.timeout, source_address=(self.source, 0)
        )
        try:
            connection.request("GET", "/events", headers={"Accept": "text/event-stream"})
            answer = connection.getresponse()
            if answer.status == 200:
                answer.read1(64)  # the stream's first bytes: `retry: 2000`
            else:
                answer.read()
                self.retry_after = answer.getheader("Retry-After")
            if self.seconds is None:
                self.seconds = time.perf_counter() - began
            self.answered.set()
            if answer.status != 200:
                return str(answer.status)
            while not self.stop.is_set():
                readable, _, _ = select.select([connection.sock], [], [], 1.0)
                if readable and not answer.read1(65536):
                    return "served, then ended by the server"
            return "served"
        except TimeoutError:
            return "no answer"
        except OSError as exc:
            return type(exc).__name__
        finally:
            connection.close()


class Prober(threading.Thread):
    """GET `path` on a new connection, again and again, until stopped: each one's latency."""

    def __init__(self, port: int, path: str, timeout: float, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.port, self.path, self.timeout, self.stop = port, path, timeout, stop
        self.latencies: list[float] = []  # ms, of answers 200
        self.failures: Counter[str] = Counter()

    def run(self) -> None:
        while not self.stop.is_set():
            began = time.perf_counter()
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                connection.request("GET", self.path)
                answer = connection.getresponse()
                answer.read()
                if answer.status == 200:
                    self.latencies.append((time.perf_counter() - began) * 1000)
                else:
                    self.failures[str(answer.status)] += 1
            except TimeoutError:
                self.failures["no answer"] += 1
            except OSError as exc:
                self.failures[type(exc).__name__] += 1
            finally:
                connection.close()
            self.stop.wait(0.1)

    def figures(self) -> dict[str, Any]:
        found: dict[str, Any] = {"answered_200": len(self.latencies), **self.failures}
        if self.latencies:
            ordered = sorted(self.latencies)
            p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
            found["latency_ms"] = {**summary(self.latencies, 1), "p99": round(p99, 1)}
        return found


def address(number: int) -> str:
    return f"127.1.{number // 250}.{number % 250 + 1}"


def start(args: argparse.Namespace, tmp: str, folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    """`freemad-dashboard` over `folder`, once it answers /health; its output in tmp/dashboard.log."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FREEMAD_")}
    env["HOME"] = tmp
    if args.threads:
        env["FREEMAD_DASHBOARD_THREADS"] = str(args.threads)
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    command = [console_script("freemad-dashboard"), "--dir", str(folder)]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    command += ["--workers", str(args.workers)] if args.workers else []
    log = Path(tmp) / "dashboard.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, cwd=tmp, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_ready(port, process, "/health")
    except SystemExit:
        process.kill()
        progress(log.read_text()[-3000:])
        raise
    return process, port


def load(args: argparse.Namespace, port: int, run_id: str) -> dict[str, Any]:
    """The clients open their streams and hold them while the probers ask; the figures."""
    addresses = args.addresses or args.clients
    stop, done = threading.Event(), threading.Event()
    probers = [
        Prober(port, "/health", args.probe_timeout, done),
        Prober(port, f"/runs/{run_id}.html", args.probe_timeout, done),
    ]
    for prober in probers:
        prober.start()
    progress(f"{args.clients} clients from {addresses} addresses open /events")
    until = time.monotonic() + args.hold
    clients = [
        Client(port, address(i % addresses), args.answer_timeout, stop, until)
        for i in range(args.clients)
    ]
    began = time.perf_counter()
    for client in clients:
        client.start()
    for client in clients:
        client.answered.wait(args.answer_timeout + 5)
    answered_in = time.perf_counter() - began
    progress(f"holding the streams for {args.hold} s (a refused client asks once more)")
    time.sleep(max(0.0, until - time.monotonic()))
    done.set()
    for prober in probers:
        prober.join(args.probe_timeout + 5)
    stop.set()
    for client in clients:
        client.join(10)
    times: dict[str, list[float]] = {}
    for client in clients:
        if client.seconds is not None:
            times.setdefault(client.first, []).append(client.seconds * 1000)
    return {
        "clients": args.clients,
        "addresses": addresses,
        "hold_s": args.hold,
        "first_attempt": dict(Counter(client.first for client in clients)),
        "retry_after": dict(Counter(c.retry_after for c in clients if c.retry_after)),
        "after_one_retry": dict(Counter(client.outcome for client in clients)),
        "time_to_first_answer_ms": {k: summary(v, 1) for k, v in times.items()},
        "all_first_answers_in_s": round(answered_in, 2),
        "health": probers[0].figures(),
        "page": probers[1].figures(),
    }


# option: (type, default, what it is)
OPTIONS: dict[str, tuple[type, Any, str]] = {
    "--clients": (int, 500, "open pages, each a client of its own"),
    "--addresses": (int, 0, "loopback addresses they come from (default: one each)"),
    "--hold": (float, 45.0, "seconds the streams stay open while the probers ask"),
    "--answer-timeout": (float, 30.0, "seconds a client waits for an answer"),
    "--probe-timeout": (float, 10.0, "seconds a probe waits for an answer"),
    "--workers": (int, None, "gunicorn workers (default: the dashboard's, 2)"),
    "--threads": (int, None, "threads a worker (default: the dashboard's, 32)"),
    "--pythonpath": (str, None, "run the dashboard from this source tree"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, (kind, default, what) in OPTIONS.items():
        parser.add_argument(flag, type=kind, default=default, help=what)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="freemad-streams-bench-") as tmp:
        folder = Path(tmp) / "transcripts"
        progress("one debate of the mock agents")
        run_id = one_debate(folder)
        process, port = start(args, tmp, folder)
        try:
            figures = load(args, port, run_id)
        finally:
            process.terminate()
            process.wait(timeout=60)
        banner = (Path(tmp) / "dashboard.log").read_text().splitlines()[:2]
    emit({"benchmark": "dashboard_streams", "machine": machine(), "server": banner, **figures})


if __name__ == "__main__":
    main()
