"""The real claude, codex and gemini CLIs from the npm registry, offline and never logged in.

They check what no fake can: that every flag a preset passes is one the published CLI accepts,
that `--health` finds them, and that a debate without a login fails fast with each CLI's own
reason. Install them with scripts/install-agent-clis.sh; without them these tests are skipped.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.agents.invocation import build_argv
from freemad.config.models import AgentConfig, AgentType, Mode

pytestmark = pytest.mark.npm_agents

ROOT = Path(__file__).resolve().parents[2]
CLIS = ("claude", "codex", "gemini")
TYPES = {
    AgentType.CLAUDE_CODE: "claude",
    AgentType.OPENAI_CODEX: "codex",
    AgentType.GEMINI_CLI: "gemini",
}
# How each CLI rejects an option or a value it does not know (FINDINGS.md §5, plus the wording of
# clap (codex), commander (claude) and yargs (gemini) for a bad value).
UNKNOWN_OPTION = re.compile(
    r"unknown option|unexpected argument|Unknown arguments?:|Unknown feature flag|"
    r"invalid value .* for|argument .* is invalid|Invalid values?:",
    re.IGNORECASE,
)
# Each CLI's reason when not logged in (FINDINGS.md §4).
NOT_LOGGED_IN_TEXT = {
    "claude": "Not logged in",
    "codex": "Not logged in",
    "gemini": "Please set an Auth method",
}
CALL_SECONDS = 60


def agent_bin() -> Path | None:
    configured = os.environ.get("FREEMAD_AGENT_CLIS_BIN")
    folder = (
        Path(configured).absolute() if configured else ROOT / ".cache/agent-clis/node_modules/.bin"
    )
    if all(os.access(folder / cli, os.X_OK) for cli in CLIS):
        return folder
    return None


BIN = agent_bin()
if BIN is None:
    pytestmark = [
        pytest.mark.npm_agents,
        pytest.mark.skip(
            reason="the agent CLIs are not installed: run scripts/install-agent-clis.sh "
            "or point FREEMAD_AGENT_CLIS_BIN at a folder holding claude, codex and gemini"
        ),
    ]


def offline_env(home: Path) -> dict[str, str]:
    """A fresh HOME for every CLI and no credential of any kind in the environment."""
    assert BIN is not None
    prefixes = ("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "AZURE_OPENAI")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    for folder in (".claude", ".codex", ".gemini"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CODEX_HOME=str(home / ".codex"),
        GEMINI_CLI_HOME=str(home),
        PATH=os.pathsep.join([str(BIN), str(Path(sys.executable).parent), env.get("PATH", "")]),
    )
    env.pop("FREEMAD_DEBUG", None)
    return env


@dataclass
class Ran:
    argv: list[str]
    returncode: int | None  # None: killed at the time limit
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return (
            f"argv {self.argv}\nexit {self.returncode}\n"
            f"stdout {self.stdout[-2000:]!r}\nstderr {self.stderr[-2000:]!r}"
        )


def run_bounded(argv: list[str], *, stdin: str, env: dict[str, str], cwd: Path) -> Ran:
    """Run argv without a shell; at the time limit kill its whole process group."""
    with subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    ) as process:
        try:
            out, err = process.communicate(stdin.encode(), timeout=CALL_SECONDS)
            code: int | None = process.returncode
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            code = None
    return Ran(argv, code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def codex_fails_fast(argv: list[str]) -> list[str]:
    """Point codex at a closed loopback port through a provider that never retries.

    Unlogged `codex exec` waits for the network for ever; with a key, a provider without
    retries and a refused connection it ends within a second, after parsing every flag.
    The overrides go before `exec`, so exec's own argv stays exactly the preset's.
    """
    provider = (
        f'{{name="closed", base_url="http://127.0.0.1:{closed_port()}/v1", '
        'env_key="CODEX_API_KEY", wire_api="responses", request_max_retries=0, '
        "stream_max_retries=0, supports_websockets=false}"
    )
    overrides = ["-c", "model_provider=closed", "-c", f"model_providers.closed={provider}"]
    return [argv[0], *overrides, *argv[1:]]


def test_health_finds_all_three(tmp_path: Path) -> None:
    config = tmp_path / "agents.yaml"
    config.write_text(
        yaml.safe_dump({"agents": [{"id": cli, "type": t.value} for t, cli in TYPES.items()]}),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "freemad", "--health", "--config", str(config)],
        capture_output=True,
        text=True,
        env=offline_env(tmp_path / "home"),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {line.split()[1]: line for line in done.stdout.splitlines() if line.strip()}
    assert set(lines) == set(CLIS), done.stdout
    for cli, line in lines.items():
        assert line.startswith("✓"), line
        assert re.search(r"\b\d+\.\d+\.\d+\b", line), f"{cli} shows no version: {line}"
        assert f"({BIN}/{cli})" in line


@pytest.mark.parametrize("mode", [Mode.GENERATE, Mode.CRITIQUE])
@pytest.mark.parametrize("agent_type", list(TYPES), ids=list(TYPES.values()))
def test_the_preset_flags_are_ones_the_cli_accepts(
    agent_type: AgentType, mode: Mode, tmp_path: Path
) -> None:
    argv = build_argv(AgentConfig(id="a", type=agent_type), mode)
    env = offline_env(tmp_path / "home")
    if agent_type is AgentType.OPENAI_CODEX:
        argv = codex_fails_fast(argv)
        env["CODEX_API_KEY"] = "sk-freemad-test-not-a-key"
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    ran = run_bounded(argv, stdin="Say hello in one word.\n", env=env, cwd=workdir)
    assert not UNKNOWN_OPTION.search(ran.stdout + ran.stderr), str(ran)
    # Past the option parser: each CLI got as far as asking for a login or for the network.
    if agent_type is AgentType.CLAUDE_CODE:
        assert ran.returncode == 1, str(ran)
        result = json.loads(ran.stdout)  # --output-format json took effect
        assert result["is_error"] is True
        assert "Not logged in" in result["result"]
    elif agent_type is AgentType.GEMINI_CLI:
        assert ran.returncode == 41, str(ran)  # gemini's FATAL_AUTHENTICATION_ERROR
        assert "Please set an Auth method" in ran.stderr
    else:
        assert ran.returncode == 1, str(ran)
        events = [json.loads(line) for line in ran.stdout.splitlines()]  # --json took effect
        assert events[0]["type"] == "thread.started"
        assert events[-1]["type"] == "turn.failed"


@dataclass
class Debate:
    returncode: int
    stdout: str
    stderr: str
    elapsed: float
    transcript: dict[str, Any]


@pytest.fixture(scope="module")
def unlogged_debate(tmp_path_factory: pytest.TempPathFactory) -> Debate:
    """One debate among the three real CLIs with no login, shared by the tests below."""
    tmp = tmp_path_factory.mktemp("debate")
    config = {
        "agents": [{"id": cli, "type": t.value, "timeout": 90} for t, cli in TYPES.items()],
        "deadlines": {"soft_timeout_ms": 60_000, "hard_timeout_ms": 100_000, "min_agents": 1},
    }
    (tmp / "agents.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    command = ["-m", "freemad", "Say hi", "--rounds", "1", "--config", "agents.yaml", "--json"]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, *command],
        capture_output=True,
        text=True,
        env=offline_env(tmp / "home"),
        cwd=tmp,
        timeout=300,
        check=False,
    )
    elapsed = time.monotonic() - started
    files = sorted((tmp / "transcripts").glob("transcript-*.json"))
    assert len(files) == 1, (files, done.stderr)
    transcript = json.loads(files[0].read_text(encoding="utf-8"))
    return Debate(done.returncode, done.stdout, done.stderr, elapsed, transcript)


def test_a_debate_without_login_fails_fast_with_each_agents_cause(
    unlogged_debate: Debate,
) -> None:
    debate = unlogged_debate
    assert debate.returncode == 1, debate.stderr
    # Before it, the log's one WARNING line per failed agent; the error itself is one line.
    lines = debate.stderr.splitlines()
    errors = [line for line in lines if line.startswith("freemad: error:")]
    assert errors == lines[-1:], debate.stderr
    assert errors[0].startswith("freemad: error: the debate failed: only 0 of 3 agents answered")
    assert "deadlines.min_agents is 1" in errors[0]
    assert json.loads(debate.stdout)["status"] == "failed"
    (round_0,) = debate.transcript["transcript"]
    assert round_0["round"] == 0
    assert set(round_0["agents"]) == set(CLIS)
    for cli, turn in round_0["agents"].items():
        assert turn["status"] == "failed", (cli, turn)
        assert turn["error"]["cause"] == "not_logged_in", (cli, turn["error"])
    # A liveness bound, not a benchmark: unlogged codex or gemini would otherwise hang or retry.
    assert debate.elapsed < 120


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
def test_each_failure_names_the_clis_own_message(unlogged_debate: Debate, cli: str) -> None:
    (round_0,) = unlogged_debate.transcript["transcript"]
    detail = round_0["agents"][cli]["error"]["detail"]
    assert NOT_LOGGED_IN_TEXT[cli] in detail, detail
