"""SchemaStore's JSON schemas as the check-jsonschema package vendors them, read from its package
data (no network), and YAML read the way GitHub and Compose read it (YAML 1.2: `on` is a key)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from ruamel.yaml import YAML

VENDOR = "check_jsonschema.builtin_schemas.vendor"


def schema(name: str) -> dict[str, Any]:
    """A vendored schema by its file stem: github-workflows, github-actions, compose-spec."""
    data: dict[str, Any] = json.loads(resources.files(VENDOR).joinpath(f"{name}.json").read_text())
    return data


def load_yaml(path: Path) -> Any:
    """YAML 1.2, as GitHub reads a workflow; PyYAML (YAML 1.1) would read the key `on` as True."""
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def errors(document: Any, name: str) -> list[str]:
    """Where `document` breaks the schema, one line each; empty when it is valid."""
    found = schema(name)
    validator_class = jsonschema.validators.validator_for(found)
    validator = validator_class(found, format_checker=validator_class.FORMAT_CHECKER)
    return [
        f"{'/'.join(str(part) for part in error.absolute_path) or '(top)'}: {error.message[:300]}"
        for error in validator.iter_errors(document)
    ]
