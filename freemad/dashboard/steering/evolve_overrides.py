"""Per-run overrides a browser may send when it starts an evolve run: which agents take part, the
planning debate's deadlines, and the `evolve:` settings a person changes from one run to the
next (when it stops, the population, the worker's agent and budget, the supervisor's thresholds).
Nothing else: the judge (its stages, gate and comparator: what a run is judged by), the
repository, the store, the agents' commands and the sandbox stay the server's.

The overrides are laid over the config's data and the whole is validated again by the config's
own models (`FreemadConfig`, its `evolve:` section's), so a population of 0, an agent that is not
enabled or a quorum larger than the debate's agents is refused with the line `freemad evolve
validate` gives for such a file. The values' bounds are the config's, not repeated here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import StrictInt, ValidationError

from freemad.config.load import describe_validation_error
from freemad.config.models import FreemadConfig
from freemad.config.strict import StrictModel
from freemad.dashboard.steering.run_overrides import DeadlinesOverride, lay_agents, revalidated
from freemad.errors import ConfigError


class StopOverride(StrictModel):
    max_iterations: StrictInt | None = None
    max_wall_clock_minutes: float | None = None
    max_total_cost_usd: float | None = None


class PopulationOverride(StrictModel):
    size: StrictInt | None = None
    parallel: StrictInt | None = None


class VariationOverride(StrictModel):
    agent_id: str | None = None
    debate_rounds: StrictInt | None = None
    debate_agent_ids: list[str] | None = None


class SupervisorOverride(StrictModel):
    stall_window: StrictInt | None = None
    loop_threshold: StrictInt | None = None
    directions_ttl_iterations: StrictInt | None = None
    max_interventions_before_human: StrictInt | None = None
    intervention: Literal["debate", "single_agent"] | None = None


class WorkerBudgetOverride(StrictModel):
    timeout_sec: float | None = None
    max_tokens: StrictInt | None = None


class EvolveRunOverrides(StrictModel):
    """What an evolve run started from the browser may change of its config (None: the config's)."""

    agents: list[str] | None = None
    deadlines: DeadlinesOverride | None = None
    stop: StopOverride | None = None
    population: PopulationOverride | None = None
    variation: VariationOverride | None = None
    supervisor: SupervisorOverride | None = None
    worker_budget: WorkerBudgetOverride | None = None

    def given(self) -> dict[str, Any]:
        """The overrides as JSON, without what was not given (what a run's order carries)."""
        given = self.model_dump(mode="json", exclude_none=True)
        return {key: value for key, value in given.items() if value != {}}


EVOLVE_SECTIONS = ("stop", "population", "variation", "supervisor", "worker_budget")


def parse_evolve_overrides(given: Any) -> EvolveRunOverrides:
    """A request's `overrides` object; ConfigError (one line) when it is not one."""
    try:
        return EvolveRunOverrides.model_validate(given if given is not None else {})
    except ValidationError as exc:
        line = describe_validation_error(exc, "overrides", {}, EvolveRunOverrides)
        raise ConfigError(line) from None


def apply_evolve_overrides(config: FreemadConfig, overrides: EvolveRunOverrides) -> FreemadConfig:
    """`config` (one with an `evolve:` section) with `overrides` laid over it, validated again as
    a whole; ConfigError (one line) when the result is not a valid config."""
    if config.evolve is None:
        raise ConfigError("overrides: the config has no evolve: section")
    data = config.model_dump(mode="json")
    lay_agents(config, data, overrides.agents)
    if overrides.deadlines is not None:
        data["deadlines"].update(overrides.deadlines.model_dump(exclude_none=True))
    for section in EVOLVE_SECTIONS:
        given = getattr(overrides, section)
        if given is not None:
            data["evolve"][section].update(given.model_dump(mode="json", exclude_none=True))
    return revalidated(data)


def checked_evolve_overrides(given: Any, config: FreemadConfig) -> dict[str, Any]:
    """A request's `overrides`, checked against the config they will be laid over: what the
    run's order carries (empty when none were given); ConfigError (one line) otherwise."""
    overrides = parse_evolve_overrides(given)
    apply_evolve_overrides(config, overrides)
    return overrides.given()


def evolve_overridden(config: FreemadConfig, given: dict[str, Any] | None) -> FreemadConfig:
    """`config` with the overrides a run's order or its kept file carries (checked when the run
    was asked for)."""
    return apply_evolve_overrides(config, parse_evolve_overrides(given)) if given else config
