"""Judge stages in a Docker or Podman container, for those who want one: only the worktree is
mounted, at /work. A missing or unreachable runtime fails; it never falls back to the host.
Agent CLIs are not run in the container (their login lives on the host)."""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from freemad.sandbox.host import die_with_parent, passthrough_line
from freemad.sandbox.port import View
from freemad.sandbox.process import CommandResult, run_command

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

    def network_isolated(self) -> bool:
        return not self.network  # --network none

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

    kind = "container"

    def agent_argv(
        self, argv: Sequence[str], cwd: Path, view: View, own: Sequence[str]
    ) -> list[str]:
        return [*die_with_parent(), *argv]  # on the host: the agent's login is there

    def run(self, argv: Sequence[str], cwd: Path, timeout: float, view: View) -> CommandResult:
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
            passthrough_line(
                self.env_passthrough,
                "the image's own",
                "environment: the image's own, none passed in",
            ),
        ]
        problem = self.problem()
        return [*lines, f"unusable: {problem}"] if problem else lines
