"""GitHub's REST API description (npm `@octokit/openapi`) as the contract for both sides of the
stand-in: every request FREE-MAD sends and every answer the stand-in gives.

`problems(call)` lists how one recorded exchange departs from the description: an operation that
does not exist, a path or query parameter it does not declare or of the wrong type, a request body
its schema refuses, a media type it does not serve, a status it does not list, a reply its schema
refuses. An empty list is a conforming exchange. The description is OpenAPI 3.0 (`nullable`),
turned into JSON Schema 2020-12 once, on first use.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from freemad.github.pygithub_forge import USER_AGENT
from freemad.github.standin import StandInCall

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "@octokit/openapi"
BASE = "urn:github-rest"
# The media types an operation's JSON may be asked for in: GitHub's own, and the plain one. A
# preview or `*/*` is not among them: FREE-MAD asks for what GitHub documents.
JSON_MEDIA = ("application/vnd.github+json", "application/json")
API_VERSIONS = ("2022-11-28", "2026-03-10")


def description_path(name: str = "api.github.com") -> Path:
    base = Path(os.environ.get("FREEMAD_OCTOKIT_DIR", ROOT / ".cache" / "octokit"))
    return base / "node_modules" / PACKAGE / "generated" / f"{name}.json"


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0's schema dialect as JSON Schema: `nullable: true` becomes a null alternative,
    and every `$ref` is made absolute (`urn:github-rest#/components/...`)."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _json_schema(value) for key, value in node.items() if key != "nullable"}
    if isinstance(out.get("$ref"), str) and out["$ref"].startswith("#"):
        out["$ref"] = BASE + out["$ref"]  # absolute, so any part of the document validates alone
    if node.get("nullable") is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    pattern: re.Pattern[str]
    spec: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.spec.get("operationId", f"{self.method} {self.template}"))


class Contract:
    def __init__(self, path: Path) -> None:
        self.document: dict[str, Any] = _json_schema(json.loads(path.read_text()))
        resource = Resource.from_contents(self.document, default_specification=DRAFT202012)
        self.registry: Registry[Any] = Registry().with_resource(BASE, resource)
        self.operations: dict[str, list[Operation]] = {}
        for template, item in self.document["paths"].items():
            for method, spec in item.items():
                if method not in ("get", "post", "put", "patch", "delete"):
                    continue
                literal = re.sub(r"\{[^}]+\}", "\0", template)
                regex = "".join(
                    "([^/]+)" if part == "\0" else re.escape(part)
                    for part in re.split("(\0)", literal)
                )
                op = Operation(method.upper(), template, re.compile(regex), spec)
                self.operations.setdefault(method.upper(), []).append(op)
        for ops in self.operations.values():  # a literal segment beats a parameter
            ops.sort(key=lambda op: op.template.count("{"))

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            target: Any = self.document
            for part in node["$ref"].removeprefix(BASE).removeprefix("#/").split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
        return node

    def operation(self, method: str, path: str) -> tuple[Operation, tuple[str, ...]] | None:
        for op in self.operations.get(method, []):
            found = op.pattern.fullmatch(path)
            if found:
                return op, found.groups()
        return None

    def errors(self, instance: Any, schema: dict[str, Any]) -> list[str]:
        validator = Draft202012Validator(schema, registry=self.registry)
        return [
            f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:200]}"
            for e in sorted(validator.iter_errors(instance), key=lambda e: list(e.path))[:5]
        ]

    def parameters(self, op: Operation) -> dict[tuple[str, str], dict[str, Any]]:
        return {
            (param["in"], param["name"]): param
            for param in map(self.resolve, op.spec.get("parameters", []))
        }


@cache
def contract(name: str = "api.github.com") -> Contract:
    return Contract(description_path(name))


def _coerce(value: str, schema: dict[str, Any]) -> Any:
    """A path or query parameter arrives as text; the schema may ask for a number or a flag."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "integer" in kinds and re.fullmatch(r"-?\d+", value):
        return int(value)
    if "boolean" in kinds and value in ("true", "false"):
        return value == "true"
    return value


def _media(value: str) -> str:
    return value.split(";", maxsplit=1)[0].strip().lower()


def sent_by_freemad(call: StandInCall) -> bool:
    """FREE-MAD's client names itself (GitHub asks every client for a User-Agent); a test probing
    the stand-in with a request GitHub would refuse does not."""
    agent = {k.lower(): v for k, v in call.headers.items()}.get("user-agent", "")
    return agent.startswith(USER_AGENT)


def problems(call: StandInCall, *, name: str = "api.github.com") -> list[str]:
    """How one exchange departs from GitHub's description (empty when it conforms): the request
    when FREE-MAD sent it, the reply unless a test injected it."""
    api = contract(name)
    found = api.operation(call.method, call.path)
    if found is None:
        return [f"{call.method} {call.path}: no such operation in GitHub's REST API"]
    op, values = found
    where = f"{call.method} {call.path} ({op.name})"
    out = []
    if sent_by_freemad(call):
        out += [f"{where}: {text}" for text in _request_problems(api, op, values, call)]
    if not call.injected:  # a fault a test injected is not the stand-in's answer
        out += [f"{where}: reply {call.status}: {text}" for text in _reply_problems(api, op, call)]
    return out


def _request_problems(
    api: Contract, op: Operation, values: tuple[str, ...], call: StandInCall
) -> Iterator[str]:
    declared = api.parameters(op)
    names = re.findall(r"\{([^}]+)\}", op.template)
    for param, value in zip(names, values, strict=True):
        schema = declared[("path", param)].get("schema", {})
        for text in api.errors(_coerce(value, schema), schema):
            yield f"path parameter {param}={value!r}: {text}"
    for key, value in call.query.items():
        param = declared.get(("query", key))
        if param is None:
            yield f"query parameter {key!r} is not one GitHub declares"
            continue
        schema = param.get("schema", {})
        for text in api.errors(_coerce(value, schema), schema):
            yield f"query parameter {key}={value!r}: {text}"
    headers = {k.lower(): v for k, v in call.headers.items()}
    accept = headers.get("accept", "")
    if _media(accept) not in JSON_MEDIA:
        yield f"Accept: {accept!r}; GitHub documents {JSON_MEDIA[0]}"
    version = headers.get("x-github-api-version")
    if version not in API_VERSIONS:
        yield f"X-GitHub-Api-Version: {version!r}; GitHub's are {', '.join(API_VERSIONS)}"
    body_spec = op.spec.get("requestBody")
    if body_spec is None:
        if call.body not in (None, {}):
            yield f"a body ({str(call.body)[:80]}) where the operation takes none"
        return
    content = api.resolve(body_spec).get("content", {})
    if call.body is None:
        if api.resolve(body_spec).get("required"):
            yield "no body where one is required"
        return
    sent = _media(headers.get("content-type", ""))
    if sent not in content:
        yield f"Content-Type {sent!r}; the operation takes {', '.join(content)}"
        return
    for text in api.errors(call.body, content[sent].get("schema", {})):
        yield f"request body: {text}"


def _reply_problems(api: Contract, op: Operation, call: StandInCall) -> Iterator[str]:
    responses = op.spec.get("responses", {})
    spec = responses.get(str(call.status))
    if spec is None and call.status >= 400:
        # The description lists the refusals GitHub documents per operation, not every one it
        # gives (a dispatch of a missing workflow is a 404 there too): an unlisted refusal must
        # be GitHub's generic error body.
        generic = "validation-error" if call.status == 422 else "basic-error"
        yield from api.errors(call.reply, {"$ref": f"{BASE}#/components/schemas/{generic}"})
        if not isinstance(call.reply, dict) or not isinstance(call.reply.get("message"), str):
            yield "a refusal without GitHub's `message`"
        return
    if spec is None:
        yield f"status {call.status} is not one the operation answers ({', '.join(responses)})"
        return
    content = api.resolve(spec).get("content")
    if not content:
        if call.reply is not None:
            yield f"a body where the description has none: {str(call.reply)[:80]}"
        return
    sent = _media(call.reply_headers.get("Content-Type", ""))
    if sent not in content:
        yield f"Content-Type {sent!r}; the description answers {', '.join(content)}"
        return
    yield from api.errors(call.reply, content[sent].get("schema", {}))
