"""The bot's ports: the values its parts hand each other, the rules every adapter keeps, and the
protocols of the executor, the delivery log and the claims.

The adapters (SQLite in `deliveries` and `claims`, Redis in `redis_stores`, the executors in
`executors`) import this module and nothing of each other; `stores` picks the log and claims.
"""

from __future__ import annotations

import hashlib
import os
import socket
import uuid
from dataclasses import dataclass
from typing import Protocol

from freemad.errors import FreemadError

STATUSES = ("queued", "running", "done", "failed", "parked", "ignored")
FINISHED = frozenset({"done", "ignored", "parked"})  # final: no worker runs these again
LEASE_SECONDS = 120.0  # a claim not renewed for this long is up for grabs


class DeliveryLogUnavailable(FreemadError):
    """The delivery log cannot be read or written (its file or its server is out of reach,
    refuses us, or is damaged): the web edge answers 503, so GitHub may redeliver later."""


@dataclass(frozen=True)
class Delivery:
    """One webhook delivery as the web edge accepted it (signature checked, JSON parsed)."""

    delivery_id: str  # X-GitHub-Delivery
    event: str  # X-GitHub-Event
    action: str | None
    installation_id: int | None
    repo: str | None  # "owner/name", when the payload names a repository
    body: bytes  # the raw payload, exactly as signed


@dataclass(frozen=True)
class DeliveryRecord:
    """A row of the log without its body: what `recent` lists."""

    delivery_id: str
    event: str
    action: str | None
    installation_id: int | None
    repo: str | None
    received_at: float
    updated_at: float
    status: str
    attempts: int
    detail: str


def body_digest(body: bytes) -> str:
    """The hex SHA-256 of a delivery's body: the same body under another delivery id is a replay."""
    return hashlib.sha256(body).hexdigest()


def check_status(status: str) -> None:
    """ValueError unless `status` is one a delivery can have."""
    if status not in STATUSES:
        raise ValueError(f"unknown delivery status {status!r}; expected one of {STATUSES}")


@dataclass(frozen=True)
class Owner:
    """Who holds a claim: a host (with its PID namespace), a process, and one job's token."""

    host: str
    pid: int
    token: str

    @classmethod
    def here(cls) -> Owner:
        return cls(host_key(), os.getpid(), uuid.uuid4().hex[:12])

    def __str__(self) -> str:
        return f"{self.host}/{self.pid}/{self.token}"


def host_key() -> str:
    """This host as claims name it: two containers may share a host name, never a PID namespace."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return f"{socket.gethostname()}#{namespace}"


def holder_gone(host: str, pid: int) -> bool:
    """True only when a claim's holder is certainly dead: on this host, and no such PID."""
    if host != host_key() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by someone else
        return False
    return False


@dataclass(frozen=True)
class Effect:
    """One GitHub write a job made: a comment or pull request (`ref` its id or number), or a
    dispatch (`url` the run it started, "" when GitHub did not say)."""

    repo: str
    number: int
    ref: int
    url: str


class Executor(Protocol):
    """Where accepted deliveries go to be worked: a local durable queue, or GitHub Actions.

    An executor whose `submit` only enqueues (never waits on GitHub) says so with a class
    attribute `quick_submit = True`: the web edge then lets other acknowledgements wait their
    turn behind it. One that does not say (a test double, say) is taken to be slow.
    """

    def submit(self, delivery: Delivery) -> None:
        """Hand the delivery over durably; it must return fast (GitHub waits 10 s in all)."""
        ...

    def depth(self) -> int | None:
        """Jobs waiting, for /healthz; None when the executor cannot tell."""
        ...

    def heartbeat(self) -> float | None:
        """Unix time of the workers' last sign of life, for /healthz; None when unknown."""
        ...


class DeliveryStore(Protocol):
    """The delivery log: SQLite on one host (`deliveries.DeliveryLog`), or Redis shared by many
    (`redis_stores.RedisDeliveryLog`). Both keep the same rules, and both raise
    `DeliveryLogUnavailable` when they cannot be reached; `stores.delivery_log` picks.

    `local_file`: True when the log is a file on this host, whose writers the web edge lines up
    on a lock of its own (SQLite's busy wait is slower than a queue on a file lock).
    """

    local_file: bool

    def record(self, delivery: Delivery, *, status: str = "queued") -> bool: ...

    def get(self, delivery_id: str) -> Delivery | None: ...

    def mark(
        self, delivery_id: str, status: str, detail: str = "", *, attempt: bool = False
    ) -> None: ...

    def status(self, delivery_id: str) -> str | None: ...

    def recent(self, limit: int = 50) -> list[DeliveryRecord]: ...

    def unfinished(self) -> list[DeliveryRecord]:
        """Every delivery a worker may still have to run, however old, oldest first: `queued`,
        `running`, or `failed` after an attempt. Read from an index kept in step with each
        status change, not from a scan of the latest deliveries: the recovery sweep relies on it."""
        ...

    def counts(self, since: float) -> dict[str, int]: ...

    def close(self) -> None: ...


class ClaimStore(Protocol):
    """Leased claims on deliveries and the journal of their GitHub writes: SQLite
    (`claims.Claims`) or Redis (`redis_stores.RedisClaims`); `stores.claims_store` picks."""

    def claim(self, delivery_id: str, owner: Owner, lease: float = ...) -> int | None: ...

    def renew(self, delivery_id: str, owner: Owner, lease: float = ...) -> bool: ...

    def holds(self, delivery_id: str, owner: Owner) -> bool: ...

    def live(self, delivery_id: str) -> bool: ...

    def release(self, delivery_id: str, owner: Owner) -> None: ...

    def effect(self, delivery_id: str, kind: str, seq: int) -> Effect | None: ...

    def record(self, delivery_id: str, kind: str, seq: int, effect: Effect) -> None: ...

    def close(self) -> None: ...
