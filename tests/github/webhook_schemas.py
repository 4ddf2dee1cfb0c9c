"""GitHub's webhook descriptions (npm `@octokit/openapi-webhooks`) and the least a payload may be.

`least(schema)` is the smallest payload the schema allows: required properties only, and null
wherever null is allowed. A model that refuses it asks for more than GitHub promises to send.
`fullest(schema)` is the opposite corner: every property present, nothing null.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "@octokit/openapi-webhooks"


def description_path() -> Path:
    base = Path(os.environ.get("FREEMAD_OCTOKIT_DIR", ROOT / ".cache" / "octokit"))
    return base / "node_modules" / PACKAGE / "generated" / "api.github.com.json"


@cache
def description() -> dict[str, Any]:
    return json.loads(description_path().read_text())  # type: ignore[no-any-return]


def webhooks_of(event: str) -> dict[str, dict[str, Any]]:
    """{action (or "" for an event without one): payload schema} of one webhook event; the
    operation ids say which (`issues/pinned`, `issue-comment/created`, `ping`)."""
    found = {}
    for entry in description()["webhooks"].values():
        post = entry["post"]
        name, _, action = post["operationId"].partition("/")
        if name.replace("-", "_") != event:
            continue
        found[action.replace("-", "_")] = post["requestBody"]["content"]["application/json"][
            "schema"
        ]
    return found


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        node: Any = description()
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    return kind if isinstance(kind, list) else [kind] if kind else []


def _nullable(schema: dict[str, Any]) -> bool:
    if "null" in _types(schema) or schema.get("nullable") is True:
        return True
    branches = schema.get("anyOf") or schema.get("oneOf") or []
    return any(_nullable(resolve(branch)) for branch in branches)


def _scalar(schema: dict[str, Any], kind: str) -> Any:
    if "enum" in schema:
        return next(value for value in schema["enum"] if value is not None)
    if "const" in schema:
        return schema["const"]
    if kind == "string":
        formats = {"date-time": "2026-12-01T00:00:00Z", "uri": "https://example.com/x"}
        return formats.get(schema.get("format", ""), "x")
    return {"integer": 1, "number": 1.5, "boolean": False}.get(kind)


def least(schema: dict[str, Any], depth: int = 0) -> Any:
    """The smallest value the schema allows (required properties only, null where allowed)."""
    schema = resolve(schema)
    if depth > 40 or _nullable(schema):
        return None
    return _build(schema, depth, least, lambda s: s.get("required", []))


def fullest(schema: dict[str, Any], depth: int = 0) -> Any:
    """A value with every property the schema describes, none of them null."""
    schema = resolve(schema)
    if depth > 12:
        return None
    return _build(schema, depth, fullest, lambda s: list(s.get("properties", {})))


def _build(schema: dict[str, Any], depth: int, again: Any, keys: Any) -> Any:
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            value = again(part, depth + 1)
            if isinstance(value, dict):
                merged.update(value)
        return merged
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        usable = [resolve(b) for b in branches if "null" not in _types(resolve(b))]
        return again(usable[0], depth + 1) if usable else None
    kinds = [k for k in _types(schema) if k != "null"] or (
        ["object"] if "properties" in schema else []
    )
    kind = kinds[0] if kinds else "object"
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            name: again(properties.get(name, {}), depth + 1)
            for name in keys(schema)
            if name in properties or name in schema.get("required", [])
        }
    if kind == "array":
        count = max(schema.get("minItems", 0), 0 if again is least else 1)
        return [again(schema.get("items", {}), depth + 1) for _ in range(count)]
    return _scalar(schema, kind)
