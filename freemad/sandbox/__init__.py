"""Sandboxes: the port (`base`: `Sandbox`, `SandboxFactory`, `View`), its adapters (bubblewrap,
host, container) and choosing one (`choose`), re-exported here. Runtimes import the port only;
the surfaces hand them their sandboxes (`freemad.wiring`)."""

from __future__ import annotations

from freemad.sandbox.base import (
    ContainerSpec,
    Sandbox,
    SandboxFactory,
    SandboxUnavailable,
    View,
)
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
