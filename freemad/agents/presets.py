"""Presets for the agent CLIs we know: default flags, how to read their output, how they say "log in".

Each preset was checked against the CLI as published on the npm registry (see docs/agents.md):
claude 2.1, codex 0.171, gemini 0.61. In debate modes every preset turns tools off, because a
debate answer must come from the prompt alone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import PurePath
from typing import Any

from freemad.config.models import PRESET_COMMANDS, AgentConfig, AgentType

_DEBATE_MODES = ("generate", "critique")
GEMINI_DENY_ALL = str(resources.files("freemad.agents").joinpath("gemini-deny-all.toml"))


@dataclass(frozen=True, slots=True)
class Extracted:
    """The agent's final message and token usage when the CLI reports them, or the CLI's error."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Preset:
    flags: tuple[str, ...] = ()
    args: tuple[tuple[str, str], ...] = ()
    positional: tuple[str, ...] = ()
    mode_flags: dict[str, tuple[str, ...]] = field(default_factory=dict)
    output: str = "text"
    env: tuple[tuple[str, str], ...] = ()
    # Arguments (after the first command word) of a quick "am I logged in?" command, and the
    # environment variables that stand in for a login when present.
    login_check: tuple[str, ...] = ()
    login_env: tuple[str, ...] = ()
    # Where in the home folder the CLI keeps its login and settings (a trailing `/`: a folder):
    # the only part of the home folder's private places a sandboxed call of it can see and write.
    home: tuple[str, ...] = ()
    # What the first line of `PROGRAM --version` matches when it is this CLI (a regex); empty:
    # any line that looks like a version (freemad.agents.health).
    version_answer: str = ""


# Every CLI's own wording for "you are not logged in"; matched on a failed call's stdout and stderr.
NOT_LOGGED_IN = re.compile(
    r"not logged in|please run /login|invalid api key|fix external api key|"
    r"please set an auth method|invalid auth method|api key not valid|incorrect api key|"
    r"\b401 unauthorized\b|authentication_failed|"
    r"you must specify the (?:GEMINI|GOOGLE)_API_KEY",
    re.IGNORECASE,
)

PRESETS: dict[AgentType, Preset] = {
    AgentType.GENERIC: Preset(),
    AgentType.CLAUDE_CODE: Preset(
        flags=("-p", "--output-format", "json", "--no-session-persistence"),
        mode_flags=dict.fromkeys(_DEBATE_MODES, ("--tools", "", "--max-turns", "1")),
        output="claude_json",
        env=(("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),),
        home=(".claude/",),  # in a sandbox, ~/.claude.json moves in (CLAUDE_CONFIG_DIR)
        version_answer=r"^v?\d+\.\d+\S* \(Claude Code\)",  # 2.1.197 (Claude Code)
    ),
    AgentType.OPENAI_CODEX: Preset(
        flags=(
            "--skip-git-repo-check",
            "--ephemeral",
            "--sandbox",
            "read-only",
            "--color",
            "never",
            # Without this codex waits for the network for ever.
            "--disable",
            "unbounded_connection_retries",
            "--json",
        ),
        positional=("-",),
        mode_flags=dict.fromkeys(_DEBATE_MODES, ("--disable", "shell_tool")),
        output="codex_json",
        login_check=("login", "status"),
        login_env=("CODEX_API_KEY", "OPENAI_API_KEY"),
        home=(".codex/",),
        version_answer=r"^codex-cli v?\d+\.\d+",  # codex-cli 0.171.0
    ),
    AgentType.GEMINI_CLI: Preset(
        flags=("-p", "", "--output-format", "json", "--skip-trust"),
        mode_flags=dict.fromkeys(_DEBATE_MODES, ("--policy", GEMINI_DENY_ALL)),
        output="gemini_json",
        home=(".gemini/",),
    ),
}


def preset_for(agent_type: AgentType) -> Preset:
    return PRESETS[agent_type]


def preset_of(agent: AgentConfig) -> Preset:
    """The preset an agent is called with: its type's, when its command runs that type's CLI
    (`claude`, `/opt/bin/claude`). A preset's flags and output format are that CLI's own, so a
    typed agent whose command runs another program (a wrapper such as `python bin/mock_agent.py`,
    as the reference implementation's configs have) is called exactly as configured."""
    own = PRESET_COMMANDS.get(agent.type)
    if own is None or PurePath(agent.command_words[0]).name != own.split()[0]:
        return PRESETS[AgentType.GENERIC]
    return PRESETS[agent.type]


def extract(output_format: str, stdout: str) -> Extracted:
    """Turn a CLI's stdout into the final message; formats that carry usage report it."""
    if output_format == "codex_json":
        return _codex_events(stdout)
    if output_format == "claude_json":
        return _claude_result(stdout)
    if output_format == "gemini_json":
        return _gemini_result(stdout)
    return Extracted(stdout)


def extract_error(output_format: str, stderr: str) -> str | None:
    """The error a CLI reports on stderr in its own format: gemini's JSON error object."""
    if output_format != "gemini_json":
        return None
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == "{"]
    if not starts:
        return None
    event = _json_object("\n".join(lines[starts[-1] :]))
    error = event.get("error") if event else None
    return str(error.get("message")) if isinstance(error, dict) and error.get("message") else None


def _codex_events(stdout: str) -> Extracted:
    """`codex exec --json` prints JSON lines; the last agent message is the answer."""
    message: str | None = None
    error = None
    input_tokens = output_tokens = None
    for event in _json_lines(stdout):
        kind, item = event.get("type"), event.get("item")
        if kind == "item.completed" and isinstance(item, dict):
            if item.get("type") == "agent_message":
                message = str(item.get("text", ""))
        elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
            input_tokens = _int(event["usage"].get("input_tokens"))
            output_tokens = _int(event["usage"].get("output_tokens"))
        elif kind == "turn.failed":
            failure = event.get("error")
            error = str(failure.get("message") if isinstance(failure, dict) else failure)
    if message is None:
        # No agent message: keep the raw output visible to the parser and the transcript.
        return Extracted(stdout, input_tokens, output_tokens, error)
    return Extracted(message, input_tokens, output_tokens, error)


def _claude_result(stdout: str) -> Extracted:
    """`claude -p --output-format json` prints one result object; `is_error` marks a failure."""
    event = _json_object(stdout)
    if event is None or "result" not in event:
        return Extracted(stdout)
    usage = event.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    text = str(event.get("result") or "")
    return Extracted(
        text,
        _int(usage.get("input_tokens")),
        _int(usage.get("output_tokens")),
        (text or "claude reported an error") if event.get("is_error") else None,
    )


def _gemini_result(stdout: str) -> Extracted:
    """`gemini -o json` prints one object with `response` and per-model token stats."""
    event = _json_object(stdout)
    if event is None:
        return Extracted(stdout)
    if isinstance(event.get("error"), dict):
        return Extracted("", error=str(event["error"].get("message", "gemini reported an error")))
    models = (
        event.get("stats", {}).get("models", {}) if isinstance(event.get("stats"), dict) else {}
    )
    tokens = [m.get("tokens", {}) for m in models.values() if isinstance(m, dict)]
    input_tokens = sum(_int(t.get("prompt")) or 0 for t in tokens) if tokens else None
    output_tokens = sum(_int(t.get("candidates")) or 0 for t in tokens) if tokens else None
    return Extracted(str(event.get("response") or ""), input_tokens, output_tokens)


def _json_lines(text: str) -> list[dict[str, Any]]:
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        events = _json_lines(text)
        return events[-1] if events else None
    return value if isinstance(value, dict) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
