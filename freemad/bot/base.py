"""What the bot's parts share: a recorded delivery, and the executor port the web edge hands it to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


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
