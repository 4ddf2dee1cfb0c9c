"""Per-run overrides a browser may send when it starts a debate or a task: the critique rounds,
which of the config's agents take part, the deadlines and the scoring weights. Nothing else: the
agents' commands, the sandbox and the paths stay the server's.

The overrides are laid over the config's data and the whole is validated again by the config's
own models (`FreemadConfig`), so a quorum larger than the agents chosen, a soft deadline after
the hard one or three weights are refused with the same line `freemad` gives for such a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, PositiveInt, ValidationError

from freemad.config.load import describe_validation_error
from freemad.config.models import FreemadConfig
from freemad.config.strict import StrictModel
from freemad.errors import ConfigError


class DeadlinesOverride(StrictModel):
    soft_timeout_ms: PositiveInt | None = None
    hard_timeout_ms: PositiveInt | None = None
    min_agents: PositiveInt | None = None


class ScoringOverride(StrictModel):
    weights: tuple[float, ...] | None = None


class RunOverrides(StrictModel):
    """What a run started from the browser may change of its config (None: the config's)."""

    rounds: Annotated[int, Field(ge=0, le=50)] | None = None
    agents: Annotated[list[str], Field(min_length=1, max_length=100)] | None = None
    deadlines: DeadlinesOverride | None = None
    scoring: ScoringOverride | None = None

    def given(self) -> dict[str, Any]:
        """The overrides as JSON, without what was not given (what a run's order carries)."""
        return self.model_dump(mode="json", exclude_none=True)


def parse_overrides(given: Any) -> RunOverrides:
    """A request's `overrides` object; ConfigError (one line) when it is not one."""
    try:
        return RunOverrides.model_validate(given if given is not None else {})
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, "overrides", {}, RunOverrides)) from None


def apply_overrides(config: FreemadConfig, overrides: RunOverrides) -> FreemadConfig:
    """`config` with `overrides` laid over it, validated again as a whole; ConfigError (one
    line) when the result is not a valid config. The rounds may only be lowered (as the start
    form's), and the agents are some of the config's enabled ones (the others sit this run out).
    """
    data = config.model_dump(mode="json")
    if overrides.rounds is not None:
        if overrides.rounds > config.debate.rounds:
            raise ConfigError(
                f"overrides: rounds: at most the config's {config.debate.rounds}, "
                f"got {overrides.rounds}"
            )
        data["debate"]["rounds"] = overrides.rounds
    lay_agents(config, data, overrides.agents)
    if overrides.deadlines is not None:
        data["deadlines"].update(overrides.deadlines.model_dump(exclude_none=True))
    if overrides.scoring is not None and overrides.scoring.weights is not None:
        data["scoring"]["weights"] = list(overrides.scoring.weights)
    return revalidated(data)


def lay_agents(config: FreemadConfig, data: dict[str, Any], agents: list[str] | None) -> None:
    """Only `agents` (some of `config`'s enabled ones) stay enabled in `data`, the config's
    JSON; ConfigError (one line) for any other id. None: all of them."""
    if agents is None:
        return
    enabled = [a.id for a in config.enabled_agents]
    unknown = [a for a in agents if a not in enabled]
    if unknown:
        raise ConfigError(
            f"overrides: agents: not an enabled agent of the config: {', '.join(unknown)[:200]}"
            f" (they are {', '.join(enabled)[:200]})"
        )
    for agent in data["agents"]:
        agent["enabled"] = agent["enabled"] and agent["id"] in agents


def revalidated(data: dict[str, Any]) -> FreemadConfig:
    """A config's JSON with overrides laid over it, checked whole by the config's own models;
    ConfigError (one line, as for a config file) when it is no valid config."""
    try:
        return FreemadConfig.model_validate(data)
    except ValidationError as exc:
        line = describe_validation_error(exc, "overrides", {}, FreemadConfig)
        raise ConfigError(
            line.replace("overrides: ", "overrides: the config with them: ", 1)
        ) from None


def checked_overrides(given: Any, config: FreemadConfig) -> dict[str, Any]:
    """A request's `overrides`, checked against the config it will be laid over: what a run's
    order carries (empty when none were given); ConfigError (one line) when they do not hold."""
    overrides = parse_overrides(given)
    apply_overrides(config, overrides)
    return overrides.given()


def overridden(config: FreemadConfig, given: dict[str, Any] | None) -> FreemadConfig:
    """`config` with the overrides a run's order carries (checked when it was asked for)."""
    return apply_overrides(config, parse_overrides(given)) if given else config


def kept_overrides_path(store: str, task_id: str) -> Path:
    """Where a task's overrides are kept for the steps the dashboard runs after its start."""
    return Path(store).parent / "overrides" / f"{task_id}.json"


def keep_overrides(store: str, task_id: str, given: dict[str, Any]) -> None:
    path = kept_overrides_path(store, task_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(given), encoding="utf-8")


def kept_overrides(store: str, task_id: str) -> dict[str, Any] | None:
    try:
        text = kept_overrides_path(store, task_id).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    given = json.loads(text)
    return given if isinstance(given, dict) else None
