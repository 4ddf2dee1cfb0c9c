"""The agent port: one call of an agent CLI with a prompt, what came back, and the factory
that makes a configured agent's port (surfaces hand runtimes one; runtimes never build one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Protocol

from freemad.config.models import AgentConfig, Mode

if TYPE_CHECKING:
    from freemad.sandbox.sandbox_port import Sandbox, View


class CallStatus(str, Enum):
    OK = "ok"
    EXIT_ERROR = "exit_error"
    TIMEOUT = "timeout"
    NOT_LOGGED_IN = "not_logged_in"
    SPAWN_ERROR = "spawn_error"
    OUTPUT_TOO_LARGE = "output_too_large"
    CONTEXT_EXCEEDED = "context_exceeded"  # the prompt was past what the model takes
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


class AgentFactory(Protocol):
    """Makes the port of one configured agent, working in `workdir`, in `sandbox` when one is
    given, seeing `view`. freemad.wiring has the real one (a CLI in a process of its own)."""

    def __call__(
        self,
        config: AgentConfig,
        *,
        max_output_bytes: int,
        workdir: str,
        sandbox: Sandbox | None,
        view: View,
    ) -> AgentPort: ...
