"""Agent entries of a config: which CLI to run, how to call it, and what it costs."""

from __future__ import annotations

import functools
import shlex
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from freemad.config.strict import (
    LocatedValueError,
    NonNegative,
    Positive,
    PositiveInt,
    StrictModel,
    split_command,
)
from freemad.config.strict import doc as _doc


class AgentType(str, Enum):
    CLAUDE_CODE = "claude_code"
    OPENAI_CODEX = "openai_codex"
    GEMINI_CLI = "gemini_cli"
    COPILOT_CLI = "copilot_cli"
    OPENCODE = "opencode"
    QWEN_CODE = "qwen_code"
    LLM = "llm"
    AIDER = "aider"
    GENERIC = "generic"


Role = Literal["researcher", "planner", "reviewer", "implementer", "verifier", "arbiter"]


class Mode(str, Enum):
    """What an agent is asked to do; passed as the first argument when `cli_mode_arg` is on."""

    GENERATE = "generate"
    CRITIQUE = "critique"
    TASK = "task"


# Spellings the reference implementation's examples use for `cli_mode_flags` keys.
_MODE_ALIASES = {"generating": "generate", "generation": "generate", "critiquing": "critique"}

# The command a typed agent runs when `cli_command` is left out.
PRESET_COMMANDS: dict[AgentType, str] = {
    AgentType.CLAUDE_CODE: "claude",
    AgentType.OPENAI_CODEX: "codex exec",
    AgentType.GEMINI_CLI: "gemini",
    AgentType.COPILOT_CLI: "copilot",
    AgentType.OPENCODE: "opencode run",
    AgentType.QWEN_CODE: "qwen",
    AgentType.LLM: "llm prompt",
    AgentType.AIDER: "aider",
}

ArgValue = str | int | float | bool


class ModelOptions(StrictModel):
    """Model options recorded with every call (and part of the cache key); passed to the CLI
    where its preset knows how (llm: `-o NAME VALUE` for each one set)."""

    temperature: Annotated[float, Field(ge=0, le=2)] | None = _doc(
        "Sampling temperature, 0 to 2; null leaves it to the CLI.", None
    )
    max_tokens: PositiveInt | None = _doc("Output token cap; null means no cap.", None)
    seed: Annotated[int, Field(ge=0)] | None = _doc(
        "Sampling seed; null leaves it to the CLI. Agents on one model with the same seed and "
        "temperature answer alike.",
        None,
    )


class Pricing(StrictModel):
    """Prices used for the transcript's cost estimate, in US dollars per million tokens."""

    input_per_mtok: NonNegative = _doc("US dollars per million input tokens.", 0.0)
    output_per_mtok: NonNegative = _doc("US dollars per million output tokens.", 0.0)


class AgentConfig(StrictModel):
    """One agent CLI and how to call it. Unset `cli_*` lists take the type's preset."""

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")] = Field(
        description="Unique name: letters, digits, '_', '.', '-'; shown in results and transcripts."
    )
    type: AgentType = _doc(
        "Preset: claude_code, openai_codex, gemini_cli, copilot_cli, opencode, qwen_code, llm, "
        "aider, or generic.",
        AgentType.GENERIC,
    )
    enabled: bool = _doc("Take part in debates; a disabled agent is kept but never called.", True)
    cli_command: str | None = _doc(
        "Program and leading words; null takes the type's preset (generic needs one).", None
    )
    cli_args: dict[str, ArgValue] | None = _doc(
        "Options {name: value}; -- is added to a bare name; true is a flag, false drops it.", None
    )
    cli_flags: list[str] | None = _doc("Words passed as they are; null takes the preset's.", None)
    cli_positional: list[str] | None = _doc(
        "Arguments after the options, e.g. [-]; null takes the preset's.", None
    )
    cli_mode_arg: bool = _doc(
        "Pass the mode (generate, critique, task) as the first argument.", False
    )
    cli_mode_flags: dict[Mode, list[str]] = _doc(
        "Extra words per mode, e.g. {generate: [--tools, '']}.",
        dict,
        # The schema accepts the reference's spellings too, as validation does.
        json_schema_extra={"propertyNames": {"enum": [*(m.value for m in Mode), *_MODE_ALIASES]}},
    )
    timeout: Positive = _doc("Seconds one call may take.", 600.0)
    context_window: PositiveInt | None = _doc(
        "Tokens the model takes in one call, prompt and reply: debate prompts are cut to fit "
        "(null: unknown, the preset's where it knows the model).",
        None,
    )
    free_form_replies: bool = _doc(
        "Read a debate reply with no SOLUTION:/DECISION: line at all as the agent's answer "
        "(small local models ignore the format); off, it is unparseable.",
        False,
    )
    config: ModelOptions = _doc(
        "Model options, recorded with every call; llm gets them as -o NAME VALUE.", ModelOptions
    )
    pricing: Pricing | None = _doc("Token prices for the cost estimate; null means none.", None)
    roles: list[Role] = _doc("Task roles this agent may take (planner, reviewer, ...).", list)
    capabilities: list[str] = _doc("Task action kinds it may do (plan, implement, ...).", list)

    @field_validator("cli_mode_flags", mode="before")
    @classmethod
    def _mode_aliases(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {_MODE_ALIASES.get(str(k), k): v for k, v in value.items()}
        return value

    @field_validator("cli_command")
    @classmethod
    def _command_splits(cls, value: str | None) -> str | None:
        if value is not None:
            split_command(value)
        return value

    @model_validator(mode="after")
    def _needs_command(self) -> AgentConfig:
        if self.cli_command is None and self.type is AgentType.GENERIC:
            raise LocatedValueError(("cli_command",), "required for an agent of type generic")
        return self

    @property
    def command(self) -> str:
        """The command as configured, or the preset's."""
        return self.cli_command or PRESET_COMMANDS[self.type]

    @property
    def command_words(self) -> list[str]:
        """The command split as a shell would, without one; a fresh list on each call."""
        return list(_split_command(self.command))


@functools.lru_cache(maxsize=1024)
def _split_command(command: str) -> tuple[str, ...]:
    # Every agent call asks for its command's words (twice); shlex is slow, a command never changes.
    return tuple(shlex.split(command))
