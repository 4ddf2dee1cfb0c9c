"""Pydantic models of a FREE-MAD configuration: every section of the reference README, validated."""

from __future__ import annotations

import re
import shlex
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from freemad.core.answers import IdentityMode
from freemad.core.topology import TopologyKind

Loc = tuple[str | int, ...]


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo must never be silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class LocatedValueError(ValueError):
    """A cross-field problem that names the key at fault, relative to the model that raised it."""

    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc


class AgentType(str, Enum):
    CLAUDE_CODE = "claude_code"
    OPENAI_CODEX = "openai_codex"
    GEMINI_CLI = "gemini_cli"
    GENERIC = "generic"


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
}

NonNegative = Annotated[float, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]
PositiveInt = Annotated[int, Field(gt=0)]
ArgValue = str | int | float | bool


def _doc(text: str, default: Any, **kwargs: Any) -> Any:
    """A field with its one-line description (the JSON Schema's and configs/ALL_KEYS.yaml's).
    A callable default (list, dict, a model class) is a factory, called once per instance."""
    if callable(default):
        return Field(default_factory=default, description=text, **kwargs)
    return Field(default, description=text, **kwargs)


class ModelOptions(StrictModel):
    """Model options recorded with every call (and part of the cache key)."""

    temperature: Annotated[float, Field(ge=0, le=2)] | None = _doc(
        "Sampling temperature, 0 to 2; null leaves it to the CLI.", None
    )
    max_tokens: PositiveInt | None = _doc("Output token cap; null means no cap.", None)


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
        "Preset: claude_code, openai_codex, gemini_cli, or generic.", AgentType.GENERIC
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
    config: ModelOptions = _doc("Model options, recorded with every call.", ModelOptions)
    pricing: Pricing | None = _doc("Token prices for the cost estimate; null means none.", None)
    roles: list[str] = _doc("Task roles this agent may take (planner, reviewer, ...).", list)
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
        if value is None:
            return None
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise ValueError(f"cannot split into words: {exc}") from None
        if not words:
            raise ValueError("is empty")
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
        return shlex.split(self.command)


class TopologyConfig(StrictModel):
    """Who sees whose answer in the critique rounds."""

    type: TopologyKind = _doc("all_to_all, k_reviewers, ring or star.", TopologyKind.ALL_TO_ALL)
    seed: int = _doc("Seed of the k_reviewers shuffle, so runs repeat.", 0)
    k: PositiveInt | None = _doc("Peers each agent reviews under k_reviewers.", None)
    hub: str | None = _doc("The star's centre: an enabled agent's id.", None)


class DeadlinesConfig(StrictModel):
    """Per round: past the soft deadline a quorum is enough; the hard deadline cuts stragglers."""

    soft_timeout_ms: PositiveInt = _doc(
        "After this, a round ends once min_agents answered.", 300_000
    )
    hard_timeout_ms: PositiveInt = _doc(
        "After this, a round ends and stragglers are killed.", 900_000
    )
    min_agents: PositiveInt = _doc("Quorum: answers a round needs, at most the enabled agents.", 1)

    @model_validator(mode="after")
    def _soft_before_hard(self) -> DeadlinesConfig:
        if self.soft_timeout_ms >= self.hard_timeout_ms:
            raise LocatedValueError(
                ("soft_timeout_ms",),
                f"{self.soft_timeout_ms} must be less than "
                f"deadlines.hard_timeout_ms ({self.hard_timeout_ms})",
            )
        return self


class ScoringConfig(StrictModel):
    """The Free-MAD scoring rule over the whole debate trajectory."""

    weights: tuple[float, ...] = _doc(
        "Four weights: [initial, change_penalty, change_bonus, keep].",
        (20.0, 25.0, 30.0, 20.0),
        json_schema_extra={"minItems": 4, "maxItems": 4, "items": {"type": "number", "minimum": 0}},
    )
    normalize: bool = _doc(
        "Divide each answer's score by the number of agents that shaped it.", False
    )
    tie_break: Literal["deterministic", "random"] = _doc(
        "Tied winners: deterministic (first proposed) or random.", "deterministic"
    )
    random_seed: int | None = _doc("Seed for tie_break: random; null is unseeded.", None)
    answer_identity: IdentityMode = _doc(
        "When two answers are one: exact, whitespace, code or final_answer.",
        IdentityMode.WHITESPACE,
    )

    @field_validator("weights")
    @classmethod
    def _four_non_negative(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if len(value) != 4:
            raise ValueError(
                f"expected 4 weights [initial, change_penalty, change_bonus, keep], "
                f"got {len(value)}"
            )
        if any(w < 0 for w in value):
            raise ValueError(f"weights must be non-negative, got {list(value)}")
        return value


class SecurityConfig(StrictModel):
    """What agents may run, and the size limits on what goes in and comes out."""

    cli_allowed_commands: list[str] = _doc(
        "Programs an agent may run, matched against the first word of its command.",
        lambda: ["claude", "codex", "gemini", "freemad-mock-agent"],
    )
    cli_use_shell: bool = _doc(
        "Must be false: agents never run through a shell.",
        False,
        json_schema_extra={"const": False},
    )
    cli_timeout_ms: PositiveInt = _doc("Ceiling on any single agent call.", 900_000)
    max_requirement_size: PositiveInt = _doc("Longest requirement accepted, in characters.", 20_000)
    max_solution_size: PositiveInt = _doc("Longest solution accepted, in characters.", 400_000)
    max_critique_size: PositiveInt = _doc("Reasoning past this many characters is cut.", 100_000)
    redact_patterns: list[str] = _doc(
        "Regular expressions replaced by [REDACTED] in logs, output and transcripts.", list
    )

    @field_validator("cli_use_shell")
    @classmethod
    def _never_a_shell(cls, value: bool) -> bool:
        if value:
            raise ValueError("must be false: agents are never run through a shell")
        return value

    @field_validator("redact_patterns")
    @classmethod
    def _patterns_compile(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from None
            # One that matches nothing at all would stamp [REDACTED] between every character.
            if compiled.match("") is not None:
                raise ValueError(f"{pattern!r} matches the empty string")
        return value


class BudgetConfig(StrictModel):
    """Time and token budgets for a whole debate; null means no limit."""

    max_total_time_sec: Positive | None = _doc("Wall time for the whole debate.", None)
    max_round_time_sec: Positive | None = _doc("Wall time for one round.", None)
    max_agent_time_sec: Positive | None = _doc("Wall time for one agent call.", None)
    max_tokens_per_agent_per_round: PositiveInt | None = _doc(
        "Prompt size cap, in estimated tokens.", None
    )
    enable_token_truncation: bool = _doc(
        "Cut long critique prompts to max_tokens_per_agent_per_round.", True
    )
    max_total_tokens: PositiveInt | None = _doc("Token budget for the whole debate.", None)
    enforce_total_tokens: bool = _doc(
        "Stop before the next round once max_total_tokens is spent.", True
    )
    max_concurrent_agents: PositiveInt = _doc("Agent processes running at once.", 16)


class OutputConfig(StrictModel):
    """Where the transcript goes and what it holds."""

    save_transcript: bool = _doc("Write a transcript of every debate.", True)
    transcript_dir: str = _doc(
        "Folder for transcripts, relative to the working directory.", "transcripts"
    )
    format: Literal["json", "markdown"] = _doc("Transcript format: json or markdown.", "json")
    verbose: bool = _doc("Show each agent starting in the progress lines.", False)
    include_topology_info: bool = _doc("Record who saw whom in each critique round.", True)


class LoggingConfig(StrictModel):
    """Logs of the `freemad` logger; always redacted."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = _doc(
        "DEBUG, INFO, WARNING or ERROR.", "WARNING"
    )
    file: str | None = _doc("Also append logs to this file; null for none.", None)
    console: bool = _doc("Log to stderr.", True)
    structured: bool = _doc("JSON lines instead of text.", False)


class ValidationConfig(StrictModel):
    """Checks on proposed code, recorded in the transcript (they never change the winner)."""

    enable_syntax_check: bool = _doc("Check that Python answers parse.", True)
    enable_sandbox: bool = _doc("Run Python answers in a restricted sandbox.", False)
    sandbox_timeout_ms: PositiveInt = _doc("How long a sandboxed run may take.", 5_000)


class CacheConfig(StrictModel):
    """On-disk memoization of agent replies, keyed by agent, mode and prompt."""

    enabled: bool = _doc("Reuse an agent's reply to the same prompt.", False)
    dir: str = _doc("Cache folder, relative to the working directory.", ".freemad/cache")
    max_entries: PositiveInt = _doc("Past this many, the least recently used entries go.", 1_000)


class DebateConfig(StrictModel):
    """FREE-MAD's additions: the default number of critique rounds and the prompting mode."""

    rounds: Annotated[int, Field(ge=0, le=50)] = _doc(
        "Critique rounds after the first proposals (--rounds overrides).", 1
    )
    prompt_mode: Literal["anti_conformity", "conformity"] = _doc(
        "Critique prompting: anti_conformity (look for flaws) or conformity.", "anti_conformity"
    )
    templates_dir: str | None = _doc(
        "Folder of prompt templates overriding the built-in ones; null for none.", None
    )


class FreemadConfig(StrictModel):
    """A whole configuration file. Only `agents` is required."""

    agents: Annotated[list[AgentConfig], Field(min_length=1)] = Field(
        description="The agent CLIs, at least one."
    )
    topology: TopologyConfig = _doc("Who reviews whom in critique rounds.", TopologyConfig)
    deadlines: DeadlinesConfig = _doc("Per-round deadlines and quorum.", DeadlinesConfig)
    scoring: ScoringConfig = _doc("The Free-MAD scoring rule.", ScoringConfig)
    security: SecurityConfig = _doc("Allowed commands and size limits.", SecurityConfig)
    budget: BudgetConfig = _doc("Time and token budgets.", BudgetConfig)
    output: OutputConfig = _doc("Transcripts.", OutputConfig)
    logging: LoggingConfig = _doc("Logging.", LoggingConfig)
    validation: ValidationConfig = _doc("Checks on proposed code.", ValidationConfig)
    cache: CacheConfig = _doc("Reply cache.", CacheConfig)
    debate: DebateConfig = _doc("Debate rounds and prompting.", DebateConfig)

    @property
    def enabled_agents(self) -> list[AgentConfig]:
        return [a for a in self.agents if a.enabled]

    @model_validator(mode="after")
    def _consistent(self) -> FreemadConfig:
        self._check_agents()
        enabled = [a.id for a in self.enabled_agents]
        quorum = self.deadlines.min_agents
        if quorum > len(enabled):
            raise LocatedValueError(
                ("deadlines", "min_agents"),
                f"{quorum} is more than the {len(enabled)} enabled agent(s)",
            )
        topology = self.topology
        if topology.type is TopologyKind.K_REVIEWERS and len(enabled) > 1:
            top = len(enabled) - 1
            if topology.k is None or not 1 <= topology.k <= top:
                raise LocatedValueError(
                    ("topology", "k"),
                    f"must be between 1 and {top} for k_reviewers with {len(enabled)} "
                    f"enabled agents, got {topology.k}",
                )
        if topology.type is TopologyKind.STAR and topology.hub not in enabled:
            problem = (
                "a star needs a hub"
                if topology.hub is None
                else f"{topology.hub!r} is not an enabled agent"
            )
            raise LocatedValueError(
                ("topology", "hub"), f"{problem}; choose one of {', '.join(enabled)}"
            )
        return self

    def _check_agents(self) -> None:
        seen: set[str] = set()
        for index, agent in enumerate(self.agents):
            if agent.id in seen:
                raise LocatedValueError(("agents", index, "id"), f"duplicate agent id {agent.id!r}")
            seen.add(agent.id)
        if not self.enabled_agents:
            raise LocatedValueError(("agents",), "no agent is enabled")
        allowed = self.security.cli_allowed_commands
        for index, agent in enumerate(self.agents):
            program = agent.command_words[0]
            if not command_allowed(program, allowed):
                raise LocatedValueError(
                    ("agents", index, "cli_command"),
                    f"{program!r} is not in security.cli_allowed_commands [{', '.join(allowed)}]",
                )


def command_allowed(program: str, allowed: list[str]) -> bool:
    """A bare name matches a bare name; a path matches only an entry that is the same path."""
    return program in allowed
