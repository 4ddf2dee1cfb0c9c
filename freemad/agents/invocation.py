"""How an agent config becomes an argv: command words, mode, mode flags, flags, args, positionals."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from freemad.agents.presets import preset_of
from freemad.config.models import AgentConfig, ArgValue, Mode


class CommandNotFound(LookupError):
    """The agent's program is not on PATH (nor beside the running Python)."""


def build_argv(agent: AgentConfig, mode: Mode) -> list[str]:
    """The argv for one call, never a shell line. The program is left as configured (see resolve)."""
    preset = preset_of(agent)
    flags = agent.cli_flags if agent.cli_flags is not None else list(preset.flags)
    positional = (
        agent.cli_positional if agent.cli_positional is not None else list(preset.positional)
    )
    mode_flags = agent.cli_mode_flags.get(mode)
    if mode_flags is None:
        mode_flags = list(preset.mode_flags.get(mode.value, ()))
    argv = list(agent.command_words)
    if agent.cli_mode_arg:
        argv.append(mode.value)
    argv += mode_flags
    argv += flags
    argv += option_words(agent)
    argv += model_option_words(agent)
    argv += positional
    return argv


def model_option_words(agent: AgentConfig) -> list[str]:
    """The model options the agent sets (`config:`), where its preset passes them: each as
    `FLAG NAME VALUE`, in the order the options are declared."""
    flag = preset_of(agent).option_flag
    if not flag:
        return []
    chosen = agent.config.model_dump(exclude_none=True)
    return [word for name, value in chosen.items() for word in (flag, name, str(value))]


def option_words(agent: AgentConfig) -> list[str]:
    """The agent's options (`cli_args`, or its preset's) as words: `{model: m}` is `--model m`."""
    args = agent.cli_args if agent.cli_args is not None else dict(preset_of(agent).args)
    words: list[str] = []
    for key, value in args.items():
        words += _arg_words(key, value)
    return words


def anchor_command_paths(
    argv: list[str], words: int, base: Path, workdir: Path | None = None
) -> list[str]:
    """`argv` with each relative path among its first `words` words (the command's own, as in
    `python bin/mock_agent.py`) made absolute against `base`, where it names an existing file
    there and none in `workdir`: the path was written for the folder FREE-MAD starts in, and
    agents run in a folder of their own."""
    out = list(argv)
    for index, word in enumerate(out[:words]):
        if "/" not in word or word.startswith(("/", "-", "~")):
            continue
        if (base / word).exists() and not (workdir is not None and (workdir / word).exists()):
            out[index] = str(base / word)
    return out


def _arg_words(key: str, value: ArgValue) -> list[str]:
    option = key if key.startswith("-") else f"--{key}"
    if value is True:
        return [option]
    if value is False:
        return []
    return [option, str(value)]


# Programs found on a PATH, by (program, PATH, interpreter): every agent call resolves its
# program, and searching PATH each time is measurable at 100 agents. Only absolute finds are kept;
# a program not found is searched again, so installing it mid-run works.
_FOUND: dict[tuple[str, str, str], str] = {}


def resolve_program(program: str, path: str | None = None) -> str:
    """Find the program on `path` (default: PATH), or beside the running interpreter (a
    virtualenv's bin/)."""
    if "/" in program:
        if Path(program).is_file():
            return program
        raise CommandNotFound(f"{program} does not exist")
    key = (program, str(path if path is not None else os.environ.get("PATH")), sys.executable)
    known = _FOUND.get(key)
    if known is not None:
        return known
    found = _search(program, path)
    if os.path.isabs(found):
        _FOUND[key] = found
    return found


def _search(program: str, path: str | None) -> str:
    found = shutil.which(program, path=path)
    if found:
        return found
    beside = Path(sys.executable).parent / program
    if beside.is_file():
        return str(beside)
    raise CommandNotFound(f"{program!r} is not on PATH")
