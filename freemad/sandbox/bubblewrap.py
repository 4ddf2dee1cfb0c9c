"""The Linux sandbox: bubblewrap (`bwrap`), the one Flatpak and the agent CLIs themselves use.

Every call gets:

- a PID namespace of its own, so whatever it starts (with `setsid` or not) dies with it and with
  FREE-MAD;
- no capabilities;
- the whole file system read-only, so toolchains stay usable wherever they live (one under /tmp
  is bound into the private /tmp as well);
- a private /tmp, and the `View`'s writable folders;
- no credential stores and no agent's login.

Code calls without network also get a network namespace of their own and a seccomp filter that
refuses Unix-domain sockets. Agent CLIs keep the network and their own login.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from freemad.sandbox.process import ENV_ALLOWLIST, CommandResult, command_env, run_command
from freemad.sandbox.sandbox_port import (
    AGENT_HOMES,
    CREDENTIAL_STORES,
    DAEMON_SOCKETS,
    RUNTIME_DIRS,
    View,
)
from freemad.sandbox.seccomp import filter_fd, unix_socket_filter

_PROBE_TIMEOUT = 10.0
# Inside the sandbox: private folders, empty at each call (not the host's shared ones).
_PRIVATE_TMP = "/tmp"  # noqa: S108
_PRIVATE_FOLDERS = ("/var/tmp", "/dev/shm")  # noqa: S108
# The variable that moves a CLI's config file into its login folder. claude keeps ~/.claude.json
# beside its folder and saves it through a lock folder and a temporary file next to it, which a
# read-only home refuses (EROFS: its settings are never saved); told CLAUDE_CONFIG_DIR, it keeps
# all of it inside that folder.
_CONFIG_DIR_VARIABLES = {".claude": "CLAUDE_CONFIG_DIR"}


@functools.cache
def probe(program: str) -> str | None:
    """None when the bubblewrap at `program` can make a sandbox here; else why not, one line."""
    argv = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--unshare-pid", "--unshare-net", "--die-with-parent", "--cap-drop", "ALL", "true"]
    try:
        result = subprocess.run(argv, capture_output=True, timeout=_PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot run here ({exc})"
    if result.returncode != 0:
        lines = result.stderr.decode(errors="replace").strip().splitlines()
        return (
            f"bubblewrap cannot make a sandbox here ({lines[-1] if lines else 'no reason given'})"
        )
    return None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


@functools.cache
def _own_paths() -> tuple[Path, ...]:
    """What FREE-MAD's own interpreter reads: its prefixes, its import path (an editable
    install's source folder among it) and where the freemad package itself was found."""
    import freemad

    found = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).parent]
    found += [Path(entry) for entry in sys.path if entry and Path(entry).is_absolute()]
    found += [Path(freemad.__file__).parent]
    return tuple(found)


@functools.cache
def interpreter_paths(program: str) -> tuple[Path, ...]:
    """The folders a program needs beside itself when it is a script: the interpreter its
    `#!` line names, that interpreter's prefix, and what the prefix's site-packages add to
    the import path (`.pth` lines, setuptools' editable finders and egg-links): an editable
    install's source folder, wherever it lives. Read, never run."""
    found = [Path(program).parent]
    interpreter = _shebang(Path(program))
    if interpreter is None:
        return tuple(found)
    prefixes = {interpreter.parent.parent, _real(interpreter).parent.parent}
    found += [interpreter.parent, _real(interpreter).parent, *prefixes]
    for prefix in prefixes:
        for site in sorted(prefix.glob("lib/python3*/site-packages")):
            found += _site_additions(site)
    return tuple(found)


def _shebang(program: Path) -> Path | None:
    try:
        with program.open("rb") as script:
            first = script.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:  # #!/usr/bin/env python3
        located = shutil.which(words[-1])
        return Path(located) if located else None
    return Path(words[0]) if Path(words[0]).is_absolute() else None


_MAPPING = re.compile(r"^MAPPING\s*(?::[^=]*)?=\s*(\{.*?\})\s*$", re.MULTILINE | re.DOTALL)
_SITE_FILE_LIMIT = 1 << 20


def _site_additions(site: Path) -> list[Path]:
    """Folders a site-packages folder puts on the import path, as `site` would read them."""
    found: list[Path] = []
    for pth in sorted(site.glob("*.pth")):
        for raw in _text(pth).splitlines():
            line = raw.strip()
            if line and not line.startswith(("#", "import ", "import\t")):
                found.append(site / line)
    for link in sorted(site.glob("*.egg-link")):
        lines = _text(link).splitlines()
        found += [Path(lines[0].strip())] if lines and lines[0].strip() else []
    for finder in sorted(site.glob("__editable__*finder.py")):
        mapping = _MAPPING.search(_text(finder))
        try:
            places = ast.literal_eval(mapping.group(1)) if mapping else {}
        except (ValueError, SyntaxError):
            places = {}
        if isinstance(places, dict):
            found += [Path(str(place)) for place in places.values()]
    return [path for path in found if path.is_absolute()]


def _text(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            return handle.read(_SITE_FILE_LIMIT).decode(errors="replace")
    except OSError:
        return ""


class BubblewrapSandbox:
    """Calls run under `bwrap`; see the module's docstring for what each profile gets."""

    kind = "bubblewrap"

    def __init__(
        self, network: bool, env_passthrough: Sequence[str], program: str | None = None
    ) -> None:
        self.network = network
        self.env_passthrough = tuple(env_passthrough)
        self.program = program or shutil.which("bwrap") or ""
        self.unix_filter = None if network else unix_socket_filter()

    def problem(self) -> str | None:
        if not self.program:
            return "bubblewrap (bwrap) is not installed"
        return probe(self.program)

    def network_isolated(self) -> bool:
        return not self.network  # a network namespace of its own

    # --- the command line -----------------------------------------------------------------------

    def _base(self, *, code: bool) -> list[str]:
        args = [self.program, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        if code and not self.network:
            args.append("--unshare-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", _PRIVATE_TMP]
        for folder in _PRIVATE_FOLDERS:
            if Path(folder).is_dir() and not Path(folder).is_symlink():
                args += ["--tmpfs", folder]
        return args

    def _bound_back(self, program: str | None = None) -> list[Path]:
        """The places inside the private folders that `_toolchains` binds back."""
        args = self._toolchains(program)
        return [Path(args[i + 1]) for i, word in enumerate(args) if word == "--ro-bind"]

    def hidden_program(self, argv: Sequence[str], cwd: Path, view: View) -> str | None:
        """Why `argv` cannot start in a code call: its program, or the interpreter its `#!`
        line names, lives in a folder the sandbox makes private (/tmp, /var/tmp, /dev/shm)
        and is not bound back; None when neither does. (A bare `execvp: No such file or
        directory` from inside the sandbox says nothing of why.)"""
        if not argv:
            return None
        word = argv[0]
        located = shutil.which(word) if os.sep not in word else str(cwd / word)
        if located is None:
            return None
        program = Path(located)
        private = [_real(Path(folder)) for folder in (_PRIVATE_TMP, *_PRIVATE_FOLDERS)]
        seen = [*self._bound_back(), *(_real(f) for f in (*view.writable, *view.read_only))]
        interpreter = _shebang(program)
        for path, what in ((program, word), (interpreter, f"{word}'s #! interpreter")):
            if path is None:
                continue
            place = _real(path)
            folder = next((p for p in private if place.is_relative_to(p)), None)
            if folder is None or any(place.is_relative_to(s) for s in seen):
                continue
            return (
                f"{what} {path} lives under {folder}, which the sandbox makes private for each "
                f"call; install it outside {folder}, or put its folder on PATH (PATH's folders "
                "are bound back, read-only)"
            )
        return None

    def _toolchains(self, program: str | None = None) -> list[str]:
        """Read-only binds of toolchains that live in a folder the sandbox makes private (a
        clone and its virtual environment under /tmp, say): every PATH entry there, what
        FREE-MAD's own interpreter and the program's need (`interpreter_paths`), and the program
        itself; a `bin` folder brings its whole prefix."""
        private = [_real(Path(folder)) for folder in (_PRIVATE_TMP, *_PRIVATE_FOLDERS)]
        wanted = [Path(entry) for entry in os.environ.get("PATH", "").split(os.pathsep) if entry]
        wanted += [*_own_paths(), *(interpreter_paths(program) if program else ())]
        args: list[str] = []
        seen: set[Path] = set()
        for folder in wanted:
            place = _real(folder)
            if place.name == "bin":
                place = place.parent
            inside = any(place.is_relative_to(p) and place != p for p in private)
            if inside and place.exists() and place not in seen:
                seen.add(place)
                args += ["--ro-bind", str(place), str(place)]
        return args

    def _hide(self, paths: Sequence[Path]) -> list[str]:
        """Empty, throw-away folders over hidden folders; /dev/null over anything else. A path
        is hidden where it really is, so a symlink to it leads to the empty place too."""
        args: list[str] = []
        seen: set[Path] = set()
        for path in paths:
            place = _real(path)
            if place in seen or not place.exists():
                continue
            seen.add(place)
            args += (
                ["--tmpfs", str(place)] if place.is_dir() else ["--ro-bind", os.devnull, str(place)]
            )
        return args

    def _home_hidden(self, own: Sequence[str]) -> list[Path]:
        home = Path.home()
        if home == Path("/") or not home.is_dir():
            return []
        mine = {Path(home, entry.rstrip("/")) for entry in own}
        stores = [home / entry for entry in (*CREDENTIAL_STORES, *AGENT_HOMES)]
        return [store for store in stores if store not in mine]

    def _view(self, view: View) -> list[str]:
        args: list[str] = []
        for folder in view.writable:
            place = str(_real(folder))
            args += ["--bind", place, place]
        for path in view.read_only:
            if os.path.lexists(path) and not Path(path).is_symlink():
                place = str(_real(path))
                args += ["--ro-bind", place, place]
        return args

    def _services(self) -> list[Path]:
        """Where sockets to the host's services live: the user's runtime folders and the
        container daemons' sockets. (All of /run goes for code without network; with network,
        /run stays, since /etc/resolv.conf may lead into it.)"""
        places = [Path(p) for p in (*RUNTIME_DIRS, *DAEMON_SOCKETS)]
        if os.environ.get("XDG_RUNTIME_DIR"):
            places.append(Path(os.environ["XDG_RUNTIME_DIR"]))
        return places

    def code_argv(self, cwd: Path, view: View) -> list[str]:
        """bwrap's own words for a code call, up to and including `--`."""
        args = self._base(code=True) + self._toolchains()
        if not self.network and Path("/run").is_dir():
            args += ["--tmpfs", "/run"]
        else:
            args += self._hide(self._services())
        args += self._hide([*self._home_hidden(()), *view.hidden])
        args += self._view(view)
        args += ["--chdir", str(_real(cwd)), "--setenv", "TMPDIR", _PRIVATE_TMP]
        return args

    def agent_argv(
        self, argv: Sequence[str], cwd: Path, view: View, own: Sequence[str]
    ) -> list[str]:
        home = Path.home()
        args = self._base(code=False) + self._toolchains(argv[0] if argv else None)
        args += self._hide([*self._services(), *self._home_hidden(own), *view.hidden])
        for entry in own:
            place = home / entry.rstrip("/")
            if entry.endswith("/") and not os.path.lexists(place):
                place.mkdir(parents=True, exist_ok=True)  # a login folder the CLI would make itself
            if os.path.lexists(place):
                args += ["--bind", str(_real(place)), str(place)]
                variable = _CONFIG_DIR_VARIABLES.get(entry.rstrip("/"))
                args += ["--setenv", variable, str(place)] if variable else []
        args += self._view(view)
        args += ["--chdir", str(_real(cwd)), "--setenv", "TMPDIR", _PRIVATE_TMP]
        args += ["--unsetenv", "SSH_AUTH_SOCK", "--unsetenv", "GPG_AGENT_INFO", "--"]
        return [*args, *argv]

    # --- running ------------------------------------------------------------------------------

    def run(self, argv: Sequence[str], cwd: Path, timeout: float, view: View) -> CommandResult:
        problem = self.problem() or self.hidden_program(argv, cwd, view)
        if problem is not None:
            return CommandResult(list(argv), None, "", f"not run: {problem}", False, 0.0)
        with self._filter() as fds:
            prefix = self.code_argv(cwd, view)
            if fds:
                prefix += ["--seccomp", str(fds[0])]
            env = command_env(self.env_passthrough)
            return run_command(argv, cwd, timeout, prefix=[*prefix, "--"], env=env, pass_fds=fds)

    @contextlib.contextmanager
    def _filter(self) -> Iterator[tuple[int, ...]]:
        if self.unix_filter is None:
            yield ()
            return
        fd = filter_fd(self.unix_filter)
        try:
            yield (fd,)
        finally:
            os.close(fd)

    def describe(self) -> list[str]:
        if self.network:
            network = "network: on (judge.network), code can reach the network"
        else:
            sockets = (
                "Unix sockets refused by a seccomp filter"
                if self.unix_filter
                else "Unix socket folders hidden (no seccomp filter for this machine)"
            )
            network = f"network: off, each call in a network namespace of its own; {sockets}"
        lines = [
            "sandbox: bubblewrap; every call in a PID namespace of its own (all it starts dies"
            " with it), no capabilities, the file system read-only but its worktree and a"
            " private /tmp, the repository's .git hidden",
            network,
            "credential stores (~/.ssh, ~/.config, ~/.aws, ~/.netrc, ...) and agent logins hidden"
            " from code; an agent CLI sees only its own login folder, and keeps the network",
            "environment: " + ", ".join((*ENV_ALLOWLIST, *self.env_passthrough)),
        ]
        problem = self.problem()
        return [*lines, f"unusable: {problem}"] if problem else lines
