"""Sandboxes: the port (`base`: `Sandbox`, `SandboxFactory`, `View`), its adapters (bubblewrap,
host, container) and choosing one (`choose`), re-exported here. Runtimes import the port only;
the surfaces hand them their sandboxes (`freemad.wiring`)."""

from __future__ import annotations

from freemad.sandbox.choose import Unavailable, agent_sandbox, code_sandbox
from freemad.sandbox.port import (
    ContainerSpec,
    Sandbox,
    SandboxFactory,
    SandboxUnavailable,
    View,
)

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
