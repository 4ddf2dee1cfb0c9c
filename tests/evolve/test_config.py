"""The `evolve:` config section: defaults, path handling, and every error naming its key."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from freemad.config.evolve_section import EvolveConfig
from freemad.config.load import describe_validation_error
from freemad.config.strict import StrictModel


class Root(StrictModel):
    """Stands in for FreemadConfig until the section is wired there, so keys read evolve.*."""

    evolve: EvolveConfig


def toy() -> dict[str, Any]:
    return {
        "variation": {"mode": "single_agent", "agent_id": "worker"},
        "judge": {
            "stages": [
                {"name": "tests", "command": "python -m pytest -q", "provides": ["tests_pass"]},
                {
                    "name": "bench",
                    "command": "python bench.py --repeat 5",
                    "parse": "json_stdout",
                    "timeout_sec": 60,
                    "provides": ["runtime_ms"],
                },
            ],
            "gate": ["tests_pass == 1"],
            "comparator": [{"component": "runtime_ms", "direction": "minimize", "epsilon": 1}],
            "protected_paths": ["tests/", "bench.py"],
        },
        "stop": {"target": ["runtime_ms < 5"]},
    }


def error(change: Callable[[dict[str, Any]], object]) -> str:
    data = toy()
    change(data)
    with pytest.raises(ValidationError) as caught:
        Root.model_validate({"evolve": data})
    return describe_validation_error(caught.value, "evolve.yaml", {}, Root)


def test_toy_config_takes_the_defaults() -> None:
    config = EvolveConfig.model_validate(toy())
    assert config.repo_path == "."
    assert config.seed_ref == "HEAD"
    assert config.store_path == ".freemad/evolve/evolve.db"
    assert config.variation.debate_rounds == 1
    tests, bench = config.judge.stages
    assert (tests.parse, tests.timeout_sec) == ("exit_code", 300.0)
    assert bench.command_words == ["python", "bench.py", "--repeat", "5"]
    assert config.judge.components == ["tests_pass", "runtime_ms"]
    assert config.judge.comparator[0].epsilon == 1.0
    assert config.judge.comparator[0].max_regress is None
    assert config.judge.protected_paths == ["tests", "bench.py"]
    assert config.judge.network is False
    assert config.judge.env_passthrough == []
    assert config.judge.container.enabled is False
    assert config.judge.container.runtime == "docker"
    supervisor = config.supervisor
    assert (supervisor.stall_window, supervisor.loop_threshold) == (5, 3)
    assert supervisor.directions_ttl_iterations == 5
    assert supervisor.max_interventions_before_human == 2
    assert config.stop.max_iterations == 20
    assert config.stop.max_wall_clock_minutes is None
    assert config.worker_budget.timeout_sec == 900.0
    assert config.worker_budget.max_tokens is None
    assert config.knowledge_paths == []


def test_debate_needs_no_agent_id() -> None:
    data = toy()
    data["variation"] = {"mode": "debate", "debate_rounds": 0}
    assert EvolveConfig.model_validate(data).variation.debate_rounds == 0


def test_container_with_image_is_accepted() -> None:
    data = toy()
    data["judge"]["container"] = {"enabled": True, "runtime": "podman", "image": "python:3.12"}
    assert EvolveConfig.model_validate(data).judge.container.image == "python:3.12"


def test_resolved_makes_paths_absolute_against_the_config_folder(tmp_path: Path) -> None:
    data = toy()
    data["repo_path"] = "../project"
    config = EvolveConfig.model_validate(data).resolved(tmp_path / "configs")
    assert config.repo_path == str(tmp_path / "project")
    assert config.store_path == str(tmp_path / "configs" / ".freemad/evolve/evolve.db")
    assert config.judge == EvolveConfig.model_validate(data).judge


def test_resolved_keeps_absolute_paths(tmp_path: Path) -> None:
    data = toy()
    data["repo_path"], data["store_path"] = str(tmp_path / "r"), str(tmp_path / "s.db")
    config = EvolveConfig.model_validate(data).resolved(Path("elsewhere"))
    assert (config.repo_path, config.store_path) == (str(tmp_path / "r"), str(tmp_path / "s.db"))


def test_resolved_from_a_relative_config_folder_is_still_absolute() -> None:
    config = EvolveConfig.model_validate(toy()).resolved(Path("configs"))
    assert Path(config.repo_path).is_absolute()
    assert config.repo_path == str(Path.cwd() / "configs")


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A change that sets one dotted key (list indexes as numbers) of the toy config."""

    def change(data: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node: Any = data
        for part in parents:
            node = node[part]
        node[last] = copy.deepcopy(value)

    return change


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for part in parents:
            node = node[int(part) if part.isdigit() else part]
        del node[last]

    return change


PROVIDES = "stages provide: tests_pass, runtime_ms"
BENCH = {"name": "bench", "command": "b", "parse": "json_stdout", "provides": ["runtime_ms"]}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            _set("judge.gate", ["tests_pass == 1", "speed > 1"]),
            f"evolve.judge.gate[1]: unknown component 'speed'; {PROVIDES}",
        ),
        (
            _set("judge.comparator.0.component", "speed"),
            f"evolve.judge.comparator[0].component: unknown component 'speed'; {PROVIDES}",
        ),
        (
            _set("stop.target", ["runtime_ms < 5", "memory_mb < 3"]),
            f"evolve.stop.target[1]: unknown component 'memory_mb'; {PROVIDES}",
        ),
        (
            _set("judge.stages.0.provides", ["runtime_ms"]),
            "evolve.judge.stages[1].provides[0]: 'runtime_ms' is already provided by stage 'tests'",
        ),
        (
            _set("judge.stages.0.provides", ["tests_pass", "lint_ok"]),
            "evolve.judge.stages[0].provides: an exit_code stage provides exactly one component "
            "(1.0 on exit 0), got 2",
        ),
        (
            _set("judge.stages.1.provides", []),
            "evolve.judge.stages[1].provides: a json_stdout stage provides at least one",
        ),
        (
            _set("judge.stages.1.provides", ["runtime_ms", "runtime_ms"]),
            "evolve.judge.stages[1].provides[1]: 'runtime_ms' is listed twice",
        ),
        (
            _set("judge.stages.1.provides", ["runtime-ms"]),
            "evolve.judge.stages[1].provides[0]: 'runtime-ms' is not a component name: "
            "letters, digits and '_', not starting with a digit",
        ),
        (
            _set("judge.comparator", []),
            "evolve.judge.comparator: needs at least one entry: it decides what counts as better",
        ),
        (
            _set(
                "judge.comparator",
                [
                    {"component": "runtime_ms", "direction": "minimize"},
                    {"component": "runtime_ms", "direction": "maximize"},
                ],
            ),
            "evolve.judge.comparator[1].component: 'runtime_ms' is already compared at "
            "comparator[0]",
        ),
        (
            _set("variation", {"mode": "single_agent"}),
            "evolve.variation.agent_id: required when mode is single_agent",
        ),
        (
            _set(
                "judge.stages",
                [
                    {"name": "tests", "command": "t", "provides": ["tests_pass"]},
                    {**BENCH, "name": "tests"},
                ],
            ),
            "evolve.judge.stages[1].name: duplicate stage name 'tests' (first at stages[0])",
        ),
        (
            _set("judge.container", {"enabled": True}),
            "evolve.judge.container.image: required when container.enabled is true",
        ),
        (
            _set("judge.gate", ["tests_pass = 1"]),
            "evolve.judge.gate[0]: 'tests_pass = 1' is not a predicate; expected COMPONENT OP "
            "NUMBER with OP one of == != < <= > >=, e.g. 'runtime_ms < 500'",
        ),
        (
            _set("stop.target", ["runtime_ms < fast"]),
            "evolve.stop.target[0]: 'runtime_ms < fast' is not a predicate; expected COMPONENT "
            "OP NUMBER with OP one of == != < <= > >=, e.g. 'runtime_ms < 500'",
        ),
        (
            _set("judge.protected_paths", ["tests", "/etc/passwd"]),
            "evolve.judge.protected_paths[1]: '/etc/passwd' must be relative to the repository, "
            "not absolute",
        ),
        (
            _set("judge.protected_paths", ["tests/../../secrets"]),
            "evolve.judge.protected_paths[0]: 'tests/../../secrets' leads outside the repository",
        ),
        (
            _set("judge.protected_paths", ["./"]),
            "evolve.judge.protected_paths[0]: './' must name a file or folder inside the repository",
        ),
        (
            _set("knowledge_paths", ["../notes.md"]),
            "evolve.knowledge_paths[0]: '../notes.md' leads outside the repository",
        ),
        (
            _set("judge.stages.1.timeout", 5),
            "evolve.judge.stages[1].timeout: unknown key (did you mean 'timeout_sec'?)",
        ),
        (
            _set("judge.stages.1.timeout_sec", 0),
            "evolve.judge.stages[1].timeout_sec: should be greater than 0 (got 0)",
        ),
        (
            _set("judge.stages.1.parse", "stdout"),
            "evolve.judge.stages[1].parse: should be 'exit_code' or 'json_stdout' (got 'stdout')",
        ),
        (
            _set("judge.stages.1.command", 'python "bench.py'),
            "evolve.judge.stages[1].command: cannot split into words: No closing quotation",
        ),
        (
            _set("judge.stages.1.command", "   "),
            "evolve.judge.stages[1].command: is empty",
        ),
        (
            _set("judge.comparator.0.direction", "down"),
            "evolve.judge.comparator[0].direction: should be 'maximize' or 'minimize' (got 'down')",
        ),
        (
            _set("judge.comparator.0.epsilon", -1),
            "evolve.judge.comparator[0].epsilon: should be greater than or equal to 0 (got -1)",
        ),
        (
            _set("judge.comparator.0.max_regress", -0.5),
            "evolve.judge.comparator[0].max_regress: should be greater than or equal to 0 "
            "(got -0.5)",
        ),
        (
            _set("judge.env_passthrough", ["HOME", "MY VAR"]),
            "evolve.judge.env_passthrough: 'MY VAR' is not an environment variable name",
        ),
        (
            _set("judge.container", {"enabled": True, "runtime": "lxc", "image": "x"}),
            "evolve.judge.container.runtime: should be 'docker' or 'podman' (got 'lxc')",
        ),
        (
            _set("variation", {"mode": "debate", "debate_rounds": -1}),
            "evolve.variation.debate_rounds: should be greater than or equal to 0 (got -1)",
        ),
        (
            _set("supervisor", {"loop_threshold": 1}),
            "evolve.supervisor.loop_threshold: should be greater than or equal to 2 (got 1)",
        ),
        (
            _set("supervisor", {"stall_window": 0}),
            "evolve.supervisor.stall_window: should be greater than 0 (got 0)",
        ),
        (
            _set("supervisor", {"directions_ttl_iterations": 0}),
            "evolve.supervisor.directions_ttl_iterations: should be greater than 0 (got 0)",
        ),
        (
            _set("supervisor", {"max_interventions_before_human": -1}),
            "evolve.supervisor.max_interventions_before_human: should be greater than or equal "
            "to 0 (got -1)",
        ),
        (
            _set("stop.max_iterations", 0),
            "evolve.stop.max_iterations: should be greater than 0 (got 0)",
        ),
        (
            _set("stop.max_wall_clock_minutes", 0),
            "evolve.stop.max_wall_clock_minutes: should be greater than 0 (got 0)",
        ),
        (
            _set("worker_budget", {"timeout_sec": 0}),
            "evolve.worker_budget.timeout_sec: should be greater than 0 (got 0)",
        ),
        (
            _set("worker_budget", {"max_tokens": 0}),
            "evolve.worker_budget.max_tokens: should be greater than 0 (got 0)",
        ),
        (
            _set("judge.stages", []),
            "evolve.judge.stages: needs at least one stage to measure with",
        ),
        (_drop("judge"), "evolve.judge: required key is missing"),
        (
            _drop("judge.stages.1.provides"),
            "evolve.judge.stages[1].provides: required key is missing",
        ),
        (
            _set("mutation_rate", 0.5),
            "evolve.mutation_rate: unknown key (expected one of: "
            "repo_path, seed_ref, store_path, variation, judge, supervisor, stop, population, "
            "worker_budget, run_branch_prefix, context_budget_chars, knowledge_paths, editable_paths)",
        ),
    ],
)
def test_errors_name_the_key(change: Callable[[dict[str, Any]], object], expected: str) -> None:
    assert error(change) == f"evolve.yaml: {expected}"


def _models(model: type[BaseModel]) -> Iterator[tuple[type[BaseModel], str]]:
    for name, field in model.model_fields.items():
        yield model, name
        for inner in _inner_models(field.annotation):
            yield from _models(inner)


def _inner_models(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in getattr(annotation, "__args__", ()):
        yield from _inner_models(arg)


def test_every_key_has_a_one_line_description_and_unknown_keys_are_errors() -> None:
    seen = list(_models(EvolveConfig))
    assert len(seen) > 30
    for model, name in seen:
        description = model.model_fields[name].description
        assert description, f"{model.__name__}.{name} has no description"
        assert "\n" not in description
        assert model.model_config.get("extra") == "forbid"
        assert model.model_config.get("frozen") is True


def test_the_json_schema_builds() -> None:
    schema = EvolveConfig.model_json_schema()
    assert set(schema["required"]) == {"variation", "judge"}


def test_the_documented_example_validates() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "evolve.md").read_text("utf-8")
    block = re.search(r"```yaml\n(.*?)```", text, re.DOTALL)
    assert block is not None
    config = EvolveConfig.model_validate(yaml.safe_load(block.group(1))["evolve"])
    assert config.judge.components == ["tests_pass", "runtime_ms"]
    assert config.judge.protected_paths == ["tests", "bench.py"]


def test_a_stage_cannot_take_the_name_of_the_workers_own_failures() -> None:
    said = error(lambda data: data["judge"]["stages"][0].update(name="<worker>"))
    assert said == (
        "evolve.yaml: evolve.judge.stages[0].name: a stage's name may not start with '<' "
        "(kept for the worker's own)"
    )
