"""Which config a command uses, and where its state lives.

`--config FILE` wins, then `FREEMAD_CONFIG`, then the first `freemad.yaml`, `.freemad.yaml`,
`freemad.json` or `pyproject.toml` with a `[tool.freemad]` table found from the current folder
upward (up to the home folder or the file system's root), then the built-in mock agents.
`builtin:NAME` names one of the example configs shipped with FREE-MAD.

One rule for state: relative paths in a config (stores, transcripts, cache, log file, worktrees,
templates, the evolve repository) resolve against the config file's folder; for the built-in
config, against the current folder.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from freemad.bundled import bundled
from freemad.config.load import default_config, describe_validation_error, load_config
from freemad.config.models import FreemadConfig
from freemad.errors import ConfigError

CONFIG_NAMES = ("freemad.yaml", ".freemad.yaml", "freemad.json")
PYPROJECT = "pyproject.toml"
BUILTIN = "builtin:"
ENV_VAR = "FREEMAD_CONFIG"


@dataclass(frozen=True)
class ConfigSource:
    """Where a command's config came from."""

    path: Path | None  # the file; None for the built-in default
    shown: str  # as messages name it
    base: Path  # the folder the config's relative paths (its state) resolve against
    explicit: bool  # named by --config or FREEMAD_CONFIG, not found by looking
    table: bool = False  # [tool.freemad] in pyproject.toml

    @property
    def builtin(self) -> bool:
        return self.path is None or self.shown.startswith(BUILTIN)


@dataclass(frozen=True)
class LoadedConfig:
    config: FreemadConfig  # with every relative path resolved (see resolve_paths)
    source: ConfigSource

    def config_arg(self, cwd: Path | None = None) -> str:
        """What a command printed for the user to copy needs, so it finds this config again:
        ` --config PATH` when the config was named and looking from `cwd` would not find it."""
        source = self.source
        if not source.explicit:
            return ""
        if source.shown.startswith(BUILTIN):
            return f" --config {source.shown}"
        assert source.path is not None
        here = Path.cwd() if cwd is None else cwd
        found = discover(here)
        if found is not None and _same(found, source.path):
            return ""
        return f" --config {_quoted(str(source.path.resolve()))}"


def find_config(
    given: str | None, *, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> ConfigSource:
    """The config a command uses (nothing is read yet but the folders looked through)."""
    here = Path.cwd() if cwd is None else cwd
    environ = os.environ if env is None else env
    named = given or environ.get(ENV_VAR) or None
    if named is not None:
        if named.startswith(BUILTIN):
            return ConfigSource(builtin_path(named), named, here, explicit=True)
        path = Path(named)
        absolute = path if path.is_absolute() else here / path
        return ConfigSource(path, named, _folder(absolute), explicit=True)
    found = discover(here)
    if found is None:
        return ConfigSource(None, "<built-in mock agents>", here, explicit=False)
    return ConfigSource(
        found, _shown(found, here), found.parent, explicit=False, table=found.name == PYPROJECT
    )


def discover(start: Path) -> Path | None:
    """The first config file from `start` upward; the search ends at the home folder (looked
    in too) or the root. A pyproject.toml counts only with a [tool.freemad] table."""
    home = _home()
    folder = start.absolute()
    while True:
        for name in CONFIG_NAMES:
            candidate = folder / name
            if candidate.is_file():
                return candidate
        pyproject = folder / PYPROJECT
        if pyproject.is_file() and _has_table(pyproject):
            return pyproject
        if folder.parent == folder or (home is not None and folder == home):
            return None
        folder = folder.parent


def load(given: str | None, *, cwd: Path | None = None) -> LoadedConfig:
    """Find, read and validate the config, with its relative paths resolved."""
    here = Path.cwd() if cwd is None else cwd
    source = find_config(given, cwd=here)
    if source.path is None:
        config = default_config()
    elif source.table:
        config = _load_table(source.path, source.shown)
    else:
        path = source.path
        if not path.is_absolute() and not _same(here, Path.cwd()):
            path = here / path
        config = load_config(path)  # named as given, when that names it from here
    return LoadedConfig(resolve_paths(config, source.base, here), source)


def builtin_path(name: str) -> Path:
    """`builtin:NAME`: the example config NAME (configs/NAME.yaml or .json) shipped with FREE-MAD."""
    stem = name.removeprefix(BUILTIN)
    folder = bundled("configs")
    known = sorted(p.stem for p in folder.iterdir() if p.suffix in (".yaml", ".json"))
    for suffix in (".yaml", ".json"):
        path = folder / f"{stem}{suffix}"
        if stem and "/" not in stem and path.is_file():
            return path
    raise ConfigError(
        f"no built-in config {stem!r}; built-in configs: "
        + ", ".join(f"{BUILTIN}{k}" for k in known)
    )


def resolve_paths(config: FreemadConfig, base: Path, cwd: Path) -> FreemadConfig:
    """The config with its relative paths taken from `base`. When `base` is the current folder
    they stay as written (so messages show them as the user wrote them); else absolute."""
    if _same(base, cwd):
        return config

    def at(path: str) -> str:
        return path if os.path.isabs(path) else os.path.normpath(base.absolute() / path)

    def maybe(path: str | None) -> str | None:
        return None if path is None else at(path)

    task = config.task
    update: dict[str, Any] = {
        "output": config.output.model_copy(
            update={"transcript_dir": at(config.output.transcript_dir)}
        ),
        "cache": config.cache.model_copy(update={"dir": at(config.cache.dir)}),
        "logging": config.logging.model_copy(update={"file": maybe(config.logging.file)}),
        "debate": config.debate.model_copy(
            update={"templates_dir": maybe(config.debate.templates_dir)}
        ),
        "task": task.model_copy(
            update={
                "store_path": at(task.store_path),
                "artifacts_dir": at(task.artifacts_dir),
                "worktrees_dir": maybe(task.worktrees_dir),
            }
        ),
    }
    if config.evolve is not None:
        update["evolve"] = config.evolve.resolved(base)
    return config.model_copy(update=update)


def state_paths(config: FreemadConfig) -> dict[str, str | None]:
    """Where a config (loaded by `load`, so already resolved) keeps its runs: what `site build`
    and `freemad-dashboard` read when no source is named."""
    return {
        "transcripts": config.output.transcript_dir,
        "task_store": config.task.store_path,
        "evolve_store": config.evolve.store_path if config.evolve is not None else None,
    }


def beside_named(
    config: FreemadConfig,
    transcripts: str | None,
    task_store: str | None,
    evolve_store: str | None,
) -> tuple[str | None, str | None, str | None]:
    """The sources a dashboard serves beside those named on its command line: each one not
    named is where `config` keeps it, where that exists (`site build` and `freemad-dashboard`
    alike, so both show the same runs)."""
    defaults = state_paths(config)
    found = {k: v if v is not None and Path(v).exists() else None for k, v in defaults.items()}
    return (
        transcripts or found["transcripts"],
        task_store or found["task_store"],
        evolve_store or found["evolve_store"],
    )


def _load_table(path: Path, shown: str) -> FreemadConfig:
    data = _freemad_table(path)
    name = f"{shown} [tool.freemad]"
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{name}: the table has no settings; a config needs at least agents")
    try:
        return FreemadConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, name, {}, FreemadConfig)) from None


def _has_table(path: Path) -> bool:
    """A pyproject.toml that cannot be read is another tool's business, not a config of ours."""
    try:
        return _freemad_table(path) is not None
    except ConfigError:
        return False


def _freemad_table(path: Path) -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it as TOML: {exc}") from None
    tool = data.get("tool")
    return tool.get("freemad") if isinstance(tool, dict) else None


def _folder(path: Path) -> Path:
    return Path(os.path.normpath(path)).parent


def _home() -> Path | None:
    try:
        return Path.home().absolute()
    except RuntimeError:  # no HOME and no passwd entry
        return None


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _shown(found: Path, cwd: Path) -> str:
    try:
        return str(found.relative_to(cwd.absolute()))
    except ValueError:
        return str(found)


def _quoted(text: str) -> str:
    return shlex.quote(text)


__all__ = [
    "BUILTIN",
    "CONFIG_NAMES",
    "ConfigSource",
    "LoadedConfig",
    "builtin_path",
    "discover",
    "find_config",
    "load",
    "resolve_paths",
    "state_paths",
]
