"""Claims on deliveries and the journal of their GitHub writes: what lets a job complete once.

A job runs a delivery only while it holds the delivery's claim (`Claims`, SQLite at
`state_dir/claims.db`): a lease, renewed while the job works, that lapses when renewals stop, or
at once when the holder's process is certainly gone. The same file journals each delivery's
comments, pull requests and dispatches in order of posting; `JournalForge` checks the claim
before every write and replays the journal, so a rerun of a killed job edits what the killed run
posted instead of posting it again.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from freemad.errors import FreemadError
from freemad.github.forge import (
    Forge,
    IssueDetails,
    PostedComment,
    PullRequestDetails,
    PullRequestRef,
)

if TYPE_CHECKING:
    from freemad.bot.base import ClaimStore

LEASE_SECONDS = 120.0  # a claim not renewed for this long is up for grabs


@dataclass(frozen=True)
class Owner:
    """Who holds a claim: a host (with its PID namespace), a process, and one job's token."""

    host: str
    pid: int
    token: str

    @classmethod
    def here(cls) -> Owner:
        return cls(_host_key(), os.getpid(), uuid.uuid4().hex[:12])

    def __str__(self) -> str:
        return f"{self.host}/{self.pid}/{self.token}"


def _host_key() -> str:
    try:  # two containers may share a host name but never a PID namespace
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return f"{socket.gethostname()}#{namespace}"


def _gone(host: str, pid: int) -> bool:
    """True only when the process is certainly dead: on this host, and no such PID."""
    if host != _host_key() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by someone else
        return False
    return False


def wal(conn: sqlite3.Connection, attempts: int = 100) -> None:
    """Switch a fresh connection to WAL. Two processes doing this to a brand-new file at once can
    get "database is locked" at once, without the busy handler's wait: try again a moment later."""
    for attempt in range(attempts):
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.02)


@dataclass(frozen=True)
class Effect:
    """One GitHub write a job made: a comment or pull request (`ref` its id or number), or a
    dispatch (`url` the run it started, "" when GitHub did not say)."""

    repo: str
    number: int
    ref: int
    url: str


_SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
    delivery_id TEXT PRIMARY KEY, owner TEXT, host TEXT, pid INTEGER,
    expires REAL NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS effects (
    delivery_id TEXT NOT NULL, kind TEXT NOT NULL, seq INTEGER NOT NULL, repo TEXT NOT NULL,
    number INTEGER NOT NULL, ref INTEGER NOT NULL, url TEXT NOT NULL,
    PRIMARY KEY (delivery_id, kind, seq));
"""
_SELECT_CLAIM = "SELECT owner, host, pid, expires, attempts FROM claims WHERE delivery_id = ?"


class Claims:
    """Leases on deliveries, and the journal of what each delivery's jobs posted (SQLite, WAL)."""

    def __init__(self, path: Path | str, *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self._clock = clock
        self._lock = threading.Lock()
        self._conn: tuple[int, sqlite3.Connection] | None = None

    @contextmanager
    def _db(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None or self._conn[0] != os.getpid():  # never reuse across a fork
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(
                    self.path, timeout=30, isolation_level=None, check_same_thread=False
                )
                wal(conn)
                conn.executescript(_SCHEMA)
                self._conn = (os.getpid(), conn)
            conn = self._conn[1]
            if not write:
                yield conn
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def claim(self, delivery_id: str, owner: Owner, lease: float = LEASE_SECONDS) -> int | None:
        """Take the delivery's claim: the attempt number (from 1), or None when it is held."""
        now = self._clock()
        with self._db(write=True) as db:
            row = db.execute(_SELECT_CLAIM, (delivery_id,)).fetchone()
            if row is not None and _live(row, now):
                return None
            attempt = (row[4] if row is not None else 0) + 1
            db.execute(
                "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?)",
                (delivery_id, str(owner), owner.host, owner.pid, now + lease, attempt),
            )
            return int(attempt)

    def renew(self, delivery_id: str, owner: Owner, lease: float = LEASE_SECONDS) -> bool:
        with self._db(write=True) as db:
            cursor = db.execute(
                "UPDATE claims SET expires = ? WHERE delivery_id = ? AND owner = ?",
                (self._clock() + lease, delivery_id, str(owner)),
            )
            return cursor.rowcount == 1

    def holds(self, delivery_id: str, owner: Owner) -> bool:
        with self._db() as db:
            row = db.execute(_SELECT_CLAIM, (delivery_id,)).fetchone()
        return row is not None and row[0] == str(owner) and row[3] > self._clock()

    def live(self, delivery_id: str) -> bool:
        """Whether someone holds the delivery's claim and may still be working on it."""
        with self._db() as db:
            row = db.execute(_SELECT_CLAIM, (delivery_id,)).fetchone()
        return row is not None and _live(row, self._clock())

    def release(self, delivery_id: str, owner: Owner) -> None:
        with self._db(write=True) as db:
            db.execute(
                "UPDATE claims SET owner = NULL, host = NULL, pid = NULL, expires = 0"
                " WHERE delivery_id = ? AND owner = ?",
                (delivery_id, str(owner)),
            )

    def effect(self, delivery_id: str, kind: str, seq: int) -> Effect | None:
        with self._db() as db:
            row = db.execute(
                "SELECT repo, number, ref, url FROM effects"
                " WHERE delivery_id = ? AND kind = ? AND seq = ?",
                (delivery_id, kind, seq),
            ).fetchone()
        return None if row is None else Effect(str(row[0]), int(row[1]), int(row[2]), str(row[3]))

    def record(self, delivery_id: str, kind: str, seq: int, effect: Effect) -> None:
        with self._db(write=True) as db:
            db.execute(
                "INSERT OR REPLACE INTO effects VALUES (?, ?, ?, ?, ?, ?, ?)",
                (delivery_id, kind, seq, effect.repo, effect.number, effect.ref, effect.url),
            )

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._conn[0] == os.getpid():
                self._conn[1].close()
            self._conn = None


def _live(row: tuple[Any, ...], now: float) -> bool:
    owner, host, pid, expires = row[0], row[1], row[2], row[3]
    return owner is not None and expires > now and not _gone(str(host), int(pid))


@dataclass(frozen=True)
class Claim:
    """One job's hold on one delivery: what its forge checks before each write, and journals to."""

    claims: ClaimStore
    delivery_id: str
    owner: Owner
    attempt: int

    def holds(self) -> bool:
        return self.claims.holds(self.delivery_id, self.owner)

    def effect(self, kind: str, seq: int) -> Effect | None:
        return self.claims.effect(self.delivery_id, kind, seq)

    def record(self, kind: str, seq: int, effect: Effect) -> None:
        self.claims.record(self.delivery_id, kind, seq, effect)


class LeaseLost(FreemadError):
    """This job's claim lapsed and may be someone else's now: it must write nothing more."""


class JournalForge:
    """A forge that checks its claim before each write and journals comments, pull requests and
    dispatches by order of posting, so a rerun of the same delivery edits instead of repeating."""

    def __init__(self, inner: Forge, claim: Claim) -> None:
        self.inner, self.claim = inner, claim
        self._counts: dict[str, int] = {}

    def _write(self, kind: str) -> tuple[int, Effect | None]:
        if not self.claim.holds():
            raise LeaseLost(f"the claim on delivery {self.claim.delivery_id} lapsed")
        seq = self._counts[kind] = self._counts.get(kind, 0) + 1
        return seq, self.claim.effect(kind, seq)

    def pages_url(self, repo: str) -> str | None:
        return self.inner.pages_url(repo)

    def permission(self, repo: str, login: str) -> str | None:
        return self.inner.permission(repo, login)

    def comment(self, repo: str, number: int, body: str) -> PostedComment:
        seq, done = self._write("comment")
        if done is not None and (done.repo, done.number) == (repo, number):
            return self.inner.edit_comment(repo, done.ref, body)
        posted = self.inner.comment(repo, number, body)
        self.claim.record("comment", seq, Effect(repo, number, posted.id, posted.html_url))
        return posted

    def edit_comment(self, repo: str, comment_id: int, body: str) -> PostedComment:
        self._write("edit")
        return self.inner.edit_comment(repo, comment_id, body)

    def react(self, repo: str, comment_id: int, content: str) -> None:
        self._write("react")
        self.inner.react(repo, comment_id, content)

    def react_to_review_comment(self, repo: str, comment_id: int, content: str) -> None:
        self._write("react")
        self.inner.react_to_review_comment(repo, comment_id, content)

    def open_pull_request(
        self, repo: str, *, head: str, base: str, title: str, body: str, draft: bool
    ) -> PullRequestRef:
        seq, done = self._write("pull")
        if done is not None and done.repo == repo:
            self.inner.edit_pull_request(repo, done.ref, body=body)
            return PullRequestRef(done.ref, done.url)
        ref = self.inner.open_pull_request(
            repo, head=head, base=base, title=title, body=body, draft=draft
        )
        self.claim.record("pull", seq, Effect(repo, ref.number, ref.number, ref.html_url))
        return ref

    def edit_pull_request(self, repo: str, number: int, *, body: str) -> None:
        self._write("edit")
        self.inner.edit_pull_request(repo, number, body=body)

    def pull_request(self, repo: str, number: int) -> PullRequestDetails:
        return self.inner.pull_request(repo, number)

    def issue(self, repo: str, number: int) -> IssueDetails:
        return self.inner.issue(repo, number)

    def find_pull_request(self, repo: str, *, head: str, base: str) -> PullRequestRef | None:
        return self.inner.find_pull_request(repo, head=head, base=base)

    def dispatch_workflow(
        self, repo: str, workflow: str, ref: str, inputs: Mapping[str, str]
    ) -> str | None:
        seq, done = self._write("dispatch")
        if done is not None:  # started already: the run it started, if GitHub said so
            return done.url if done.url.startswith(("https://", "http://")) else None
        run_url = self.inner.dispatch_workflow(repo, workflow, ref, inputs)
        self.claim.record("dispatch", seq, Effect(repo, 0, 0, run_url or ""))
        return run_url


class Renewal:
    """Renews a claim every quarter lease while a job runs."""

    def __init__(self, claim: Claim, lease: float) -> None:
        self.claim, self.lease = claim, lease
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="claim-renewal", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.lease / 4):
            if not self.claim.claims.renew(self.claim.delivery_id, self.claim.owner, self.lease):
                return

    def __enter__(self) -> Renewal:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
