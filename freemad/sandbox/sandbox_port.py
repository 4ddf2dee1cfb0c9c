"""The sandbox port: what a sandboxed call may see, and the one protocol every sandbox fits.

Two profiles. Code an agent wrote or chose (judge stages, task commands, answer validation) runs
with no network unless asked, no credential stores and only the allowlisted environment. An agent
CLI itself (an evolve worker, a task implementer) keeps the network and its own login folder,
since it must reach its vendor's API. Both see the file system read-only except their `View`'s
writable folders and a private temporary folder, and everything they start dies with the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from freemad.sandbox.process import CommandResult

Mode = Literal["auto", "bubblewrap", "container", "host"]


class SandboxUnavailable(Exception):
    """No sandbox can run here and the config did not ask for the host."""


# Where people keep credentials, relative to their home folder: hidden from every sandboxed call.
CREDENTIAL_STORES = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config",
    ".netrc",
    ".git-credentials",
    ".docker",
    ".kube",
    ".npmrc",
    ".pypirc",
    ".password-store",
    ".local/share/keyrings",
    ".local/share/gh",
    ".terraform.d",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".boto",
    ".s3cfg",
    ".oci",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".composer/auth.json",
)
# Folders of sockets that reach the host's services (Docker, D-Bus, SSH and GPG agents), and the
# container daemons' sockets: whoever reaches one commands the host.
RUNTIME_DIRS = ("/run/user", "/var/run/user")
DAEMON_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock", "/run/podman", "/run/containerd")
# Every agent CLI's own login folder: hidden from code, and from every other agent.
AGENT_HOMES = (
    ".claude",
    ".claude.json",
    ".codex",
    ".gemini",
    ".copilot",
    ".qwen",
    ".aider",
    ".local/share/opencode",
)


@dataclass(frozen=True, slots=True)
class View:
    """What one call may touch beyond the read-only system and its private temporary folder.

    `writable`: folders it may change (a worktree). `read_only`: paths inside those it may not
    (protected files, during judging). `hidden`: paths it must not see at all (the user's `.git`).
    """

    writable: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()

    @classmethod
    def of(
        cls,
        writable: Sequence[Path] = (),
        read_only: Sequence[Path] = (),
        hidden: Sequence[Path] = (),
    ) -> View:
        return cls(tuple(writable), tuple(read_only), tuple(hidden))


class Sandbox(Protocol):
    """Runs code an agent wrote or chose, and wraps agent CLIs, with the isolation in force."""

    @property
    def kind(self) -> str:
        """bubblewrap, container, host or unavailable."""
        ...

    def run(self, argv: Sequence[str], cwd: Path, timeout: float, view: View) -> CommandResult:
        """Run code (the code profile) in `cwd`; the result names `argv` alone."""
        ...

    def agent_argv(
        self, argv: Sequence[str], cwd: Path, view: View, own: Sequence[str]
    ) -> list[str]:
        """The command line that runs an agent CLI (the agent profile); `own` are the paths in
        the home folder that hold its login, which it may read and write (a trailing `/`: a
        folder, made when missing)."""
        ...

    def describe(self) -> list[str]:
        """One plain sentence per kind of isolation in force."""
        ...

    def problem(self) -> str | None:
        """None when calls can run; else why they cannot, one line."""
        ...

    def network_isolated(self) -> bool:
        """Whether code it runs (`run`) is cut off from the network."""
        ...


class MountSpec(Protocol):
    """A host path (`source`, absolute) mounted read-only at `target` in a container."""

    @property
    def source(self) -> str: ...
    @property
    def target(self) -> str: ...


class ContainerSpec(Protocol):
    """The container settings a sandbox needs; `freemad.config.evolve_section.ContainerConfig` fits
    (`resolved(repo)` makes its relative mount sources absolute)."""

    @property
    def enabled(self) -> bool: ...
    @property
    def runtime(self) -> str: ...
    @property
    def image(self) -> str | None: ...
    @property
    def memory(self) -> str | None: ...
    @property
    def cpus(self) -> float | None: ...
    @property
    def pids_limit(self) -> int: ...
    @property
    def tmpfs_size(self) -> str: ...
    @property
    def extra_mounts(self) -> Sequence[MountSpec]: ...
    @property
    def workdir(self) -> str: ...


class SandboxFactory(Protocol):
    """Chooses the sandbox a runtime's calls run in, as the config says. The surfaces hand the
    runtimes one (`freemad.wiring`); the runtimes never choose or build a sandbox themselves."""

    def code(
        self,
        mode: str,
        network: bool = False,
        env_passthrough: Sequence[str] = (),
        container: ContainerSpec | None = None,
    ) -> Sandbox:
        """Where code an agent wrote or chose runs (`security.sandbox` is `mode`). ValueError when
        a passthrough name looks like a secret."""
        ...

    def agent(self, mode: str, *, container_judge: bool = False) -> Sandbox:
        """Where agent CLIs that edit files run; `container_judge`: the judge runs in a
        container."""
        ...
