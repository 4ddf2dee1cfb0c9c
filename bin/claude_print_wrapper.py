#!/usr/bin/env python3
"""Run claude in print mode with tools off and print only its final answer, as plain text.

Usage: claude_print_wrapper.py [generate|critique|task] [CLAUDE OPTION ...] < prompt

For a `generic` agent that wants a plain-text CLI (the `claude_code` preset does the same work
inside FREE-MAD). The argv is the preset's (see docs/agents.md): `claude --tools "" --max-turns 1
-p --output-format json --no-session-persistence`, then any options given here, e.g.
`--model sonnet`. In task mode tools stay on, as in the preset. The prompt is read on stdin.
On success the answer goes to stdout; on failure claude's message goes to stderr and claude's
exit status is passed through (1 when claude exits 0 but reports an error). CLAUDE_BIN names
another claude executable.
"""

from __future__ import annotations

import os
import subprocess
import sys

from freemad.agents.invocation import build_argv
from freemad.agents.presets import preset_for
from freemad.agents.wrapping import print_answer, split_mode
from freemad.config.models import AgentConfig, AgentType

PROG = "claude_print_wrapper"


def main(argv: list[str] | None = None) -> int:
    mode, args = split_mode(sys.argv[1:] if argv is None else argv)
    agent = AgentConfig(id="claude", type=AgentType.CLAUDE_CODE)
    preset = preset_for(agent.type)
    command = [*build_argv(agent, mode), *args]
    command[0] = os.environ.get("CLAUDE_BIN", command[0])
    # The preset's environment (no telemetry) unless the caller chose otherwise.
    env = {**dict(preset.env), **os.environ}
    try:
        # stdin is inherited: claude reads the prompt straight from ours.
        done = subprocess.run(command, stdout=subprocess.PIPE, env=env, check=False)
    except OSError as exc:
        print(f"{PROG}: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    return print_answer(PROG, "claude", preset.output, done)


if __name__ == "__main__":
    sys.exit(main())
