"""Sandboxes: the port (`base`: `Sandbox`, `SandboxFactory`, `View`), its adapters (bubblewrap,
host, container) and choosing one (`choose`), re-exported here. Runtimes import the port only;
the surfaces hand them their sandboxes (`freemad.wiring`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from freemad.sandbox.sandbox_port import (
    ContainerSpec,
    Sandbox,
    SandboxFactory,
    SandboxUnavailable,
    View,
)

if TYPE_CHECKING:
    from freemad.sandbox.choose import Unavailable, agent_sandbox, code_sandbox

__all__ = [
    "ContainerSpec",
    "Sandbox",
    "SandboxFactory",
    "SandboxUnavailable",
    "Unavailable",
    "View",
    "agent_sandbox",
    "code_sandbox",
]


def __getattr__(name: str) -> Any:
    # The adapters load when first asked for: an agent call on the host (`freemad.sandbox.host`
    # and the reaper) needs none of them.
    if name in {"Unavailable", "agent_sandbox", "code_sandbox"}:
        from freemad.sandbox import choose

        return getattr(choose, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
