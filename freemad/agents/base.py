"""The agent port: one call of an agent CLI with a prompt, and what came back."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from freemad.config.models import Mode


class CallStatus(str, Enum):
    OK = "ok"
    EXIT_ERROR = "exit_error"
    TIMEOUT = "timeout"
    NOT_LOGGED_IN = "not_logged_in"
    SPAWN_ERROR = "spawn_error"
    OUTPUT_TOO_LARGE = "output_too_large"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class CallRequest:
    mode: Mode
    prompt: str
    time_limit: float


@dataclass(frozen=True, slots=True)
class CallResult:
    status: CallStatus
    text: str = ""
    stderr_tail: str = ""
    exit_code: int | None = None
    duration: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    detail: str = ""
    argv: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.status is CallStatus.OK


class AgentPort(Protocol):
    """What the runtimes need of an agent: an id and one call. Cancellation must stop the agent."""

    @property
    def agent_id(self) -> str: ...

    async def call(self, request: CallRequest) -> CallResult: ...
