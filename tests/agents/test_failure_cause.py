"""A failed agent CLI says why in one line: the cause its output ends with, not its first line
(a traceback's header, a logo, a usage text). Real processes where a process is the point."""

from __future__ import annotations

import asyncio
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freemad.agents.agent_port import CallRequest, CallStatus
from freemad.agents.outputs import cause_line
from freemad.agents.subprocess_agent import CliAgent
from freemad.config.models import AgentConfig, Mode

TRACEBACK = """Traceback (most recent call last):
  File "/tmp/clone/.venv/bin/freemad-evolve-mock", line 5, in <module>
    from freemad.agents.evolve_mock import main
ModuleNotFoundError: No module named 'freemad.agents'
"""
# yargs (opencode, qwen): a logo drawn in block characters, the usage, then the cause.
YARGS = (
    "\x1b[90m▄\x1b[0m \x1b[1m█▀▀█\x1b[0m\n▄▄▄▄\n\nqwen [options]\n\nOptions:\n"
    "  -m, --model  Model  [string]\n  --help  Show help  [boolean]\n\n"
    "Unknown arguments: safe-mode, safeMode\n"
)
NODE = (
    "/usr/lib/node_modules/x/cli.js:3\n  throw new Error('config.json is not valid');\n  ^\n\n"
    "Error: config.json is not valid\n    at Object.<anonymous> (/usr/lib/node_modules/x/cli.js:3:9)\n"
    "    at Module._compile (node:internal/modules/cjs/loader:1256:14)\n\nNode.js v20.20.2\n"
)
CLICK = "Usage: tool [OPTIONS]\nTry 'tool --help' for help.\n\nError: No such option: --safe-mode\n"


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        (TRACEBACK, "ModuleNotFoundError: No module named 'freemad.agents'"),
        (YARGS, "Unknown arguments: safe-mode, safeMode"),
        (NODE, "Error: config.json is not valid"),
        (CLICK, "Error: No such option: --safe-mode"),
        ("warming up\nall done, bye\n", "all done, bye"),  # no error word: the last line
        ("▄▄▄\n\n  ^\n", ""),  # nothing a person could read
        ("", ""),
        ("  spaced   out   error  \n", "spaced out error"),
    ],
)
def test_the_cause_is_the_last_line_that_names_an_error(text: str, cause: str) -> None:
    assert cause_line(text) == cause


@given(st.text(max_size=2000))
def test_a_cause_is_one_bounded_line_of_what_was_said(text: str) -> None:
    cause = cause_line(text)
    assert "\n" not in cause and "\r" not in cause and len(cause) <= 300
    assert "\x1b" not in cause
    if cause:
        assert any(c.isalpha() for c in cause)


def crashing_agent(folder: Path, body: str) -> CliAgent:
    program = folder / "crash.py"
    program.write_text(f"#!{sys.executable}\n{body}\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    config = AgentConfig(id="a", cli_command=str(program), timeout=30)
    return CliAgent(config, max_output_bytes=1 << 20, workdir=str(folder))


def test_a_python_agent_that_crashes_is_summarised_by_its_exception(tmp_path: Path) -> None:
    agent = crashing_agent(tmp_path, "import sys\nimport no_such_module_here\n")
    result = asyncio.run(agent.call(CallRequest(Mode.GENERATE, "hi", 30)))
    assert result.status is CallStatus.EXIT_ERROR
    assert result.detail == (
        "exit status 1: ModuleNotFoundError: No module named 'no_such_module_here'"
    )


def test_a_cli_that_prints_its_usage_is_summarised_by_the_line_after_it(tmp_path: Path) -> None:
    body = f"import sys\nsys.stderr.write({YARGS!r})\nsys.exit(1)\n"
    result = asyncio.run(crashing_agent(tmp_path, body).call(CallRequest(Mode.GENERATE, "", 30)))
    assert result.detail == "exit status 1: Unknown arguments: safe-mode, safeMode"


@pytest.mark.parametrize(
    "said",
    [
        "Error: Requested tokens (1350) exceed context window of 512",
        "Error: This model's maximum context length is 8192 tokens.",
        "API Error: 400 prompt is too long: 210000 tokens > 200000 maximum",
    ],
)
def test_a_prompt_past_the_models_context_is_classified_as_such(tmp_path: Path, said: str) -> None:
    body = f"import sys\nsys.stderr.write('warming up\\n' + {said!r} + '\\n')\nsys.exit(1)\n"
    result = asyncio.run(crashing_agent(tmp_path, body).call(CallRequest(Mode.GENERATE, "", 30)))
    assert result.status is CallStatus.CONTEXT_EXCEEDED
    assert result.detail == f"exit status 1: {said}"
