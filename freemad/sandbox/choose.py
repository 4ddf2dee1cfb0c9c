"""Choosing a sandbox: bubblewrap where it runs, a container where asked, the host only on purpose
(`security.sandbox: host`), and otherwise a refusal that says why. The adapters behind
`freemad.sandbox.sandbox_port.SandboxFactory`: the surfaces hand the runtimes their choice
(`freemad.wiring`), the runtimes never make it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from freemad.sandbox.bubblewrap import BubblewrapSandbox
from freemad.sandbox.container import ContainerSandbox
from freemad.sandbox.host import HostSandbox
from freemad.sandbox.process import CommandResult, command_env
from freemad.sandbox.sandbox_port import ContainerSpec, Sandbox, SandboxUnavailable, View


def _advice(problem: str) -> str:
    return (
        f"no sandbox: {problem}; install bubblewrap (Debian and Ubuntu: apt-get install"
        " bubblewrap), or set security.sandbox: host to run without one, on purpose (unsafe"
        " against a hostile agent)"
    )


class Unavailable:
    """Refuses every call, saying why; what the factories give when no sandbox can run."""

    kind = "unavailable"

    def __init__(self, why: str) -> None:
        self.why = why

    def run(self, argv: Sequence[str], cwd: Path, timeout: float, view: View) -> CommandResult:
        return CommandResult(list(argv), None, "", f"not run: {self.why}", False, 0.0)

    def agent_argv(
        self, argv: Sequence[str], cwd: Path, view: View, own: Sequence[str]
    ) -> list[str]:
        raise SandboxUnavailable(self.why)

    def describe(self) -> list[str]:
        return [f"unusable: {self.why}"]

    def problem(self) -> str | None:
        return self.why

    def network_isolated(self) -> bool:
        return False  # nothing runs


def code_sandbox(
    mode: str,
    network: bool = False,
    env_passthrough: Sequence[str] = (),
    container: ContainerSpec | None = None,
) -> Sandbox:
    """Where code an agent wrote or chose runs. ValueError when a passthrough name looks like a
    secret; an `Unavailable` sandbox (never the host) when the one asked for cannot run."""
    command_env(env_passthrough)  # raises on a secret-looking name, before anything runs
    if container is not None and container.enabled:
        return ContainerSandbox(network, env_passthrough, container)
    if mode == "host":
        return HostSandbox(network, env_passthrough)
    box = BubblewrapSandbox(network, env_passthrough)
    problem = box.problem()
    return box if problem is None else Unavailable(_advice(problem))


def agent_sandbox(mode: str, *, container_judge: bool = False) -> Sandbox:
    """Where agent CLIs that edit files run: bubblewrap; the host when the config says so, or
    when the judge runs in a container (where bubblewrap cannot run, as on macOS)."""
    if mode == "host":
        return HostSandbox(True, ())
    box = BubblewrapSandbox(True, ())
    problem = box.problem()
    if problem is None:
        return box
    if container_judge and mode == "auto":
        return HostSandbox(True, ())
    return Unavailable(_advice(problem))
