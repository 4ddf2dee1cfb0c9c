"""Read a config from YAML or JSON; every mistake becomes one line naming file, line and key."""

from __future__ import annotations

import difflib
import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from freemad.config.legacy import LegacyNote, upgrade
from freemad.config.models import FreemadConfig, Loc, LocatedValueError
from freemad.errors import ConfigError

DEFAULT_CONFIG_NAME = "mock_agents.yaml"

_TYPE_NAMES = {
    list: "a list",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
}


Warn = Callable[[str], None]


def warn_on_stderr(line: str) -> None:
    """The default for a deprecation warning: one line on stderr, as the CLI's errors are."""
    sys.stderr.write(f"freemad: warning: {' '.join(line.split())}\n")
    sys.stderr.flush()


def load_config(path: str | Path, *, warn: Warn = warn_on_stderr) -> FreemadConfig:
    """Load and validate a config file; raise ConfigError with one clear line on any problem.
    The reference implementation's spellings are read as ours, each with one line to `warn`."""
    source = Path(path)
    try:
        raw = source.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {source}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {source}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{source} line {line}: not UTF-8 text") from None
    return parse_config(
        text, name=str(source), json_syntax=source.suffix.lower() == ".json", warn=warn
    )


def default_config() -> FreemadConfig:
    """The embedded default: mock agents that need no login and no network."""
    text = resources.files("freemad.config").joinpath(DEFAULT_CONFIG_NAME).read_text("utf-8")
    return parse_config(text, name=f"<built-in {DEFAULT_CONFIG_NAME}>")


def parse_config(
    text: str, *, name: str = "<config>", json_syntax: bool = False, warn: Warn = warn_on_stderr
) -> FreemadConfig:
    """Validate a config given as text; `name` is the file to blame in error messages."""
    data, lines = _parse_json(text, name) if json_syntax else _parse_yaml(text, name)
    if data is None:
        what = "is empty" if not text.strip() else "has no settings"
        raise ConfigError(f"{name}: the file {what}; a config needs at least an agents: section")
    if not isinstance(data, dict):
        kind = _TYPE_NAMES.get(type(data), type(data).__name__)
        raise ConfigError(
            f"{name} line {lines.get((), 1)}: the top level must be a mapping of sections "
            f"(agents:, topology:, ...), not {kind}"
        )
    data, notes = upgrade(data)
    for note in sorted(notes, key=lambda n: _nearest_line(n.loc, lines) or 0):
        warn(_legacy_line(note, name, lines))
        if note.read_as is not None and note.loc in lines:
            lines.setdefault(note.read_as, lines[note.loc])
    try:
        return FreemadConfig.model_validate(data)
    except ValidationError as exc:
        raise InvalidConfig(
            describe_validation_error(exc, name, lines, FreemadConfig),
            each_problem(exc, lines, FreemadConfig),
        ) from None


class InvalidConfig(ConfigError):
    """A config that parses but does not validate: its first problem as the message, and each
    problem as (line or None, `dotted.key: what is wrong`), for an editor to show at its line."""

    def __init__(self, message: str, problems: list[tuple[int | None, str]]) -> None:
        super().__init__(message)
        self.problems = problems


def each_problem(
    exc: ValidationError, lines: dict[Loc, int], model: type[BaseModel]
) -> list[tuple[int | None, str]]:
    """Every problem of `exc`, one per key, in the order `describe_validation_error` takes them."""
    by_loc: dict[Loc, list[ErrorDetails]] = {}
    ordered = sorted(exc.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
    for error in ordered:
        by_loc.setdefault(_user_loc(error), []).append(error)
    found = []
    for loc, errors in by_loc.items():
        key = _dotted(loc)
        found.append(
            (
                _nearest_line(loc, lines),
                f"{key + ': ' if key else ''}{_message(loc, errors, model)}",
            )
        )
    return found


def _legacy_line(note: LegacyNote, name: str, lines: dict[Loc, int]) -> str:
    line = _nearest_line(note.loc, lines)
    where = f"{name} line {line}" if line else name
    return f"{where}: {_dotted(note.loc)}: {note.message}"


def config_digest(config: FreemadConfig) -> str:
    """A stable fingerprint of the whole config (after defaults), for transcripts and caches."""
    canonical = json.dumps(config.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _parse_json(text: str, name: str) -> tuple[Any, dict[Loc, int]]:
    try:
        data = json.loads(text) if text.strip() else None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{name} line {exc.lineno}: invalid JSON: {exc.msg}") from None
    # JSON is (nearly) YAML: its node tree gives the lines of keys, and catches duplicate keys.
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return data, {}
    return data, _key_lines(node, name)


def _parse_yaml(text: str, name: str) -> tuple[Any, dict[Loc, int]]:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(f"{name}{_yaml_problem(exc)}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{name}: invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    return data, _key_lines(node, name)


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f" line {mark.line + 1}" if mark is not None else ""
    problem = exc.problem or exc.context or "cannot parse"
    context = ""
    if exc.problem and exc.context and exc.context_mark is not None:
        context = f" ({exc.context} that starts on line {exc.context_mark.line + 1})"
    return f"{where}: invalid YAML: {problem}{context}"


def _key_lines(node: yaml.Node | None, name: str) -> dict[Loc, int]:
    return dict(_node_lines(node, (), name)) if node is not None else {}


def _node_lines(node: yaml.Node, loc: Loc, name: str) -> Iterator[tuple[Loc, int]]:
    yield loc, node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        first_seen: dict[str, int] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                continue
            line = key.start_mark.line + 1
            child = (*loc, str(key.value))
            if key.value in first_seen:
                raise ConfigError(
                    f"{name} line {line}: {_dotted(child)}: duplicate key "
                    f"(first given on line {first_seen[key.value]})"
                )
            first_seen[key.value] = line
            yield child, line
            for sub_loc, sub_line in _node_lines(value, child, name):
                if sub_loc != child:
                    yield sub_loc, sub_line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _node_lines(item, (*loc, index), name)


def describe_validation_error(
    exc: ValidationError, name: str, lines: dict[Loc, int], model: type[BaseModel]
) -> str:
    """The first error as `file line N: dotted.key: what is wrong`, plus a count of the others."""
    by_loc: dict[Loc, list[ErrorDetails]] = {}
    # An unknown key first: a misspelt key is often why a required one looks missing.
    ordered = sorted(exc.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
    for error in ordered:
        by_loc.setdefault(_user_loc(error), []).append(error)
    loc, errors = next(iter(by_loc.items()))
    message = _message(loc, errors, model)
    line = _nearest_line(loc, lines)
    where = f"{name} line {line}" if line else name
    key = _dotted(loc)
    more = f" (and {len(by_loc) - 1} more problem(s))" if len(by_loc) > 1 else ""
    return f"{where}: {key + ': ' if key else ''}{message}{more}"


def _user_loc(error: ErrorDetails) -> Loc:
    loc = tuple(part for part in error["loc"] if not _is_union_tag(part))
    cause = (error.get("ctx") or {}).get("error")
    return (*loc, *cause.loc) if isinstance(cause, LocatedValueError) else loc


_FIXED_MESSAGES = {
    "missing": "required key is missing",
    "invalid_key": "keys must be strings",
    "model_type": "should be a mapping of keys",
    "model_attributes_type": "should be a mapping of keys",
    "dict_type": "should be a mapping of keys",
}


def _message(loc: Loc, errors: list[ErrorDetails], model: type[BaseModel]) -> str:
    first = errors[0]
    kind = first["type"]
    if kind == "extra_forbidden":
        return "unknown key" + _suggestion(loc, model)
    if kind == "value_error":
        return str(first["msg"]).removeprefix("Value error, ")
    got = "" if kind == "missing" else f" (got {_short(first.get('input'))})"
    if kind in _FIXED_MESSAGES:
        return _FIXED_MESSAGES[kind] + got
    # A union (say string | number | boolean) fails once per member; say it once.
    options = dict.fromkeys(_lower(str(e["msg"])).removeprefix("should be ") for e in errors)
    if len(options) > 1:
        return "should be " + " or ".join(options) + got
    return _lower(str(first["msg"])) + got


def _lower(message: str) -> str:
    message = message.removeprefix("Input ")
    return message[:1].lower() + message[1:]


def _is_union_tag(part: str | int) -> bool:
    # pydantic puts the union member's type name into the location; it means nothing to a user.
    return isinstance(part, str) and (part in {"str", "int", "float", "bool"} or "[" in part)


def _dotted(loc: Loc) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _nearest_line(loc: Loc, lines: dict[Loc, int]) -> int | None:
    for end in range(len(loc), 0, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _suggestion(loc: Loc, model: type[BaseModel]) -> str:
    """Walk the models along `loc` to the parent of the unknown key and suggest a close name."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part) if _is_model(current) else None
        if field is None:
            return ""
        current = _model_inside(field.annotation)
    if not _is_model(current):
        return ""
    known = list(current.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (expected one of: {', '.join(known)})"


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def _model_inside(annotation: Any) -> Any:
    if _is_model(annotation):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_inside(arg)
        if found is not None:
            return found
    return None
