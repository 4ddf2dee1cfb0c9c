"""configs/ALL_KEYS.yaml documents every key; these tests keep it from drifting from the models."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from pydantic import BaseModel

from freemad.config import AgentConfig, FreemadConfig, load_config, parse_config
from freemad.config.models import Pricing

ROOT = Path(__file__).resolve().parents[2]
ALL_KEYS = ROOT / "configs" / "ALL_KEYS.yaml"


def model_inside(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = model_inside(arg)
        if found is not None:
            return found
    return None


def field_paths(model: type[BaseModel], prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key of every model as a path into the YAML (the agents list by its agents[0])."""
    for name, field in model.model_fields.items():
        path = (*prefix, name)
        yield path
        inner = model_inside(field.annotation)
        # evolve has required keys and no default (null); its reference is docs/evolve.md, whose
        # complete example tests/evolve/test_config.py validates.
        if inner is not None and path != ("evolve",):
            is_list = getattr(field.annotation, "__origin__", None) is list
            yield from field_paths(inner, (*path, 0) if is_list else path)


def description(path: tuple[Any, ...]) -> str:
    model: type[BaseModel] = FreemadConfig
    field = None
    for part in path:
        if isinstance(part, int):
            continue
        field = model.model_fields[part]
        model = model_inside(field.annotation) or model
    assert field is not None and field.description
    return field.description


def key_lines(node: yaml.Node, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], int]]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield (*path, key.value), key.start_mark.line
            yield from key_lines(value, (*path, key.value))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from key_lines(item, (*path, index))


def lookup(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def test_it_loads_and_runs_through_the_real_loader() -> None:
    config = load_config(ALL_KEYS)
    assert [a.id for a in config.agents] == ["mock"]


def test_the_walk_sees_every_section_and_nested_model() -> None:
    paths = set(field_paths(FreemadConfig))
    # If the walk stopped recursing these would be missing, and coverage would pass vacuously.
    assert ("agents", 0, "pricing", "output_per_mtok") in paths
    assert ("agents", 0, "config", "temperature") in paths
    assert ("debate", "templates_dir") in paths
    assert len(paths) > 70


def test_every_field_of_every_model_is_in_it() -> None:
    data = yaml.safe_load(ALL_KEYS.read_text())
    missing = []
    for path in field_paths(FreemadConfig):
        parent, key = lookup(data, path[:-1]), path[-1]
        if key not in parent:
            missing.append(".".join(map(str, path)))
    assert missing == [], f"configs/ALL_KEYS.yaml lacks {missing}"


def test_every_value_is_the_default() -> None:
    loaded = load_config(ALL_KEYS)
    agent = loaded.agents[0]
    # The example agent must set id and cli_command, and shows pricing (default null) in full.
    expected = FreemadConfig(
        agents=[AgentConfig(id=agent.id, cli_command=agent.cli_command, pricing=Pricing())]
    )
    assert loaded.model_dump(mode="json") == expected.model_dump(mode="json")


def test_every_key_carries_the_models_one_line_description() -> None:
    text = ALL_KEYS.read_text()
    lines = text.splitlines()
    located = dict(key_lines(yaml.compose(text, Loader=yaml.SafeLoader)))
    wrong = []
    for path in field_paths(FreemadConfig):
        line = lines[located[path]]
        wanted = f"  # {description(path)}"
        if not line.endswith(wanted):
            wrong.append(f"{'.'.join(map(str, path))}: {line.strip()!r} should end {wanted!r}")
    assert wrong == []


def test_it_and_the_mock_config_satisfy_the_json_schema() -> None:
    schema = FreemadConfig.model_json_schema()
    validator = jsonschema.Draft202012Validator(schema)
    for path in (ALL_KEYS, ROOT / "configs" / "mock_agents.yaml"):
        validator.validate(yaml.safe_load(path.read_text()))


def test_the_schema_agrees_with_validation_on_edge_cases() -> None:
    validator = jsonschema.Draft202012Validator(FreemadConfig.model_json_schema())
    agent = {"id": "a", "type": "claude_code", "cli_mode_flags": {"generating": ["--tools", ""]}}
    validator.validate({"agents": [agent]})  # the reference README's spelling is accepted
    assert load_config_text({"agents": [agent]}).agents[0].cli_mode_flags
    for bad in (
        {"agents": [agent], "scoring": {"weights": [1, 2, 3]}},
        {"agents": [agent], "scoring": {"weights": [1, -2, 3, 4]}},
        {"agents": [agent], "security": {"cli_use_shell": True}},
        {"agents": [{**agent, "cli_mode_flags": {"review": []}}]},
    ):
        assert not validator.is_valid(bad), bad


def load_config_text(data: dict[str, Any]) -> FreemadConfig:
    return parse_config(json.dumps(data), json_syntax=True)


def test_the_packaged_mock_config_is_the_example_one() -> None:
    packaged = ROOT / "freemad" / "config" / "mock_agents.yaml"
    example = ROOT / "configs" / "mock_agents.yaml"
    assert packaged.read_bytes() == example.read_bytes()
