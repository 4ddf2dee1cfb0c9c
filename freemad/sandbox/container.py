"""Judge stages in a Docker or Podman container, for those who want one: only the worktree is
mounted, at /work, with no capabilities, no new privileges, a read-only root file system, a
private /tmp and limits on memory, CPUs and processes; the extra mounts the config names are
read-only. A missing or unreachable runtime fails; it never falls back to the host. Agent CLIs
are not run in the container (their login lives on the host)."""

from __future__ import annotations

import contextlib
import os
import posixpath
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from freemad.config import mounts
from freemad.sandbox.container_sentinel import KILL_TIMEOUT
from freemad.sandbox.host import guard, passthrough_line
from freemad.sandbox.process import CommandResult, command_env, run_command
from freemad.sandbox.sandbox_port import (
    AGENT_HOMES,
    CREDENTIAL_STORES,
    DAEMON_SOCKETS,
    RUNTIME_DIRS,
    ContainerSpec,
    MountSpec,
    View,
)

# What the container runtime's own CLI needs to reach its daemon; never passed into the container.
RUNTIME_ENV = (
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "DOCKER_CONTEXT",
    "XDG_RUNTIME_DIR",
    "CONTAINER_HOST",
)
_PROBE_TIMEOUT = 10.0
_SENTINEL = Path(__file__).with_name("container_sentinel.py")
_SETTINGS = "judge.container"


def _exposes(real: Path) -> str | None:
    """What a mount of the host path `real` would show the stages that they must never see: a
    credential store, an agent's login, a folder of the host's sockets, a container daemon's
    socket (whoever reaches one commands the host); None when it shows none of them."""
    home = Path.home()
    guarded = [home / name for name in (*CREDENTIAL_STORES, *AGENT_HOMES)]
    guarded += [Path(place) for place in (*RUNTIME_DIRS, *DAEMON_SOCKETS)]
    if os.environ.get("XDG_RUNTIME_DIR"):
        guarded.append(Path(os.environ["XDG_RUNTIME_DIR"]))
    for place in guarded:
        for path in (place, place.resolve()):
            if real.is_relative_to(path) or path.is_relative_to(real):
                return f"{real} would show the stages {place}"
    return None


def _real_mount(mount: MountSpec) -> tuple[str, str]:
    """An extra mount's real host path and its target; ValueError when the path is not
    absolute, does not exist, cannot go into `--mount`, or `_exposes` something."""
    source = Path(mount.source)
    if not source.is_absolute():
        raise ValueError(f"{mount.source!r} is not an absolute path")
    if not source.exists():
        raise ValueError(f"{source} does not exist")
    real = source.resolve()  # a link is mounted as what it leads to, checked as that
    target = mounts.mount_target(mount.target)
    problem = mounts.mount_path_problem(str(real)) or _exposes(real)
    if problem is not None:
        raise ValueError(problem)
    return str(real), target


class ContainerSandbox:
    """Commands run in a Docker or Podman container with only the worktree mounted at /work."""

    def __init__(self, network: bool, env_passthrough: Sequence[str], spec: ContainerSpec) -> None:
        self.network = network
        self.env_passthrough = tuple(env_passthrough)
        self.spec = spec
        self.runtime = spec.runtime
        self.image = spec.image
        self._checked = False
        self._problem: str | None = None
        self._program = spec.runtime
        # What the probe checked, as the command line gets it: sizes, the folder, real paths.
        self._memory: str | None = None
        self._tmpfs = ""
        self._workdir = mounts.WORK
        self._mounts: list[tuple[str, str]] = []

    def _cli_env(self) -> tuple[str, ...]:
        return (*self.env_passthrough, *RUNTIME_ENV)

    def problem(self) -> str | None:
        if not self._checked:
            self._problem = self._probe()
            self._checked = True
        return self._problem

    def network_isolated(self) -> bool:
        return not self.network  # --network none

    def _settings_problem(self) -> str | None:
        """Checks the settings again as they reach the command line (the config checked them
        as text; a spec may come from elsewhere), and each extra mount's host path, keeping the
        real one: it must be absolute and exist, and show the stages nothing `_exposes` names."""
        spec, key = self.spec, "memory"
        try:
            self._memory = None if spec.memory is None else mounts.size(spec.memory, "6m")
            key = "tmpfs_size"
            self._tmpfs = mounts.size(spec.tmpfs_size, "1m")
            key = "workdir"
            self._workdir = mounts.workdir(spec.workdir)
            key = "pids_limit"
            if spec.pids_limit < 1:
                raise ValueError(f"{spec.pids_limit} is not a positive number")
            self._mounts = []
            for index, mount in enumerate(spec.extra_mounts):
                key = f"extra_mounts[{index}]"
                self._mounts.append(_real_mount(mount))
        except ValueError as exc:
            return f"{_SETTINGS}.{key}: {exc}"
        return None

    def _probe(self) -> str | None:
        if not self.image:
            return f"{self.runtime} container has no image; set judge.container.image"
        problem = self._settings_problem()
        if problem is not None:
            return problem
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
        return [*guard(), *argv]  # on the host: the agent's login is there

    def run(self, argv: Sequence[str], cwd: Path, timeout: float, view: View) -> CommandResult:
        started = time.monotonic()
        problem = self.problem()
        if problem is not None:
            return self._refuse(argv, f"not run: {problem}", started)
        worktree = Path(cwd).resolve()
        unsafe = mounts.mount_path_problem(str(worktree))
        if unsafe is not None:
            return self._refuse(argv, f"not run: the worktree cannot be mounted: {unsafe}", started)
        if not (worktree / posixpath.relpath(self._workdir, mounts.WORK)).is_dir():
            why = f"not run: {_SETTINGS}.workdir {self._workdir} is not a folder of the worktree"
            return self._refuse(argv, why, started)
        name = f"freemad-judge-{secrets.token_hex(6)}"
        invocation = [self._program, "run", "--rm", "--name", name]
        if not self.network:
            invocation += ["--network", "none"]
        invocation += ["--user", f"{os.getuid()}:{os.getgid()}", *self._hardening()]
        if self.runtime == "podman" and os.getuid() != 0:
            # Rootless podman maps the container's users to subordinate ids, which cannot write
            # the worktree; keep-id maps this user to itself (root may not ask for it).
            invocation += ["--userns", "keep-id"]
        invocation += ["--mount", f"type=bind,source={worktree},target={mounts.WORK}"]
        for source, target in self._mounts:
            invocation += ["--mount", f"type=bind,source={source},target={target},readonly"]
        invocation += ["--workdir", self._workdir]
        for variable in self.env_passthrough:
            if variable in os.environ:
                invocation += ["-e", variable]  # the value comes from the CLI's own environment
        assert self.image is not None  # problem() refuses a container without one
        invocation.append(self.image)
        # Killing the CLI leaves the container running: a stage that timed out, or whose run
        # was interrupted (Ctrl-C, an error above us, FREE-MAD killed outright), is stopped by
        # name by its sentinel, which outlives us.
        # One environment for the CLI and the sentinel: its kill reaches the same daemon.
        cli_env = command_env(self._cli_env())
        sentinel = _Sentinel(self._program, name, cli_env)
        try:
            result = run_command(argv, worktree, timeout, env=cli_env, prefix=invocation)
        except BaseException:
            sentinel.end(stop=True)
            raise
        sentinel.end(stop=result.timed_out)
        return result

    def _hardening(self) -> list[str]:
        """No capabilities, no new privileges (setuid programs gain nothing), a read-only root
        with a private /tmp (exec allowed: tests run what they build there, as they may in
        /work), and limits. `--memory-swap` equal to `--memory`: no swap beyond the limit."""
        flags = ["--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--read-only"]
        tmpfs = f"/tmp:rw,exec,nosuid,nodev,size={self._tmpfs},mode=1777"  # noqa: S108
        flags += ["--tmpfs", tmpfs]
        flags += ["--pids-limit", str(self.spec.pids_limit)]
        if self._memory is not None:
            flags += ["--memory", self._memory, "--memory-swap", self._memory]
        if self.spec.cpus is not None:
            flags += ["--cpus", f"{self.spec.cpus:g}"]
        return flags

    def describe(self) -> list[str]:
        network = (
            "network: on, stages can reach the network"
            if self.network
            else "network: off, each stage's container has no network (--network none)"
        )
        problem = self.problem()  # the probe checks the settings the lines below show
        spec = self.spec
        memory = f"memory {spec.memory} with no swap" if spec.memory else "memory: no limit"
        cpus = f"{spec.cpus:g} CPUs" if spec.cpus is not None else "CPUs: no limit"
        extra = ", ".join(f"{mount.source} at {mount.target}" for mount in spec.extra_mounts)
        lines = [
            f"judge stages run in a {self.runtime} container (image {self.image})"
            f" with only the worktree mounted, at /work; they run in {spec.workdir}",
            network,
            "hardening: no capabilities (--cap-drop ALL), no new privileges, a read-only root"
            f" file system, a private /tmp of {spec.tmpfs_size} (tmpfs), never --privileged",
            f"limits: {memory}, {cpus}, at most {spec.pids_limit} processes",
            f"read-only mounts: {extra}" if extra else "no other mounts",
            passthrough_line(
                self.env_passthrough,
                "the image's own",
                "environment: the image's own, none passed in",
            ),
        ]
        return [*lines, f"unusable: {problem}"] if problem else lines


class _Sentinel:
    """`container_sentinel.py` for one stage: it kills the container unless told the stage ended.

    Started before the stage, in a session of its own and without the reaper's mark, so that
    neither Ctrl-C nor the reaper (when FREE-MAD dies) takes it down with the stage."""

    def __init__(self, program: str, name: str, env: dict[str, str]) -> None:
        self._kill = [program, "kill", name]
        self._env = env
        read, self._write = os.pipe()
        try:
            self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_SENTINEL), program, name],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env=env,
                start_new_session=True,
            )
        except OSError:
            self._process = (
                None  # `end` kills the container itself; FREE-MAD's death goes uncovered
            )
        finally:
            os.close(read)

    def end(self, *, stop: bool) -> None:
        """The stage is over: let the container be (`stop` False) or have it killed, and wait
        for the sentinel: its exit (about 8 ms once told `done`), or the kill (up to its
        timeout), so the next stage never overlaps it."""
        with contextlib.suppress(OSError):
            if not stop:
                os.write(self._write, b"done\n")
        with contextlib.suppress(OSError):
            os.close(self._write)
        killed = False
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                killed = self._process.wait(timeout=KILL_TIMEOUT + 5) == 0
        if stop and not killed:  # no sentinel, one that died early, or whose kill failed
            run_command(self._kill, Path("/"), KILL_TIMEOUT, env=self._env)
