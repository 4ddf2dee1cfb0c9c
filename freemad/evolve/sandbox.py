"""The judge sandbox: where judge stages and worker commands run, and what isolation they get.

Every command runs without a shell, in a session of its own killed as a group at its time limit,
with an environment built from an allowlist plus the configured passthrough names. With the
network off it gets a network namespace of its own where the system allows. In a container, only
the worktree is mounted, and a missing or unreachable runtime fails: it never falls back to the host.
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from freemad.debate.validation import network_isolation
from freemad.tasks.policy import ENV_ALLOWLIST, CommandResult, command_env, run_command

# What the container runtime's own CLI needs to reach its daemon; never passed into the container.
RUNTIME_ENV = (
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "DOCKER_CONTEXT",
    "XDG_RUNTIME_DIR",
    "CONTAINER_HOST",
)
_PROBE_TIMEOUT = 10.0
_KILL_TIMEOUT = 15.0


class ContainerSpec(Protocol):
    """The container settings a sandbox needs; `freemad.config.evolve.ContainerConfig` fits."""

    @property
    def enabled(self) -> bool: ...
    @property
    def runtime(self) -> str: ...
    @property
    def image(self) -> str | None: ...


class Sandbox(Protocol):
    """Runs one command with the isolation in force, and says what that isolation is."""

    def run(self, argv: Sequence[str], cwd: Path, timeout: float) -> CommandResult: ...

    def describe(self) -> list[str]:
        """One plain sentence per kind of isolation in force."""
        ...

    def problem(self) -> str | None:
        """None when commands can run; else why they cannot, one line."""
        ...


@functools.cache
def die_with_parent() -> list[str]:
    """The argv prefix that kills a stage when FREE-MAD itself dies (kill -9 included), so a
    killed run leaves no stage running on; [] where `setpriv --pdeathsig` is not available."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return []
    try:
        probe = subprocess.run(
            [setpriv, "--pdeathsig", "KILL", "--", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [setpriv, "--pdeathsig", "KILL", "--"] if probe.returncode == 0 else []


def _passthrough_line(names: Sequence[str], base: str, alone: str) -> str:
    return f"environment: {base} plus passthrough {', '.join(names)}" if names else alone


class HostSandbox:
    """Commands run on this host as the current user, in a network namespace when asked."""

    def __init__(self, network: bool, env_passthrough: Sequence[str]) -> None:
        self.network = network
        self.env_passthrough = tuple(env_passthrough)

    def _prefix(self) -> list[str]:
        return ([] if self.network else network_isolation()) + die_with_parent()

    def run(self, argv: Sequence[str], cwd: Path, timeout: float) -> CommandResult:
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
            "judge stages run on this host as you (no container)",
            network,
            _passthrough_line(self.env_passthrough, base, f"environment: {base} only"),
        ]

    def problem(self) -> str | None:
        return None


class ContainerSandbox:
    """Commands run in a Docker or Podman container with only the worktree mounted at /work."""

    def __init__(
        self, network: bool, env_passthrough: Sequence[str], runtime: str, image: str | None
    ) -> None:
        self.network = network
        self.env_passthrough = tuple(env_passthrough)
        self.runtime = runtime
        self.image = image
        self._checked = False
        self._problem: str | None = None
        self._program = runtime

    def _cli_env(self) -> tuple[str, ...]:
        return (*self.env_passthrough, *RUNTIME_ENV)

    def problem(self) -> str | None:
        if not self._checked:
            self._problem = self._probe()
            self._checked = True
        return self._problem

    def _probe(self) -> str | None:
        if not self.image:
            return f"{self.runtime} container has no image; set judge.container.image"
        program = shutil.which(self.runtime)
        if program is None:
            return (
                f"container runtime {self.runtime} not found on PATH;"
                " install it or set judge.container.enabled: false"
            )
        self._program = program
        info = run_command(
            [program, "info"], Path("/"), _PROBE_TIMEOUT, env_passthrough=self._cli_env()
        )
        if info.ok():
            return None
        if info.timed_out:
            why = f"{self.runtime} info gave no answer within {_PROBE_TIMEOUT:g}s"
        else:
            lines = [line.strip() for line in info.stderr.splitlines() if line.strip()]
            why = f"{self.runtime} info failed: {lines[0] if lines else f'exit {info.exit_code}'}"
        return f"{self.runtime} is installed but not reachable ({why})"

    def _refuse(self, argv: Sequence[str], why: str, started: float) -> CommandResult:
        return CommandResult(list(argv), None, "", why, False, time.monotonic() - started)

    def run(self, argv: Sequence[str], cwd: Path, timeout: float) -> CommandResult:
        started = time.monotonic()
        problem = self.problem()
        if problem is not None:
            return self._refuse(argv, f"not run: {problem}", started)
        worktree = Path(cwd).resolve()
        if ":" in str(worktree):
            return self._refuse(
                argv, f"not run: {worktree} has a ':' and cannot be mounted", started
            )
        name = f"freemad-judge-{secrets.token_hex(6)}"
        invocation = [self._program, "run", "--rm", "--name", name]
        if not self.network:
            invocation += ["--network", "none"]
        invocation += ["--user", f"{os.getuid()}:{os.getgid()}"]
        invocation += ["-v", f"{worktree}:/work", "-w", "/work"]
        for variable in self.env_passthrough:
            if variable in os.environ:
                invocation += ["-e", variable]  # the value comes from the CLI's own environment
        assert self.image is not None  # problem() refuses a container without one
        invocation.append(self.image)
        result = run_command(
            argv, worktree, timeout, env_passthrough=self._cli_env(), prefix=invocation
        )
        if result.timed_out:
            # Killing the CLI leaves the container running; stop it by name.
            kill = [self._program, "kill", name]
            run_command(kill, worktree, _KILL_TIMEOUT, env_passthrough=self._cli_env())
        return result

    def describe(self) -> list[str]:
        network = (
            "network: on, stages can reach the network"
            if self.network
            else "network: off, each stage's container has no network (--network none)"
        )
        lines = [
            f"judge stages run in a {self.runtime} container (image {self.image})"
            " with only the worktree mounted, at /work",
            network,
            _passthrough_line(
                self.env_passthrough,
                "the image's own",
                "environment: the image's own, none passed in",
            ),
        ]
        problem = self.problem()
        return [*lines, f"unusable: {problem}"] if problem else lines


def make_sandbox(
    network: bool, env_passthrough: Sequence[str], container: ContainerSpec | None
) -> Sandbox:
    """The sandbox the settings ask for; ValueError when a passthrough name looks like a secret."""
    command_env(env_passthrough)  # raises on a secret-looking name, before anything runs
    if container is not None and container.enabled:
        return ContainerSandbox(network, env_passthrough, container.runtime, container.image)
    return HostSandbox(network, env_passthrough)
