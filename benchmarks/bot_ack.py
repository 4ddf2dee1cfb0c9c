"""How fast the webhook bot acknowledges deliveries, beside a gidgethub + aiohttp peer in the same run.

Ours: `freemad bot serve` on loopback with the local executor (SQLite delivery log and SQLite
queue, as one machine runs it); no worker runs, so every accepted delivery is verified, recorded
and enqueued, which is all the web process does. The peer (`bot_ack_peer.py`): gidgethub +
aiohttp recording each delivery in one SQLite row (WAL, synchronous=NORMAL, as ours) before its
202, in the benchmark's own virtualenv (`.cache/bench-venv`, made and filled from PyPI on first
use). All run at once; the load goes to one at a time, rotating which goes first each round.

Each sender thread keeps one HTTP/1.1 connection and posts signed deliveries of a realistic size
(an issue_comment payload of about 8 KB), each with its own delivery id. Latency is from sending
the request to reading the whole answer. Closed loop: back to back; open loop: each sender on a
schedule. CPU per acknowledgement: the server's processes' user + system time (gunicorn's
master, its workers, and workers it reaped meanwhile) from the volley's first request until the
server is idle again, divided by the deliveries: work deferred past the answers (the bot's spool
commit, its WAL checkpoint) is counted, and the next volley starts only once it is done.
Every delivery must get a 202 and be in the server's database afterwards: both are counted, and so
is each delivery sent that got no answer at all (a reset, or a connection closed under it).
`--stack-floor` adds a server: the bot's gunicorn settings serving a Flask app that only
answers 202 (`bot_ack_floor_app.py`), what the stack costs before the bot does anything; the
bot's targets are set against it (closed-loop p99 at most 1.1x, throughput at least 0.9x).
`--durable-floor` adds the same settings serving `bot_ack_floor_app.py`'s `durable` app: the
signature checked, the body parsed, one SQLite row committed before the 202, as the peer does;
the least a bot on this stack does to keep what it acknowledges.
`--asgi` adds the same bot on ASGI servers run by gunicorn (`bot_ack_asgi.py`): uvicorn's
worker and gunicorn's own, the Flask app wrapped by a2wsgi. `--baseline-tree DIR` (repeatable)
adds the bot of another checkout, named `tree_` + the folder's name (its `freemad` package first
on `PYTHONPATH`, same interpreter and settings), so a change is measured before and after in one
run: e.g. `git archive main | tar -x -C DIR`.

Run: .venv/bin/python benchmarks/bot_ack.py [--senders 16] [--per-sender 100] [--rounds 3]
     [--workers N] [--rate 10] [--no-peer] [--max-requests N] [--stack-floor] [--durable-floor]
     [--asgi] [--baseline-tree DIR]
(--workers defaults to the bot's own default, CPUs + 1.)
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import http.client
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import bot_ack_asgi
from _common import console_script, emit, free_port, machine, progress, summary, wait_ready
from bot_ack_figures import (
    children,
    floor_ratios,
    p99,
    peer_ratios,
    rss_kib,
    settled_cpu,
    tree_cpu,
)

SECRET = "benchmark-secret"
BUDGET_P99_MS = 50.0
ROOT = Path(__file__).resolve().parents[1]
PEER_VENV = ROOT / ".cache" / "bench-venv"
PEER_PACKAGES = ("gidgethub", "aiohttp")
FLOOR = "flask_gunicorn_floor"
DURABLE_FLOOR = "flask_gunicorn_durable_floor"


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


class Target:
    """One server under test: where it listens, its process, the database it records in."""

    def __init__(
        self, name: str, process: subprocess.Popen[bytes], port: int, db: Path | None
    ) -> None:
        self.name, self.process, self.port, self.db = name, process, port, db
        self.closed: list[float] = []
        self.closed_seconds = 0.0
        self.closed_cpu = 0.0
        self.paced: list[float] = []
        self.paced_cpu = 0.0
        self.sent: list[str] = []
        self.refused: list[str] = []
        self.lost: list[str] = []  # sent, and no answer came: a reset, or the connection closed

    def recorded(self) -> set[str] | None:
        """The delivery ids in its database; None for the stack's floor, which keeps none."""
        if self.db is None:
            return None
        with sqlite3.connect(self.db) as db:
            return {str(row[0]) for row in db.execute("SELECT delivery_id FROM deliveries")}

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def sender(
    port: int, body: bytes, count: int, rate: float, latencies: list[float], target: Target
) -> None:
    """`count` deliveries; with `rate` > 0 one every 1/rate seconds (open loop: the schedule does
    not wait for slow answers), else back to back (closed loop: as fast as the bot answers).
    Each body is unique (the bot refuses a body it has seen as a replay)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    start = time.perf_counter()
    try:
        for number in range(count):
            if rate > 0:
                pause = start + number / rate - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
            delivery_id = str(uuid.uuid4())
            unique = body[:-1] + b', "bench_delivery": "' + delivery_id.encode() + b'"}'
            signature = "sha256=" + hmac.new(SECRET.encode(), unique, hashlib.sha256).hexdigest()
            headers = {
                "Content-Type": "application/json",
                "User-Agent": "GitHub-Hookshot/bench",
                "X-GitHub-Event": "issue_comment",
                "X-GitHub-Delivery": delivery_id,
                "X-Hub-Signature-256": signature,
            }
            target.sent.append(delivery_id)
            began = time.perf_counter()
            try:
                connection.request("POST", "/webhook", body=unique, headers=headers)
                answer = connection.getresponse()
                answer.read()
            except (OSError, http.client.HTTPException) as exc:
                # Never answered (a sender that honours `Connection: close` gets none of these
                # from a server that closes cleanly): counted, then a new connection.
                target.lost.append(f"{delivery_id}: {type(exc).__name__}")
                connection.close()
                continue
            latencies.append((time.perf_counter() - began) * 1000)
            if answer.status != 202:
                target.refused.append(f"{delivery_id}: {answer.status}")
            # http.client closes the connection after an answer with `Connection: close` and
            # opens a new one for the next request.
    finally:
        connection.close()


def volley(
    target: Target, senders: int, per_sender: int, rate: float = 0.0
) -> tuple[list[float], float, float]:
    """Latencies (ms), wall seconds and server CPU seconds of one volley at `target`: the
    seconds from the first request to the last answer, the CPU until the server is idle again
    (what it defers past its answers is its own cost)."""
    body = payload()
    latencies: list[float] = []
    threads = [
        threading.Thread(
            target=sender, args=(target.port, body, per_sender, rate, latencies, target)
        )
        for _ in range(senders)
    ]
    cpu = tree_cpu(target.process.pid)
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - began
    return latencies, seconds, settled_cpu(target.process.pid) - cpu


def peer_python(given: str | None) -> str:
    """The benchmark's own interpreter with gidgethub and aiohttp, made on first use."""
    if given:
        return given
    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        progress(f"making {PEER_VENV} with {', '.join(PEER_PACKAGES)} from PyPI")
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_PACKAGES], check=True)
    return str(python)


def versions(python: str) -> dict[str, str]:
    script = (
        "import importlib.metadata as m, json, platform;"
        f"print(json.dumps({{p: m.version(p) for p in {list(PEER_PACKAGES)!r}}}"
        " | {'python': platform.python_version()}))"
    )
    done = subprocess.run([python, "-c", script], capture_output=True, text=True, check=True)
    found: dict[str, str] = json.loads(done.stdout)
    return found


def start_ours(
    folder: Path,
    workers: int,
    max_requests: int | None,
    candidate: str | None = None,
    tree: Path | None = None,
) -> Target:
    """The bot as `freemad bot serve` runs it, or (`candidate`) on one of bot_ack_asgi's
    servers with the same gunicorn settings otherwise, or (`tree`) another checkout's bot."""
    if tree is not None:
        tree = tree.resolve()
        if not (tree / "freemad" / "__init__.py").is_file():
            sys.exit(f"--baseline-tree: no freemad package in {tree}")
    name = candidate or (f"tree_{tree.name}" if tree is not None else "freemad")
    port = free_port()
    env = {
        **os.environ,
        "FREEMAD_WEBHOOK_SECRET": SECRET,
        "FREEMAD_GITHUB_TOKEN": "not-used-by-the-web-edge",
        "FREEMAD_STATE_DIR": str(folder / name),
        "FREEMAD_EXECUTOR": "local",
        "HOME": str(folder),
    }
    command = [console_script("freemad"), "bot", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", str(workers)]
    if max_requests is not None or candidate or tree is not None:
        # Straight to gunicorn, which serve runs with these settings.
        command = [sys.executable, "-m", "gunicorn", "-c", "python:freemad.bot.gunicorn_conf"]
        command += ["-w", str(workers), "-b", f"127.0.0.1:{port}"]
        if tree is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])
        if max_requests is not None:
            command += ["--max-requests", str(max_requests)]
        if candidate:
            paths = [str(bot_ack_asgi.packages_dir()), str(Path(__file__).parent)]
            env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
            command += ["-k", bot_ack_asgi.CANDIDATES[candidate], "bot_ack_asgi:app"]
    # From inside `tree`: `python -m` and gunicorn both put the working folder first on sys.path.
    process = subprocess.Popen(
        command, env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    target = Target(name, process, port, folder / name / "deliveries.sqlite3")
    wait_ready(port, process, "/healthz")
    return target


def start_stack_floor(folder: Path, workers: int, *, durable: bool = False) -> Target:
    """A floor app of `bot_ack_floor_app.py` under the bot's gunicorn settings: `app`, or
    `durable` (recording each delivery in its own database)."""
    port = free_port()
    db = folder / "durable-floor.sqlite3" if durable else None
    env = {**os.environ, "FREEMAD_WEBHOOK_SECRET": SECRET, "HOME": str(folder)}
    if db is not None:
        env["BOT_ACK_FLOOR_DB"] = str(db)
    command = [sys.executable, "-m", "gunicorn", "-c", "python:freemad.bot.gunicorn_conf"]
    command += ["--pythonpath", str(Path(__file__).parent), "-w", str(workers)]
    command += ["-b", f"127.0.0.1:{port}", f"bot_ack_floor_app:{'durable' if durable else 'app'}"]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    name = DURABLE_FLOOR if durable else FLOOR
    target = Target(name, process, port, db)
    wait_ready(port, process, "/healthz")
    return target


def start_peer(folder: Path, python: str) -> Target:
    port = free_port()
    db = folder / "peer.sqlite3"
    script = str(Path(__file__).with_name("bot_ack_peer.py"))
    process = subprocess.Popen(
        [python, script, str(port), str(db), SECRET],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    target = Target("gidgethub_aiohttp", process, port, db)
    wait_ready(port, process, "/healthz")
    return target


def memory_kib(target: Target) -> list[int]:
    """The resident memory of the server's process and each of its children (its workers)."""
    return [rss_kib(target.process.pid)] + [rss_kib(pid) for pid in children(target.process.pid)]


def figures(target: Target, rate: float, senders: int) -> dict[str, Any]:
    recorded = target.recorded()
    answered = len(target.closed) + len(target.paced)
    return {
        "closed_loop": {
            "deliveries": len(target.closed),
            "ack_latency_ms": {**summary(target.closed, 2), "p99": round(p99(target.closed), 2)},
            "deliveries_per_second": round(len(target.closed) / target.closed_seconds, 1),
            "cpu_ms_per_ack": round(1000 * target.closed_cpu / len(target.closed), 3),
        },
        "open_loop": {
            "offered_per_second": senders * rate,
            "deliveries": len(target.paced),
            "ack_latency_ms": {**summary(target.paced, 2), "p99": round(p99(target.paced), 2)},
            "cpu_ms_per_ack": round(1000 * target.paced_cpu / max(1, len(target.paced)), 3),
        },
        "sent": len(target.sent),
        "answered": answered,
        "non_202": len(target.refused),
        "first_non_202": target.refused[:3],
        "lost": len(target.lost),
        "first_lost": target.lost[:3],
        "recorded": None if recorded is None else len(recorded & set(target.sent)),
    }


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--senders", type=int, default=16)
    parser.add_argument("--per-sender", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=min((os.cpu_count() or 1) + 1, 8))
    parser.add_argument(
        "--rate", type=float, default=10.0, help="deliveries a second per sender, open loop"
    )
    parser.add_argument("--no-peer", action="store_true", help="measure the bot alone")
    parser.add_argument("--peer-python", help="an interpreter with gidgethub and aiohttp")
    parser.add_argument(
        "--max-requests", type=int, help="gunicorn's max_requests (recycling) instead of ours"
    )
    parser.add_argument(
        "--stack-floor", action="store_true", help="also Flask + gunicorn answering 202 alone"
    )
    parser.add_argument(
        "--durable-floor",
        action="store_true",
        help="also Flask + gunicorn committing each delivery as one SQLite row before its 202",
    )
    parser.add_argument(
        "--asgi", action="store_true", help="also the bot on uvicorn's and gunicorn's ASGI workers"
    )
    parser.add_argument(
        "--baseline-tree",
        type=Path,
        action="append",
        default=[],
        help="also the bot of the checkout in this folder (before); may be repeated",
    )
    return parser.parse_args()


def main() -> None:
    args = arguments()
    python = None if args.no_peer else peer_python(args.peer_python)
    with tempfile.TemporaryDirectory(prefix="freemad-bot-bench-") as folder:
        targets = [start_ours(Path(folder), args.workers, args.max_requests)]
        try:
            if python is not None:
                targets.append(start_peer(Path(folder), python))
            if args.stack_floor:
                targets.append(start_stack_floor(Path(folder), args.workers))
            if args.durable_floor:
                targets.append(start_stack_floor(Path(folder), args.workers, durable=True))
            for tree in args.baseline_tree:
                targets.append(start_ours(Path(folder), args.workers, args.max_requests, tree=tree))
            if args.asgi:
                for candidate in bot_ack_asgi.CANDIDATES:
                    targets.append(
                        start_ours(Path(folder), args.workers, args.max_requests, candidate)
                    )
            progress("warming up")
            for target in targets:
                volley(target, args.senders, 5)
                target.sent.clear()
            for number in range(args.rounds):
                order = targets[number % len(targets) :] + targets[: number % len(targets)]
                for target in order:
                    progress(f"round {number + 1}: {target.name}, closed then open loop")
                    latencies, seconds, cpu = volley(target, args.senders, args.per_sender)
                    target.closed += latencies
                    target.closed_seconds += seconds
                    target.closed_cpu += cpu
                    paced, _, cpu = volley(target, args.senders, args.per_sender, args.rate)
                    target.paced += paced
                    target.paced_cpu += cpu
            memory = {target.name: memory_kib(target) for target in targets}
        finally:
            for target in targets:
                target.stop()
        # Counted once each server has stopped: a 202 promises the delivery is kept, and the
        # bot's spool commits it a moment later (its workers commit the rest as they exit).
        results = {
            target.name: {
                **figures(target, args.rate, args.senders),
                "rss_kib": memory[target.name],
            }
            for target in targets
        }
    ours = results["freemad"]
    out: dict[str, Any] = {
        "benchmark": "bot_ack",
        "machine": machine(),
        "senders": args.senders,
        "rounds": args.rounds,
        "web_workers": args.workers,
        "max_requests": args.max_requests,
        "payload_bytes": len(payload()),
        "baseline_trees": [str(tree) for tree in args.baseline_tree],
        **results,
        "budget_p99_ms": BUDGET_P99_MS,
        "open_loop_meets_budget": ours["open_loop"]["ack_latency_ms"]["p99"] < BUDGET_P99_MS,
    }
    out.update(comparisons(results, python, args.asgi))
    emit(out)
    lost = any(
        r["non_202"] or r["lost"] or (r["recorded"] is not None and r["sent"] != r["recorded"])
        for r in results.values()
    )
    sys.exit(1 if lost else 0)


def comparisons(
    results: dict[str, dict[str, Any]], python: str | None, asgi: bool
) -> dict[str, Any]:
    """Each server's ratios to the peer and to the stack's floors, as far as they ran."""
    out: dict[str, Any] = {}
    if python is not None:
        peer = results["gidgethub_aiohttp"]
        out["peer_versions"] = versions(python)
        out["ratios_ours_over_peer"] = peer_ratios(results["freemad"], peer)
        for name, result in results.items():
            if name not in ("freemad", "gidgethub_aiohttp"):
                out[f"ratios_{name}_over_peer"] = peer_ratios(result, peer)
    for floor_name, key in (
        (FLOOR, "ratios_over_floor"),
        (DURABLE_FLOOR, "ratios_over_durable_floor"),
    ):
        floor = results.get(floor_name)
        if floor is not None:
            out[key] = {
                name: floor_ratios(result, floor)
                for name, result in results.items()
                if name not in (FLOOR, DURABLE_FLOOR)
            }
    if asgi:
        out["asgi_versions"] = bot_ack_asgi.versions()
    return out


if __name__ == "__main__":
    main()
