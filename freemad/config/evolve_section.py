"""The `evolve:` section: the repository, the variation operator, the judge, the supervisor, stops."""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from freemad.config import mounts
from freemad.config.strict import (
    LocatedValueError,
    NonNegative,
    Positive,
    PositiveInt,
    StrictModel,
    split_command,
)
from freemad.config.strict import doc as _doc
from freemad.core.evolve import COMPONENT_PATTERN, Direction, ParseMode, parse_predicate
from freemad.core.evolve.git_names import DEFAULT_BRANCH_PREFIX, check_branch_prefix

_COMPONENT = re.compile(COMPONENT_PATTERN)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _predicate_text(text: str) -> str:
    parse_predicate(text)  # its ValueError is the user's message
    return text


def _component_name(name: str) -> str:
    if not _COMPONENT.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a component name: letters, digits and '_', not starting with a digit"
        )
    return name


def _inside_repository(path: str) -> str:
    """A repository-relative path, normalised ('tests/' -> 'tests'); never absolute or outside."""
    if path.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[/\\]", path):
        raise ValueError(f"{path!r} must be relative to the repository, not absolute")
    normal = posixpath.normpath(path) if path else ""
    if normal in {"", "."}:
        raise ValueError(f"{path!r} must name a file or folder inside the repository")
    if normal == ".." or normal.startswith("../"):
        raise ValueError(f"{path!r} leads outside the repository")
    return normal


def _editable_glob(pattern: str) -> str:
    """A glob relative to the repository: `src/**/*.py`, `slow_sum.py`, a folder for all below it."""
    if pattern.startswith(":"):
        raise ValueError(f"{pattern!r} must be a plain glob, not a git pathspec with magic")
    normal = _inside_repository(pattern)
    if {".git"} & {part.lower() for part in normal.split("/")}:
        raise ValueError(f"{pattern!r} names .git, which no candidate may change")
    return normal


PredicateText = Annotated[str, AfterValidator(_predicate_text)]
EditableGlob = Annotated[str, AfterValidator(_editable_glob)]
ComponentName = Annotated[str, AfterValidator(_component_name)]
RepoPath = Annotated[str, AfterValidator(_inside_repository)]
BranchPrefix = Annotated[str, AfterValidator(check_branch_prefix)]


class VariationConfig(StrictModel):
    """The variation operator: who proposes the next candidate."""

    mode: Literal["single_agent", "debate"] = _doc(
        "single_agent: one agent edits the worktree; debate: a debate picks a plan, its author implements it.",
        "single_agent",
    )
    agent_id: str | None = _doc(
        "The agent that edits the worktree; required for single_agent. With debate, only the "
        "agent supervisor.intervention: single_agent calls, when set.",
        None,
    )
    debate_rounds: Annotated[int, Field(ge=0)] = _doc(
        "Critique rounds of the planning debate (mode: debate).", 1
    )
    debate_agent_ids: list[str] | None = _doc(
        "The agents that debate a plan (mode: debate) and, with supervisor.intervention: debate, "
        "new directions; at least deadlines.min_agents enabled ones. null: every enabled agent.",
        None,
    )

    @model_validator(mode="after")
    def _agent_for_single(self) -> VariationConfig:
        if self.mode == "single_agent" and not self.agent_id:
            raise LocatedValueError(("agent_id",), "required when mode is single_agent")
        return self


class StageConfig(StrictModel):
    """One judge stage: a command run in the candidate's worktree that measures components."""

    name: Annotated[str, Field(min_length=1)] = Field(
        description="Unique name of the stage, shown in verdicts and reports; not starting with <."
    )
    command: str = Field(
        description="Program and arguments, split like a shell would (shlex) but never run by one."
    )
    timeout_sec: Positive = _doc("Seconds the stage may take; past them it fails.", 300.0)
    parse: ParseMode = _doc(
        'exit_code: exit 0 measures 1.0; json_stdout: stdout is exactly {"components": {...}}.',
        "exit_code",
    )
    provides: list[ComponentName] = Field(
        description="Names of the components the stage measures (exit_code: exactly one)."
    )

    @field_validator("name")
    @classmethod
    def _not_the_workers(cls, value: str) -> str:
        # "<worker>" and "<worker reply>" name the worker's own failures (core.evolve.judge).
        if value.startswith("<"):
            raise ValueError("a stage's name may not start with '<' (kept for the worker's own)")
        return value

    @field_validator("command")
    @classmethod
    def _command_splits(cls, value: str) -> str:
        split_command(value)
        return value

    @model_validator(mode="after")
    def _provides_fit_parse(self) -> StageConfig:
        if self.parse == "exit_code" and len(self.provides) != 1:
            raise LocatedValueError(
                ("provides",),
                f"an exit_code stage provides exactly one component (1.0 on exit 0), "
                f"got {len(self.provides)}",
            )
        if not self.provides:
            raise LocatedValueError(("provides",), "a json_stdout stage provides at least one")
        seen: set[str] = set()
        for index, name in enumerate(self.provides):
            if name in seen:
                raise LocatedValueError(("provides", index), f"{name!r} is listed twice")
            seen.add(name)
        return self

    @property
    def command_words(self) -> list[str]:
        return shlex.split(self.command)


class ComparatorEntry(StrictModel):
    """One rung of the lexicographic comparator."""

    component: ComponentName = Field(description="The component compared at this rung.")
    direction: Direction = Field(description="maximize or minimize: which way is better.")
    epsilon: NonNegative = _doc(
        "Absolute difference that counts as a tie; a tie defers to the next rung.", 0.0
    )
    max_regress: NonNegative | None = _doc(
        "How far below the best ever (in its direction) a candidate may fall; null: no limit.",
        None,
    )


def _mount_source(path: str) -> str:
    """An absolute host path, or one inside the repository (never its `.git`), normalised."""
    problem = mounts.mount_path_problem(path)
    if problem is not None:
        raise ValueError(problem)
    if path.startswith("/"):
        return os.path.normpath(path)
    normal = _inside_repository(path)
    if ".git" in normal.lower().split("/"):
        raise ValueError(f"{path!r} names .git, which no stage may see")
    return normal


class ExtraMount(StrictModel):
    """A host file or folder every stage's container sees, read-only."""

    source: Annotated[str, AfterValidator(_mount_source)] = Field(
        description="The host path: absolute, or relative to the repository; it must exist."
    )
    target: Annotated[str, AfterValidator(mounts.mount_target)] = Field(
        description="The absolute path in the container; not /, /work, /tmp, /proc, /sys, /dev."
    )


class ContainerConfig(StrictModel):
    """Run judge stages in a container with only the worktree mounted."""

    enabled: bool = _doc("Run stages in a container; a missing runtime fails the run.", False)
    runtime: Literal["docker", "podman"] = _doc("docker or podman.", "docker")
    image: str | None = _doc("The image stages run in; required when enabled.", None)
    memory: Annotated[str, AfterValidator(lambda text: mounts.size(text, "6m"))] | None = _doc(
        "Memory one stage's container may use, swap included (e.g. 512m, 2g); null: no limit.",
        "2g",
    )
    cpus: Annotated[float, Field(ge=0.01)] | None = _doc(
        "CPUs one stage's container may use (e.g. 1.5); null: no limit.", None
    )
    pids_limit: PositiveInt = _doc("Processes and threads one stage's container may hold.", 512)
    tmpfs_size: Annotated[str, AfterValidator(lambda text: mounts.size(text, "1m"))] = _doc(
        "Size of the container's private, writable /tmp (e.g. 256m).", "256m"
    )
    extra_mounts: list[ExtraMount] = _doc(
        "Host files or folders mounted read-only into every stage's container.", list
    )
    workdir: Annotated[str, AfterValidator(mounts.workdir)] = _doc(
        "Where stages run in the container: /work (the worktree) or a folder below it.", "/work"
    )

    @model_validator(mode="after")
    def _image_when_enabled(self) -> ContainerConfig:
        if self.enabled and not self.image:
            raise LocatedValueError(("image",), "required when container.enabled is true")
        targets = [mount.target for mount in self.extra_mounts]
        for index, target in enumerate(targets):
            if targets.index(target) != index:
                where = f"extra_mounts[{targets.index(target)}]"
                message = f"{target!r} is already mounted by {where}"
                raise LocatedValueError(("extra_mounts", index, "target"), message)
        return self

    def hash_data(self) -> dict[str, object]:
        """What the judge's hash takes from it: the settings that came with the hardening only
        where they differ from their defaults, so runs from before them keep their hash."""
        data = self.model_dump(mode="json")
        defaults = ContainerConfig().model_dump(mode="json")
        older = ("enabled", "runtime", "image")
        return {key: value for key, value in data.items() if key in older or value != defaults[key]}

    def resolved(self, repo: Path) -> ContainerConfig:
        """A copy whose relative mount sources are taken from the repository `repo`."""
        mounts_ = [
            mount.model_copy(update={"source": os.path.normpath(Path(repo) / mount.source)})
            for mount in self.extra_mounts
        ]
        return self.model_copy(update={"extra_mounts": mounts_})


class JudgeConfig(StrictModel):
    """The deterministic judge: the only thing that admits a candidate."""

    stages: list[StageConfig] = Field(
        description="Commands run in order on each candidate; the first to fail rejects it."
    )
    gate: list[PredicateText] = _doc(
        "Predicates every admitted candidate meets, e.g. 'tests_pass == 1' (COMPONENT OP NUMBER).",
        list,
    )
    comparator: list[ComparatorEntry] = Field(
        description="Lexicographic order on components: when a candidate beats the incumbent."
    )
    protected_paths: list[RepoPath] = _doc(
        "Repository-relative files and folders restored from the seed before judging.", list
    )
    network: bool = _doc("Stages may use the network (false: own network namespace).", False)
    env_passthrough: list[str] = _doc(
        "Environment variables passed to stages and workers beyond the built-in allowlist.", list
    )
    container: ContainerConfig = _doc("Optional container isolation.", ContainerConfig)
    confirm_runs: Annotated[int, Field(ge=0)] = _doc(
        "Times a generation's winner is measured again before admission; it must win every time.",
        0,
    )

    @field_validator("env_passthrough")
    @classmethod
    def _env_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value

    @property
    def components(self) -> list[str]:
        """Every component the stages provide, in stage order."""
        return [name for stage in self.stages for name in stage.provides]

    @model_validator(mode="after")
    def _consistent(self) -> JudgeConfig:
        if not self.stages:
            raise LocatedValueError(("stages",), "needs at least one stage to measure with")
        names: dict[str, int] = {}
        providers: dict[str, str] = {}
        for index, stage in enumerate(self.stages):
            if stage.name in names:
                raise LocatedValueError(
                    ("stages", index, "name"),
                    f"duplicate stage name {stage.name!r} (first at stages[{names[stage.name]}])",
                )
            names[stage.name] = index
            for position, component in enumerate(stage.provides):
                if component in providers:
                    raise LocatedValueError(
                        ("stages", index, "provides", position),
                        f"{component!r} is already provided by stage {providers[component]!r}",
                    )
                providers[component] = stage.name
        if not self.comparator:
            raise LocatedValueError(
                ("comparator",), "needs at least one entry: it decides what counts as better"
            )
        compared: dict[str, int] = {}
        for index, entry in enumerate(self.comparator):
            check_component(entry.component, self.components, ("comparator", index, "component"))
            if entry.component in compared:
                raise LocatedValueError(
                    ("comparator", index, "component"),
                    f"{entry.component!r} is already compared at comparator[{compared[entry.component]}]",
                )
            compared[entry.component] = index
        for index, text in enumerate(self.gate):
            check_component(parse_predicate(text).component, self.components, ("gate", index))
        return self


def check_component(name: str, provided: list[str], loc: tuple[str | int, ...]) -> None:
    if name not in provided:
        raise LocatedValueError(
            loc, f"unknown component {name!r}; stages provide: {', '.join(provided)}"
        )


class SupervisorConfig(StrictModel):
    """Noticing a stuck run, changing course, and asking a person as a last resort."""

    stall_window: PositiveInt = _doc("Iterations without an admission that make a stall.", 5)
    loop_threshold: Annotated[int, Field(ge=2)] = _doc(
        "Rejections in a row with the same failure signature that make a loop.", 3
    )
    directions_ttl_iterations: PositiveInt = _doc(
        "Iterations a direction from an intervention keeps guiding the workers.", 5
    )
    max_interventions_before_human: Annotated[int, Field(ge=0)] = _doc(
        "Interventions without a new best before the run waits for a person.", 2
    )
    intervention: Literal["debate", "single_agent"] = _doc(
        "How an intervention finds new directions: debate (the debate agents) or single_agent "
        "(one call of variation.agent_id, else the first debate agent).",
        "debate",
    )


class StopConfig(StrictModel):
    """When the run ends by itself."""

    max_iterations: PositiveInt = _doc(
        "Iterations (generations, with a population) judged after the baseline, at most.", 20
    )
    max_wall_clock_minutes: Positive | None = _doc(
        "Minutes the run may take (checked between iterations); null: no limit.", None
    )
    max_total_cost_usd: Positive | None = _doc(
        "US dollars the run's agent calls may cost, from their reported tokens and the agents' "
        "pricing (checked between iterations); null: no limit.",
        None,
    )
    target: list[PredicateText] = _doc(
        "Predicates that end the run once the best version meets them all, e.g. 'runtime_ms < 50'.",
        list,
    )


class PopulationConfig(StrictModel):
    """Candidates per generation, all from the same incumbent, and how many run at once."""

    size: PositiveInt = _doc(
        "Candidates per generation; the judge admits at most the best one. 1: one at a time.", 1
    )
    parallel: PositiveInt | None = _doc(
        "Candidates worked and judged at once on this machine; null: the whole generation.", None
    )

    @property
    def workers(self) -> int:
        """How many candidates run at once: `parallel`, never more than `size`."""
        return min(self.parallel or self.size, self.size)


class WorkerBudgetConfig(StrictModel):
    """Limits on one worker call."""

    timeout_sec: Positive = _doc("Seconds one worker call may take.", 900.0)
    max_tokens: PositiveInt | None = _doc("Token cap of one worker call; null: no cap.", None)


class EvolveConfig(StrictModel):
    """Measured progress over generations, admitted only by the deterministic judge."""

    repo_path: str = _doc(
        "The git repository to evolve, relative to the config file's folder.", "."
    )
    seed_ref: str = _doc("The commit, branch or tag the run starts from (v0).", "HEAD")
    store_path: str = _doc(
        "SQLite store of evolve runs, relative to the config file's folder.",
        ".freemad/evolve/evolve.db",
    )
    variation: VariationConfig = Field(description="Who proposes the next candidate.")
    judge: JudgeConfig = Field(description="The stages, gate and comparator that admit.")
    supervisor: SupervisorConfig = _doc("Stall and loop handling.", SupervisorConfig)
    stop: StopConfig = _doc("When the run ends by itself.", StopConfig)
    population: PopulationConfig = _doc(
        "Candidates per generation and how many are judged at once.", PopulationConfig
    )
    worker_budget: WorkerBudgetConfig = _doc("Limits on one worker call.", WorkerBudgetConfig)
    run_branch_prefix: BranchPrefix = _doc(
        "The run's branch is PREFIX/RUN_ID; a git ref name's part (no '..', spaces, '~^:?*[\\', "
        "leading '-' or '/', trailing '/', '.' or '.lock').",
        DEFAULT_BRANCH_PREFIX,
    )
    context_budget_chars: PositiveInt | None = _doc(
        "Characters a worker's prompt may have; over it, the oldest rejections, the knowledge "
        "paths, the best scores, the directions and the plan's end are cut, in that order, and "
        "the prompt says so (never the goal or the protected paths). null: no cap.",
        None,
    )
    knowledge_paths: list[RepoPath] = _doc(
        "Repository-relative files or folders the workers are told to read first.", list
    )
    editable_paths: list[EditableGlob] | None = _doc(
        "Globs of what a candidate may change (`*` within a folder, `**` across folders, a folder "
        "for everything below it); every other path is taken from the incumbent before judging. "
        "null: anything but the protected paths (validate warns).",
        None,
    )

    @model_validator(mode="after")
    def _targets_known(self) -> EvolveConfig:
        provided = self.judge.components
        for index, text in enumerate(self.stop.target):
            name = parse_predicate(text).component
            check_component(name, provided, ("stop", "target", index))
        return self

    def resolved(self, config_dir: Path) -> EvolveConfig:
        """A copy whose repo_path and store_path are absolute, relative ones taken from
        `config_dir` (the folder of the config file)."""
        base = Path(config_dir)

        def absolute(path: str) -> str:
            joined = base / path
            if not joined.is_absolute():
                joined = Path.cwd() / joined
            return os.path.normpath(joined)

        return self.model_copy(
            update={"repo_path": absolute(self.repo_path), "store_path": absolute(self.store_path)}
        )
