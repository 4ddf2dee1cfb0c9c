"""What the bot's parts share: a recorded delivery, and the executor port the web edge hands it to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from freemad.bot.claims import Effect, Owner
    from freemad.bot.deliveries import DeliveryRecord


@dataclass(frozen=True)
class Delivery:
    """One webhook delivery as the web edge accepted it (signature checked, JSON parsed)."""

    delivery_id: str  # X-GitHub-Delivery
    event: str  # X-GitHub-Event
    action: str | None
    installation_id: int | None
    repo: str | None  # "owner/name", when the payload names a repository
    body: bytes  # the raw payload, exactly as signed


class Executor(Protocol):
    """Where accepted deliveries go to be worked: a local durable queue, or GitHub Actions."""

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
    (`redis_state.RedisDeliveryLog`). Both keep the same rules; `stores.delivery_log` picks."""

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
    (`claims.Claims`) or Redis (`redis_state.RedisClaims`); `stores.claims_store` picks."""

    def claim(self, delivery_id: str, owner: Owner, lease: float = ...) -> int | None: ...

    def renew(self, delivery_id: str, owner: Owner, lease: float = ...) -> bool: ...

    def holds(self, delivery_id: str, owner: Owner) -> bool: ...

    def live(self, delivery_id: str) -> bool: ...

    def release(self, delivery_id: str, owner: Owner) -> None: ...

    def effect(self, delivery_id: str, kind: str, seq: int) -> Effect | None: ...

    def record(self, delivery_id: str, kind: str, seq: int, effect: Effect) -> None: ...

    def close(self) -> None: ...
