"""Running on this host as the current user, only where the config asks for it on purpose
(`security.sandbox: host`): nothing stops a hostile worker. Each call is still a process group of
its own killed at its end, with a scrubbed environment and, for code without network, a network
namespace of its own where the system allows (`unshare -n`)."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from freemad.sandbox import reaper
from freemad.sandbox.process import ENV_ALLOWLIST, CommandResult, run_command
from freemad.sandbox.sandbox_port import View


@functools.cache
def network_isolation() -> list[str]:
    """The argv prefix that gives a child its own empty network namespace, if this system allows."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    try:
        probe = subprocess.run(
            [unshare, "-n", "--", sys.executable, "-c", "pass"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [unshare, "-n", "--"] if probe.returncode == 0 else []


_PDEATHSIG = ["--pdeathsig", "KILL", "--"]


def guard() -> list[str]:
    """The argv prefix a command needs to die with FREE-MAD: none while this process's reaper
    watches the commands it starts (`freemad.sandbox.reaper`), else `die_with_parent()`."""
    return [] if reaper.enabled() else die_with_parent()


@functools.cache
def die_with_parent() -> list[str]:
    """The argv prefix that kills a command when FREE-MAD itself dies (kill -9 included), so a
    killed run leaves none running on; [] where `setpriv --pdeathsig` is not available. Only
    where the reaper cannot run (`guard`): it costs an exec per command."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return []
    try:
        probe = subprocess.run(
            [setpriv, *_PDEATHSIG, "true"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [setpriv, *_PDEATHSIG] if probe.returncode == 0 else []


def passthrough_line(names: Sequence[str], base: str, alone: str) -> str:
    return f"environment: {base} plus passthrough {', '.join(names)}" if names else alone


class HostSandbox:
    """Commands run on this host as the current user, in a network namespace when asked."""

    kind = "host"

    def __init__(self, network: bool, env_passthrough: Sequence[str]) -> None:
        self.network = network
        self.env_passthrough = tuple(env_passthrough)

    def _prefix(self) -> list[str]:
        return ([] if self.network else network_isolation()) + guard()

    def agent_argv(
        self, argv: Sequence[str], cwd: Path, view: View, own: Sequence[str]
    ) -> list[str]:
        return [*guard(), *argv]

    def run(self, argv: Sequence[str], cwd: Path, timeout: float, view: View) -> CommandResult:
        return run_command(
            argv, cwd, timeout, env_passthrough=self.env_passthrough, prefix=self._prefix()
        )

    def describe(self) -> list[str]:
        if self.network:
            network = "network: on, stages can reach the network"
        elif network_isolation():
            network = "network: off, each stage in a network namespace of its own (unshare -n)"
        else:
            network = (
                "network: off requested, but this system cannot give a process its own"
                " network namespace: stages CAN reach the network"
            )
        base = ", ".join(ENV_ALLOWLIST)
        return [
            "sandbox: none (security.sandbox: host); code and agents run on this host as you, UNSAFE against a hostile worker",
            network,
            passthrough_line(self.env_passthrough, base, f"environment: {base} only"),
        ]

    def problem(self) -> str | None:
        return None

    def network_isolated(self) -> bool:
        return not self.network and bool(network_isolation())
