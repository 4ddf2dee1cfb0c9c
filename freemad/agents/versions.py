"""The versions of an agent CLI its preset was tested on, and what to say when the installed one
is outside them or refuses one of the preset's flags (older CLIs lack flags the presets pass).

A preset records the version it was checked against (`Preset.tested`, the version
scripts/install-agent-clis.sh installs); it holds, by semantic versioning, up to the next
release that may break: the next major version, or for a 0.x CLI the next minor one."""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

from freemad.agents.presets import Preset

_NUMBER = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+)(?!\d)")
# How CLIs' argument parsers refuse an option they do not know: yargs (gemini, qwen, opencode),
# commander (claude, copilot), clap (codex), click (llm), argparse (aider).
_REFUSED = re.compile(
    r"unknown arguments?:\s*(?P<yargs>[\w, -]+)"
    r"|unknown option\s*'(?P<commander>-[\w-]+)'"
    r"|unexpected argument\s*'(?P<clap>-[\w-]+)'"
    r"|no such option:?\s*'?(?P<click>-[\w-]+)"
    r"|unrecognized arguments:\s*(?P<argparse>[^\n]+)",
    re.IGNORECASE,
)


def version_range(preset: Preset) -> tuple[Version, Version] | None:
    """[lowest, first untested) of the versions `preset` holds for; None when it records none."""
    if not preset.tested:
        return None
    low = Version(preset.tested)
    major, minor = low.release[0], (low.release[1:2] or (0,))[0]
    high = Version(f"{major + 1}") if major >= 1 else Version(f"0.{minor + 1}")
    return low, high


def version_warning(preset: Preset, program: str, answer: str) -> str:
    """One line when the version in `answer` (a `--version` line) is outside what `preset` was
    tested on, naming both; "" when inside, or when either is unknown."""
    found, number = version_range(preset), _NUMBER.search(answer)
    if found is None or number is None:
        return ""
    try:
        installed = Version(number.group(1))
    except InvalidVersion:
        return ""
    low, high = found
    tested = f"tested on {program} {preset.tested} (holds for >={low},<{high})"
    if installed < low:
        return (
            f"{program} {installed} is older than FREE-MAD's preset was {tested}: a flag the "
            f"preset passes may be unknown to it; upgrade it ({preset.install})"
        )
    if installed >= high:
        return (
            f"{program} {installed} is newer than FREE-MAD's preset was {tested}: if a call "
            "fails on a flag, pin the tested version or use `type: generic` with your own flags"
        )
    return ""


def preset_options(preset: Preset) -> set[str]:
    """Every option the preset passes, in any mode: `--safe-mode`, `-p`."""
    words = [*preset.flags, *(word for pair in preset.args for word in pair)]
    words += [word for flags in preset.mode_flags.values() for word in flags]
    return {word.split("=", 1)[0] for word in words if word.startswith("-")}


def refused_flag(preset: Preset, program: str, said: str) -> str:
    """One line when `said` (a failed call's stderr and stdout) is the CLI refusing an option
    the preset passes, naming the option and the tested version; "" otherwise."""
    known = preset_options(preset)
    for match in _REFUSED.finditer(said):
        named = next(group for group in match.groups() if group)
        for word in re.split(r"[\s,]+", named.strip()):
            option = word if word.startswith("-") else f"--{word}"
            if option in known:
                tested = f" (tested on {preset.tested})" if preset.tested else ""
                return (
                    f"the installed {program} does not know {option}, which FREE-MAD's preset "
                    f"passes{tested}: upgrade it ({preset.install})"
                )
    return ""
