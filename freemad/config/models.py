"""Pydantic models of a FREE-MAD configuration: every section of the reference README, validated."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from freemad.config.agents_section import (
    PRESET_COMMANDS,
    AgentConfig,
    AgentType,
    ArgValue,
    Mode,
    ModelOptions,
    Pricing,
)
from freemad.config.evolve_agents import check_evolve_agents
from freemad.config.evolve_section import EvolveConfig
from freemad.config.github_section import GitHubConfig
from freemad.config.review_section import ReviewConfig
from freemad.config.strict import (
    Loc,
    LocatedValueError,
    Positive,
    PositiveInt,
    StrictModel,
)
from freemad.config.strict import doc as _doc
from freemad.config.task_section import ROLES, TaskConfig, ToolPolicy
from freemad.core.answer_identity import IdentityMode
from freemad.core.topology import TopologyKind


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
    accept_late_until_hard: bool = _doc(
        "Wait for every agent until the hard deadline, as the reference implementation does; "
        "false: a round ends at the soft deadline once min_agents answered.",
        False,
    )

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
    tie_break: Literal["deterministic", "random", "confidence"] = _doc(
        "Tied winners: deterministic (first proposed), random, or confidence (the highest "
        "validator confidence, then first proposed).",
        "deterministic",
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
        lambda: [
            "claude",
            "codex",
            "gemini",
            "copilot",
            "opencode",
            "qwen",
            "llm",
            "aider",
            "freemad-mock-agent",
        ],
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
    sandbox: Literal["auto", "bubblewrap", "host"] = _doc(
        "Where code agents wrote or chose, and agents that edit files, run: auto and bubblewrap "
        "use bubblewrap and refuse where it cannot run; host runs them unsandboxed, on purpose "
        "(unsafe against a hostile agent).",
        "auto",
    )
    sandbox_agents: bool = _doc(
        "Run debate agents under the sandbox too (the agent profile: network and their own login kept).",
        False,
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
        "Folder for transcripts, relative to the config file's folder.", "transcripts"
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
    """Checks on answers, recorded in the transcript; they change no score, and choose the winner
    only among answers tied for the top score, with `scoring.tie_break: confidence`."""

    enable_syntax_check: bool = _doc("Check that Python answers parse.", True)
    enable_sandbox: bool = _doc("Run Python answers in a restricted sandbox.", False)
    sandbox_timeout_ms: PositiveInt = _doc("How long a sandboxed run may take.", 5_000)
    secret_scan: bool = _doc(
        "Look for credential-looking strings in every answer: flag them, lower the answer's "
        "confidence, and redact them from the transcript and everything shown.",
        True,
    )


class CacheConfig(StrictModel):
    """On-disk memoization of agent replies, keyed by agent, mode and prompt."""

    enabled: bool = _doc("Reuse an agent's reply to the same prompt.", False)
    dir: str = _doc("Cache folder, relative to the config file's folder.", ".freemad/cache")
    max_entries: PositiveInt = _doc("Past this many, the least recently used entries go.", 1_000)


# About 50,000 estimated tokens: within every supported agent's context, and 1.6 MB prompts
# (16 agents showing 100 KB answers each) never happen by default (docs/benchmarks.md).
MAX_PROMPT_CHARS = 200_000


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
    max_prompt_chars: PositiveInt | None = _doc(
        "Bound on one critique prompt, in characters; past it peers' answers share the room "
        "equally (longer ones cut, marked); null for no bound.",
        MAX_PROMPT_CHARS,
    )
    finalizer: str | None = _doc(
        "An enabled agent called once after the decision with the winning answer and the "
        "critiques it received, to write the final answer, kept apart from the winner; null "
        "for none.",
        None,
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
    task: TaskConfig = _doc("Autonomous plan and code tasks.", TaskConfig)
    evolve: EvolveConfig | None = _doc(
        "Evolve runs: the judge and supervisor (docs/evolve.md); null when unused.", None
    )
    github: GitHubConfig = _doc("On GitHub: the Action and the bot (docs/github.md).", GitHubConfig)
    review: ReviewConfig = _doc("Debated pull-request reviews (docs/github.md).", ReviewConfig)

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
        self._check_finalizer(enabled)
        variation = self.evolve.variation if self.evolve else None
        if variation and variation.mode == "single_agent" and variation.agent_id not in enabled:
            raise LocatedValueError(
                ("evolve", "variation", "agent_id"),
                f"{variation.agent_id!r} is not an enabled agent; choose one of {', '.join(enabled)}",
            )
        check_evolve_agents(self)
        return self

    def _check_finalizer(self, enabled: list[str]) -> None:
        finalizer = self.debate.finalizer
        if finalizer is None or finalizer in enabled:
            return
        what = "disabled" if any(a.id == finalizer for a in self.agents) else "not an agent id"
        raise LocatedValueError(
            ("debate", "finalizer"),
            f"{finalizer!r} is {what}; choose an enabled agent: {', '.join(enabled)}",
        )

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


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a config file (`freemad config schema`, the dashboard's config page)."""
    schema = FreemadConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "FREE-MAD configuration"
    return schema


# The agent models live in freemad.config.agents_section; this module is the one import path for all.
__all__ = [
    "PRESET_COMMANDS",
    "ROLES",
    "AgentConfig",
    "AgentType",
    "ArgValue",
    "BudgetConfig",
    "CacheConfig",
    "DeadlinesConfig",
    "DebateConfig",
    "EvolveConfig",
    "FreemadConfig",
    "Loc",
    "LocatedValueError",
    "LoggingConfig",
    "Mode",
    "ModelOptions",
    "OutputConfig",
    "Pricing",
    "ScoringConfig",
    "SecurityConfig",
    "StrictModel",
    "TaskConfig",
    "ToolPolicy",
    "TopologyConfig",
    "ValidationConfig",
    "command_allowed",
    "json_schema",
]
