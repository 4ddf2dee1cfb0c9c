"""The real copilot, opencode and qwen (npm) and llm and aider (PyPI) CLIs, offline.

Each is run with its preset's argv in every mode against a fake OpenAI-compatible server on
loopback, which shows what no fake CLI can: the published CLI accepts every flag, reads the
prompt from stdin, prints what the preset parses, and in debate modes offers the model no tool
that edits. Then a debate among five of them with no login at all fails fast, naming each one's
own reason, with no process left. Install them with scripts/install-agent-clis.sh; without them
these tests are skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.agents.agent_port import CallRequest, CallResult, CallStatus
from freemad.agents.health import version_line
from freemad.agents.presets import preset_for
from freemad.agents.subprocess_agent import CliAgent
from freemad.config.models import AgentConfig, AgentType, Mode

ROOT = Path(__file__).resolve().parents[2]
# The releases the presets were checked against (docs/agents.md).
VERIFIED = {
    AgentType.COPILOT_CLI: ("copilot", "1.0.102"),
    AgentType.OPENCODE: ("opencode", "1.18.33"),
    AgentType.QWEN_CODE: ("qwen", "0.24.4"),
    AgentType.LLM: ("llm", "0.36"),
    AgentType.AIDER: ("aider", "0.86.2"),
}
CLIS = [cli for cli, _ in VERIFIED.values()]
ANSWER = "SOLUTION:\nHELLO-FROM-FAKE\n\nREASONING:\nfake"
# The words each CLI uses for an option it does not know (opencode prints its usage instead).
UNKNOWN_OPTION = ("unknown option", "unexpected argument", "Unknown argument", "No such option")
EDIT_TOOLS = {"bash", "edit", "write", "create", "write_file", "run_shell_command", "apply_patch"}


def agent_bin() -> Path | None:
    configured = os.environ.get("FREEMAD_AGENT_CLIS_BIN")
    folder = (
        Path(configured).absolute() if configured else ROOT / ".cache/agent-clis/node_modules/.bin"
    )
    return folder if all(os.access(folder / cli, os.X_OK) for cli in CLIS) else None


BIN = agent_bin()
pytestmark = [pytest.mark.npm_agents]
if BIN is None:
    pytestmark.append(
        pytest.mark.skip(
            reason="copilot, opencode, qwen, llm and aider are not installed: run "
            "scripts/install-agent-clis.sh (needs npm and python3 with the npm registry and "
            "PyPI) or point FREEMAD_AGENT_CLIS_BIN at a folder holding them"
        )
    )


def offline_env(home: Path, **extra: str) -> dict[str, str]:
    """A fresh HOME and no credential of any kind in the environment."""
    assert BIN is not None
    prefixes = (
        "ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "AZURE_OPENAI",
        "COPILOT_", "GH_", "GITHUB_", "OPENCODE_", "QWEN_", "DASHSCOPE_", "LLM_", "AIDER_",
        "OPENROUTER_", "DEEPSEEK_", "VERTEXAI_",
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local/state"),
        PATH=os.pathsep.join([str(BIN), str(Path(sys.executable).parent), env.get("PATH", "")]),
        **extra,
    )
    env.pop("FREEMAD_DEBUG", None)
    return env


# --- a fake OpenAI-compatible model on loopback -----------------------------------------------


class FakeModel:
    """Answers every chat completion with ANSWER (11 prompt, 5 completion tokens), streamed or
    not, and keeps each request body."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                model.requests.append(body)
                usage = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
                base = {"id": "c1", "created": 0, "model": body.get("model", "fake-model")}
                if not body.get("stream"):
                    message = {"role": "assistant", "content": ANSWER}
                    choice = {"index": 0, "message": message, "finish_reason": "stop"}
                    self._send(
                        {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
                    )
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunk = {**base, "object": "chat.completion.chunk"}
                delta = {"role": "assistant", "content": ANSWER}
                for event in (
                    {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                    {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                    {**chunk, "choices": [], "usage": usage},
                ):
                    self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _send(self, value: dict[str, Any]) -> None:
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def tools_offered(self, prompt: str) -> set[str]:
        """The tools offered with the request that carries `prompt`."""
        names: set[str] = set()
        for body in self.requests:
            if prompt in json.dumps(body.get("messages", body.get("input", ""))):
                for tool in body.get("tools") or []:
                    names.add(str(tool.get("function", tool).get("name")))
        return names


@pytest.fixture(scope="module")
def fake_model() -> Iterator[FakeModel]:
    model = FakeModel()
    thread = threading.Thread(target=model.server.serve_forever, daemon=True)
    thread.start()
    yield model
    model.server.shutdown()
    model.server.server_close()


def pointed_at(agent_type: AgentType, url: str, home: Path) -> tuple[AgentConfig, dict[str, str]]:
    """The agent and its environment for a CLI using the fake model, each in its own way."""
    agent = AgentConfig(id=agent_type.value, type=agent_type)
    if agent_type is AgentType.COPILOT_CLI:
        env = {"COPILOT_PROVIDER_BASE_URL": url, "COPILOT_MODEL": "fake-model"}
        return agent, env | {"COPILOT_OFFLINE": "true"}
    if agent_type is AgentType.OPENCODE:
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": url, "apiKey": "x"},
            "models": {"fake-model": {}},
        }
        config = {"provider": {"fake": provider}, "model": "fake/fake-model"}
        return agent, {"OPENCODE_CONFIG_CONTENT": json.dumps(config)}
    if agent_type is AgentType.QWEN_CODE:
        (home / ".qwen").mkdir(parents=True, exist_ok=True)
        settings = {"security": {"auth": {"selectedType": "openai"}}}
        (home / ".qwen/settings.json").write_text(json.dumps(settings), encoding="utf-8")
        return agent, {"OPENAI_API_KEY": "x", "OPENAI_BASE_URL": url, "OPENAI_MODEL": "fake-model"}
    if agent_type is AgentType.LLM:
        folder = home / ".config/io.datasette.llm"
        folder.mkdir(parents=True, exist_ok=True)
        model = [{"model_id": "fake", "model_name": "fake-model", "api_base": url}]
        (folder / "extra-openai-models.yaml").write_text(yaml.safe_dump(model), encoding="utf-8")
        agent = agent.model_copy(update={"cli_args": {"-m": "fake"}})
        return agent, {"OPENAI_API_KEY": "x"}
    agent = agent.model_copy(update={"cli_args": {"model": "openai/fake-model"}})
    return agent, {"OPENAI_API_BASE": url, "OPENAI_API_KEY": "x"}


def call(agent: AgentConfig, env: dict[str, str], mode: Mode, prompt: str) -> CallResult:
    cli = CliAgent(agent, max_output_bytes=1_000_000, env=env)
    return asyncio.run(cli.call(CallRequest(mode, prompt, 120)))


@pytest.mark.parametrize("agent_type", list(VERIFIED), ids=CLIS)
def test_each_answers_version_with_the_verified_release(agent_type: AgentType) -> None:
    assert BIN is not None
    cli, version = VERIFIED[agent_type]
    done = subprocess.run(
        [str(BIN / cli), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done
    line = version_line(done.stdout or done.stderr, preset_for(agent_type).version_answer)
    assert line is not None and version in line, done.stdout


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("agent_type", list(VERIFIED), ids=CLIS)
def test_the_preset_argv_works_with_the_real_cli(
    agent_type: AgentType, mode: Mode, fake_model: FakeModel, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    agent, extra = pointed_at(agent_type, fake_model.url, home)
    prompt = f"Say hello ({agent_type.value}, {mode.value}, {tmp_path.name})."
    result = call(agent, offline_env(home, **extra), mode, prompt)
    said = f"{result.status}: {result.detail}\nstdout {result.text[-1500:]!r}\nstderr {result.stderr_tail!r}"
    assert not any(word in result.stderr_tail + result.text for word in UNKNOWN_OPTION), said
    assert result.status is CallStatus.OK, said
    if agent_type is AgentType.AIDER and mode is Mode.TASK:
        # aider's code mode spaces its reply out; the words are the model's.
        assert result.text.split() == ANSWER.split(), said
    else:
        assert result.text == ANSWER, said  # the prompt arrived, and the output was parsed
    if agent_type is not AgentType.COPILOT_CLI:  # copilot reports no token counts
        assert result.input_tokens and result.output_tokens, said
    if mode is not Mode.TASK:
        offered = fake_model.tools_offered(prompt)
        assert not offered & EDIT_TOOLS, offered


def _processes_with(marker: str) -> list[str]:
    """Command lines of live processes whose environment holds `marker` (our test's HOME)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if marker.encode() in (proc / "environ").read_bytes():
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found


DEBATERS = {  # five of them, none logged in: each one's own words for it
    AgentType.COPILOT_CLI: "No authentication information found",
    AgentType.QWEN_CODE: "No auth type is selected",
    AgentType.LLM: "No key found",
    AgentType.AIDER: "No LLM model was specified and no API keys were provided",
    AgentType.CLAUDE_CODE: "Not logged in",
}


@pytest.mark.skipif(
    BIN is None or not os.access(BIN / "claude", os.X_OK), reason="claude is not installed"
)
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find leftovers")
def test_an_unlogged_debate_of_five_fails_fast_naming_each_cause(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = offline_env(home, CLAUDE_CONFIG_DIR=str(home / ".claude"))
    agents = [{"id": t.value, "type": t.value, "timeout": 90} for t in DEBATERS]
    config = {
        "agents": agents,
        "deadlines": {"soft_timeout_ms": 60_000, "hard_timeout_ms": 100_000, "min_agents": 1},
    }
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    command = ["-m", "freemad", "Say hi", "--rounds", "1", "--config", "agents.yaml", "--json"]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, *command],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "only 0 of 5 agents answered in round 0" in done.stderr.splitlines()[-1]
    (path,) = (tmp_path / "transcripts").glob("transcript-*.json")
    (round_0,) = json.loads(path.read_text(encoding="utf-8"))["transcript"]
    for agent_type, words in DEBATERS.items():
        error = round_0["agents"][agent_type.value]["error"]
        assert error["cause"] == "not_logged_in", (agent_type, error)
        assert words in error["detail"], (agent_type, error)
    # A liveness bound, not a benchmark: far below the agents' 90 s limit and the soft deadline.
    assert time.monotonic() - started < 60
    assert _processes_with(f"HOME={home}\0") == []


def test_health_and_agents_find_all_eight(tmp_path: Path) -> None:
    assert BIN is not None
    missing = [c for c in ("claude", "codex", "gemini") if not os.access(BIN / c, os.X_OK)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    env = offline_env(tmp_path / "home")
    env["PATH"] = os.pathsep.join([str(BIN), "/usr/bin", "/bin"])
    types = [t for t in AgentType if t is not AgentType.GENERIC]
    config = tmp_path / "agents.yaml"
    agents = [{"id": t.value, "type": t.value} for t in types]
    config.write_text(yaml.safe_dump({"agents": agents}), encoding="utf-8")
    health = subprocess.run(
        [sys.executable, "-m", "freemad", "--health", "--config", str(config)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180, check=False,
    )  # fmt: skip
    assert health.returncode == 0, health.stdout + health.stderr
    assert len([line for line in health.stdout.splitlines() if line.startswith("✓")]) == 8
    listing = subprocess.run(
        [sys.executable, "-m", "freemad", "agents", "--json"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180, check=False,
    )  # fmt: skip
    assert listing.returncode == 0, listing.stderr
    found = {entry["type"]: entry for entry in json.loads(listing.stdout)}
    assert set(found) == {t.value for t in types}
    for agent_type, (cli, version) in VERIFIED.items():
        entry = found[agent_type.value]
        assert entry["installed"] and entry["path"] == str(BIN / cli), entry
        assert version in entry["version"], entry
    # Offline, with a fresh HOME: codex and aider can say "no" themselves.
    assert found["openai_codex"]["logged_in"] is False
    assert found["aider"]["logged_in"] is False
    assert "No LLM model was specified" in found["aider"]["login"]
