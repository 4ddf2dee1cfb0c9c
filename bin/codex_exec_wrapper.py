#!/usr/bin/env python3
"""Run `codex exec` in JSON event mode and print only the final agent message, as plain text.

Usage: codex_exec_wrapper.py [generate|critique|task] [CODEX EXEC OPTION ...] < prompt

For a `generic` agent that wants a plain-text CLI (the `openai_codex` preset does the same work
inside FREE-MAD). The argv is the preset's (see docs/agents.md): `codex exec --disable shell_tool
--skip-git-repo-check --ephemeral --sandbox read-only --color never --disable
unbounded_connection_retries --json`, then any options given here (e.g. `-m gpt-5.5`), then `-`
(the prompt is read on stdin). In task mode the shell tool stays on, as in the preset.

`codex exec` without a login does not fail, it waits for the network; so unless CODEX_API_KEY or
OPENAI_API_KEY is set, `codex login status` is asked first and a "Not logged in" ends the run.
On success the answer goes to stdout; on failure codex's message goes to stderr and its exit
status is passed through (1 when codex exits 0 but reports a failed turn). CODEX_BIN names
another codex executable.
"""

from __future__ import annotations

import os
import subprocess
import sys

from freemad.agents.invocation import build_argv
from freemad.agents.presets import preset_for
from freemad.agents.wrapping import print_answer, split_mode
from freemad.config.models import AgentConfig, AgentType

PROG = "codex_exec_wrapper"
LOGIN_CHECK_SECONDS = 30


def main(argv: list[str] | None = None) -> int:
    mode, args = split_mode(sys.argv[1:] if argv is None else argv)
    agent = AgentConfig(id="codex", type=AgentType.OPENAI_CODEX)
    preset = preset_for(agent.type)
    words = build_argv(agent, mode)
    # Options given here go before the positional `-`.
    cut = len(words) - len(preset.positional)
    command = [*words[:cut], *args, *words[cut:]]
    command[0] = os.environ.get("CODEX_BIN", command[0])
    try:
        if not any(os.environ.get(name) for name in preset.login_env):
            refused = _login_refused([command[0], *preset.login_check])
            if refused is not None:
                return refused
        # stdin is inherited (codex reads the prompt from ours), and so is stderr (its log).
        done = subprocess.run(command, stdout=subprocess.PIPE, check=False)
    except OSError as exc:
        print(f"{PROG}: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    return print_answer(PROG, "codex", preset.output, done)


def _login_refused(check: list[str]) -> int | None:
    """The exit status to end with when `codex login status` says no, else None."""
    try:
        done = subprocess.run(
            check,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=LOGIN_CHECK_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None  # No answer is not a "no": let exec try, under the caller's time limit.
    if done.returncode == 0:
        return None
    said = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
    print(
        f"{PROG}: {' '.join(check)} exited {done.returncode}: "
        f"{said[-1] if said else 'no message'}; run `codex login` or set CODEX_API_KEY",
        file=sys.stderr,
    )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
