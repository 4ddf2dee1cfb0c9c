"""The real claude, codex and gemini CLIs in bubblewrap's agent profile, offline and never logged in.

Each CLI is called the way a code task calls it (CliAgent, Mode.TASK, `agent_sandbox("auto")`)
with a throw-away HOME. It must start inside bubblewrap, read and write its own login folder, and
fail only for want of a login, with its own words; a probe run through the same agent profile
shows that the rest of the home folder is read-only and that ~/.ssh, ~/.config and every other
agent's login are hidden. HOME lives outside /tmp, as a real one does: bubblewrap puts a private,
empty /tmp in place, so a HOME under /tmp would be a private writable folder there holding only
the bound login folder, and the read-only home could not be shown. Install the CLIs with
scripts/install-agent-clis.sh; without them, or without a working bubblewrap, these are skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from shlex import quote

import pytest

from freemad.agents.agent_port import CallRequest, CallResult, CallStatus
from freemad.agents.presets import preset_for
from freemad.agents.subprocess_agent import CliAgent
from freemad.config.models import AgentConfig, AgentType, Mode
from freemad.sandbox import Sandbox, View, agent_sandbox
from freemad.sandbox.bubblewrap import BubblewrapSandbox

ROOT = Path(__file__).resolve().parents[2]
TYPES = {
    "claude": AgentType.CLAUDE_CODE,
    "codex": AgentType.OPENAI_CODEX,
    "gemini": AgentType.GEMINI_CLI,
}
# Each CLI's reason when not logged in (as in tests/agents/test_real_clis.py).
NOT_LOGGED_IN_TEXT = {
    "claude": "Not logged in",
    "codex": "Not logged in",
    "gemini": "Please set an Auth method",
}
# What a call that failed because of the sandbox, not the login, would show.
SANDBOX_ERROR = re.compile(
    r"read-only file system|EROFS|EACCES|permission denied|bwrap:|execvp|panicked|"
    r"segmentation fault|core dumped|Traceback",
    re.IGNORECASE,
)
# Planted in every test's HOME: credential stores and each agent's login, each with its own text.
PLANTED = {
    ".ssh/id_ed25519": "SECRET private key",
    ".config/gh/hosts.yml": "SECRET gh token",
    ".claude.json": '{"secret": "SECRET claude.json"}',
    ".claude/freemad-marker": "MARKER .claude",
    ".codex/freemad-marker": "MARKER .codex",
    ".gemini/freemad-marker": "MARKER .gemini",
}
PRIVATE = ("/tmp", "/var/tmp", "/dev/shm")  # replaced by private folders inside the sandbox


def agent_bin() -> Path | None:
    configured = os.environ.get("FREEMAD_AGENT_CLIS_BIN")
    folder = (
        Path(configured).absolute() if configured else ROOT / ".cache/agent-clis/node_modules/.bin"
    )
    return folder if all(os.access(folder / cli, os.X_OK) for cli in TYPES) else None


def private(path: Path) -> bool:
    return any(Path(os.path.realpath(path)).is_relative_to(p) for p in PRIVATE)


BIN = agent_bin()
BWRAP_PROBLEM = BubblewrapSandbox(True, ()).problem()
pytestmark = [
    pytest.mark.npm_agents,
    pytest.mark.skipif(
        BIN is None,
        reason="the agent CLIs are not installed: run scripts/install-agent-clis.sh "
        "or point FREEMAD_AGENT_CLIS_BIN at a folder holding claude, codex and gemini",
    ),
    pytest.mark.skipif(
        BWRAP_PROBLEM is not None, reason=f"bubblewrap cannot run here: {BWRAP_PROBLEM}"
    ),
    pytest.mark.skipif(
        BIN is not None and private(BIN),
        reason=f"the agent CLIs are under {BIN}, which the sandbox replaces with a private folder",
    ),
]


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A throw-away HOME outside /tmp holding PLANTED; HOME points at it for this test."""
    parent = ROOT / ".cache"
    if private(parent):
        pytest.skip(f"no folder outside /tmp to hold a HOME ({parent})")
    parent.mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="sandbox-home-", dir=parent))
    for name, text in PLANTED.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv("HOME", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def offline_env(home: Path) -> dict[str, str]:
    """HOME, the CLIs on PATH, and no credential or config-folder variable of any kind."""
    assert BIN is not None
    prefixes = ("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "AZURE_OPENAI")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    path = os.pathsep.join([str(BIN), str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(HOME=str(home), PATH=path)
    env.pop("FREEMAD_DEBUG", None)
    return env


def recording_sandbox(monkeypatch: pytest.MonkeyPatch) -> tuple[Sandbox, list[list[str]]]:
    """`agent_sandbox("auto")`, keeping every command line it makes for an agent CLI."""
    box = agent_sandbox("auto")
    assert box.kind == "bubblewrap", box.describe()
    commands: list[list[str]] = []
    wrap = box.agent_argv

    def recording(argv: Sequence[str], cwd: Path, view: View, own: Sequence[str]) -> list[str]:
        command = wrap(argv, cwd, view, own)
        commands.append(command)
        return command

    monkeypatch.setattr(box, "agent_argv", recording)
    return box, commands


def call(cli: str, home: Path, box: Sandbox, workdir: Path) -> CallResult:
    agent = CliAgent(
        AgentConfig(id=cli, type=TYPES[cli]),
        max_output_bytes=1_000_000,
        env=offline_env(home),
        workdir=str(workdir),
        sandbox=box,
        view=View.of([workdir]),
    )
    return asyncio.run(agent.call(CallRequest(Mode.TASK, "Say hello in one word.\n", 60)))


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file() or p.is_symlink()}


@pytest.mark.parametrize("cli", list(TYPES))
def test_the_cli_runs_in_the_agent_profile_and_fails_only_for_want_of_a_login(
    cli: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert BIN is not None
    own = home / f".{cli}"
    if cli == "claude":  # its config file, kept inside its folder in the sandbox
        (own / ".claude.json").write_text('{"freemadPlanted": "kept"}', encoding="utf-8")
    before, home_before = files_under(own), sorted(p.name for p in home.iterdir())
    box, commands = recording_sandbox(monkeypatch)
    workdir = tmp_path / "work"
    workdir.mkdir()

    result = call(cli, home, box, workdir)

    # It started inside bubblewrap, in a PID namespace of its own, as the CLI itself.
    assert commands, "the agent profile was never asked for a command line"
    for command in commands:
        assert Path(command[0]).name == "bwrap" and "--unshare-pid" in command, command
        assert command[command.index("--") + 1] == str(BIN / cli), command
    # It failed for want of a login alone, with its own words, and never because of the sandbox.
    everything = f"{result.detail}\n{result.stderr_tail}\n{result.text}"
    assert result.status is CallStatus.NOT_LOGGED_IN, everything
    assert NOT_LOGGED_IN_TEXT[cli] in result.detail, everything
    assert not SANDBOX_ERROR.search(everything), everything
    # It wrote its own files into its login folder, and nothing anywhere else in HOME.
    assert files_under(own) - before, f"{cli} wrote nothing into {own}"
    assert sorted(p.name for p in home.iterdir()) == home_before
    if cli == "claude":  # read its planted config and wrote it back, where its folder is writable
        config = json.loads((own / ".claude.json").read_text(encoding="utf-8"))
        assert config["freemadPlanted"] == "kept" and "userID" in config, config
        assert (home / ".claude.json").read_text(encoding="utf-8") == PLANTED[".claude.json"]

    # The same agent profile, for a probe: its own folder visible and writable, the rest hidden.
    hidden = [home / ".ssh", home / ".config", *(home / f".{o}" for o in TYPES if o != cli)]
    script = (
        'for f in "$@"; do cat "$f" 2>/dev/null; echo; done\n'
        + "".join(f'[ -z "$(ls -A {quote(str(d))})" ] && echo "empty {d}"\n' for d in hidden)
        + f"touch {quote(str(own / 'probe'))} && echo own-writable\n"
        + f"touch {quote(str(home / 'probe'))} 2>/dev/null || echo home-read-only\n"
    )
    planted = [str(home / name) for name in PLANTED]
    command = box.agent_argv(
        ["sh", "-c", script, "sh", *planted],
        workdir,
        View.of([workdir]),
        preset_for(TYPES[cli]).home,
    )
    ran = subprocess.run(
        command, capture_output=True, text=True, env=offline_env(home), timeout=60, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert f"MARKER .{cli}" in ran.stdout, ran.stdout
    for name, text in PLANTED.items():
        if not name.startswith(f".{cli}/"):
            assert text not in ran.stdout, (name, ran.stdout)
    for folder in hidden:
        assert f"empty {folder}" in ran.stdout, ran.stdout
    assert "own-writable" in ran.stdout and "home-read-only" in ran.stdout, ran.stdout
    assert (own / "probe").is_file() and not (home / "probe").exists()


def test_codex_reads_a_key_planted_in_its_login_folder(home: Path, tmp_path: Path) -> None:
    (home / ".codex/auth.json").write_text('{"OPENAI_API_KEY": "sk-freemad-planted"}', "utf-8")
    assert BIN is not None
    command = agent_sandbox("auto").agent_argv(
        [str(BIN / "codex"), "login", "status"], tmp_path, View.of([tmp_path]), (".codex/",)
    )
    ran = subprocess.run(
        command, capture_output=True, text=True, env=offline_env(home), timeout=60, check=False
    )
    said = ran.stdout + ran.stderr
    assert ran.returncode == 0, said
    assert "API key configured" in said and "Not logged in" not in said, said
    assert not SANDBOX_ERROR.search(said), said


def test_gemini_reads_settings_planted_in_its_login_folder(home: Path, tmp_path: Path) -> None:
    settings = '{"security": {"auth": {"selectedType": "gemini-api-key"}}}'
    (home / ".gemini/settings.json").write_text(settings, encoding="utf-8")
    result = call("gemini", home, agent_sandbox("auto"), tmp_path)
    # The auth method the settings chose was found; only its key is missing.
    assert result.status is CallStatus.NOT_LOGGED_IN, result
    assert "GEMINI_API_KEY" in result.detail, result.detail
    assert NOT_LOGGED_IN_TEXT["gemini"] not in result.detail, result.detail
    assert not SANDBOX_ERROR.search(result.detail + result.stderr_tail), result.stderr_tail
