"""Each preset records the CLI version it was tested on: `freemad --health` and `freemad agents`
warn when the installed one is outside it, and a call that the CLI refuses for a flag the
preset passes says which flag, instead of the usage text's last line. Real processes: a script
on PATH named as the CLI, answering as an older release of it does."""

from __future__ import annotations

import asyncio
import stat
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from freemad.agents.agent_port import CallRequest, CallStatus
from freemad.agents.presets import PRESETS
from freemad.agents.subprocess_agent import CliAgent
from freemad.agents.versions import preset_options, refused_flag, version_range, version_warning
from freemad.config.models import AgentConfig, AgentType, Mode
from tests.agents.test_failure_cause import YARGS
from tests.cli.helpers import BIN, freemad

QWEN = PRESETS[AgentType.QWEN_CODE]


@pytest.mark.parametrize("kind", [t for t in PRESETS if t is not AgentType.GENERIC])
def test_every_preset_records_the_version_it_was_tested_on(kind: AgentType) -> None:
    found = version_range(PRESETS[kind])
    assert found is not None
    low, high = found
    assert low == Version(PRESETS[kind].tested) and low < high
    # The next release that may break: the next major, or the next minor of a 0.x CLI.
    assert high.release[0] == low.release[0] + 1 if low.major else high.minor == low.minor + 1


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ("0.15.2", "qwen 0.15.2 is older than FREE-MAD's preset was tested on qwen 0.24.4"),
        ("v0.26.0", "qwen 0.26.0 is newer than FREE-MAD's preset was tested on qwen 0.24.4"),
        ("0.24.4", ""),
        ("0.24.11-nightly", ""),
        ("no number here", ""),
    ],
)
def test_a_version_outside_the_version_range_is_named_with_both(answer: str, says: str) -> None:
    warning = version_warning(QWEN, "qwen", answer)
    assert warning.startswith(says) if says else warning == ""
    if says:
        assert "(holds for >=0.24.4,<0.25)" in warning
    assert version_warning(PRESETS[AgentType.GENERIC], "tool", "0.0.1") == ""


# How each CLI's argument parser refuses an option it does not know, with a flag its preset
# passes in it (claude: commander, codex: clap, llm: click, aider: argparse, qwen: yargs).
@pytest.mark.parametrize(
    ("kind", "said", "flag"),
    [
        (AgentType.QWEN_CODE, YARGS, "--safe-mode"),
        (
            AgentType.CLAUDE_CODE,
            "error: unknown option '--no-session-persistence'\n",
            "--no-session-persistence",
        ),
        (
            AgentType.OPENAI_CODEX,
            "error: unexpected argument '--ephemeral' found\n\n",
            "--ephemeral",
        ),
        (
            AgentType.LLM,
            "Usage: llm prompt [OPTIONS]\nError: No such option: --no-log\n",
            "--no-log",
        ),
        (
            AgentType.AIDER,
            "aider: error: unrecognized arguments: --no-detect-urls\n",
            "--no-detect-urls",
        ),
    ],
)
def test_a_refused_preset_flag_is_named(kind: AgentType, said: str, flag: str) -> None:
    preset = PRESETS[kind]
    line = refused_flag(preset, "cli", said)
    assert flag in preset_options(preset)
    assert line.startswith(f"the installed cli does not know {flag}, which FREE-MAD's preset")
    assert f"(tested on {preset.tested})" in line and preset.install in line


def test_an_option_the_preset_does_not_pass_is_not_blamed_on_it() -> None:
    assert refused_flag(QWEN, "qwen", "Unknown arguments: frobnicate\n") == ""
    assert refused_flag(QWEN, "qwen", "Error: the model is offline\n") == ""


def old_qwen(folder: Path) -> Path:
    """A `qwen` that answers as 0.15.2 did: a version, and a usage text for --safe-mode."""
    program = folder / "qwen"
    program.write_text(
        f"#!{sys.executable}\nimport sys\n"
        "if sys.argv[1:] == ['--version']:\n    print('0.15.2'); sys.exit(0)\n"
        f"if '--safe-mode' in sys.argv:\n    sys.stderr.write({YARGS!r}); sys.exit(1)\n"
        "print('{}')\n"
    )
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


def test_an_old_cli_is_warned_of_and_its_refusal_explained(tmp_path: Path) -> None:
    program = old_qwen(tmp_path)
    config = AgentConfig(id="q", type=AgentType.QWEN_CODE, cli_command=str(program), timeout=30)
    agent = CliAgent(config, max_output_bytes=1 << 20, workdir=str(tmp_path))
    result = asyncio.run(agent.call(CallRequest(Mode.GENERATE, "hi", 30)))
    assert result.status is CallStatus.EXIT_ERROR
    assert result.detail.startswith(
        "exit status 1: the installed qwen does not know --safe-mode, which FREE-MAD's preset "
        "passes (tested on 0.24.4): upgrade it (npm install -g @qwen-code/qwen-code)"
    )
    # `freemad --health` and `freemad agents`, with this qwen first on PATH.
    (tmp_path / "freemad.yaml").write_text(
        "agents: [{id: q, type: qwen_code}]\nsecurity: {sandbox_agents: false}\n"
    )
    path = f"{tmp_path}:{BIN}:/usr/bin:/bin"
    health = freemad("--health", cwd=tmp_path, home=tmp_path, path=path)
    assert "0.15.2" in health.stdout
    assert (
        "! qwen 0.15.2 is older than FREE-MAD's preset was tested on qwen 0.24.4" in health.stdout
    )
    listed = freemad("agents", cwd=tmp_path, home=tmp_path, path=path)
    assert "version:   qwen 0.15.2 is older than" in listed.stdout
    assert (
        '"warning": "qwen 0.15.2 is older'
        in freemad("agents", "--json", cwd=tmp_path, home=tmp_path, path=path).stdout
    )
