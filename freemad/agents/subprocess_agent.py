"""The real agent adapter: run a CLI without a shell, prompt on stdin, and never let it outlive the call."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from freemad.agents.agent_port import CallRequest, CallResult, CallStatus
from freemad.agents.first_use import alone_on_first_use, first_use_file
from freemad.agents.invocation import (
    CommandNotFound,
    anchor_command_paths,
    build_argv,
    option_words,
    resolve_program,
)
from freemad.agents.outputs import cause_line
from freemad.agents.presets import NOT_LOGGED_IN, extract, extract_error, preset_of
from freemad.agents.versions import refused_flag
from freemad.config.models import AgentConfig, Mode
from freemad.redact import argv_for_log
from freemad.sandbox import Sandbox, SandboxUnavailable, View, reaper
from freemad.sandbox.host import guard
from freemad.sandbox.process import freemad_secret

log = logging.getLogger(__name__)
_STDERR_TAIL = 4096
# How model servers and CLIs say a prompt is past the model's context: llama.cpp ("Requested
# tokens (1350) exceed context window of 512"), OpenAI ("maximum context length is 8192
# tokens"), Anthropic ("prompt is too long"), Ollama and others ("context length exceeded").
CONTEXT_EXCEEDED = re.compile(
    r"exceeds? (?:the )?context window|maximum context length|context length exceeded|"
    r"prompt is too long|context_length_exceeded|too many tokens",
    re.IGNORECASE,
)
# Once the agent has exited, how long its leftover children may keep our pipes open.
_EXIT_GRACE = 0.2
# A killed agent is normally reaped within milliseconds; never wait longer than this for it.
_REAP_WAIT = 5.0


def agent_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment an agent runs with: this process's, less FREE-MAD's own credentials."""
    return {k: v for k, v in environ.items() if not freemad_secret(k)}


class CliAgent:
    """One agent CLI. Each call starts a fresh process in its own session (process group).

    Calls run in `workdir`, or else in a fresh empty temporary folder, so that an agent CLI picks
    up no project instructions (CLAUDE.md, AGENTS.md, GEMINI.md) from wherever FREE-MAD was started.
    With a `sandbox`, each call runs in its agent profile, seeing `view` (its workdir writable);
    without one it still dies with FREE-MAD (`freemad.sandbox.reaper`).
    """

    def __init__(
        self,
        config: AgentConfig,
        *,
        max_output_bytes: int,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        sandbox: Sandbox | None = None,
        view: View | None = None,
    ) -> None:
        self.config = config
        self.workdir = workdir
        self.sandbox = sandbox
        self.view = view
        self._argv: dict[Mode, list[str]] = {}
        self.max_output_bytes = max_output_bytes
        self.preset = preset_of(config)
        self.started_in = Path.cwd()  # where relative paths in the command were written for
        self.env = agent_environment(os.environ if env is None else env)
        # Agents print for a pipe, not a terminal: no colours, no pagers, no spinners.
        for key, value in (("NO_COLOR", "1"), ("TERM", "dumb"), *self.preset.env):
            self.env.setdefault(key, value)
        self._marked: dict[bytes, bytes] = {}
        self._login: CallResult | None = None
        self._login_checked = False

    @property
    def agent_id(self) -> str:
        return self.config.id

    async def call(self, request: CallRequest) -> CallResult:
        refused = await self._check_login(request.time_limit)
        if refused is not None:
            return refused
        argv = self._argv.get(request.mode)
        if argv is None:
            # A path that names a file in the workdir (evolve's worktree) means that file; one
            # only where FREE-MAD started (a debate agent's folder is empty) is made absolute.
            argv = anchor_command_paths(
                build_argv(self.config, request.mode),
                len(self.config.command_words),
                self.started_in,
                Path(self.workdir) if self.workdir is not None else None,
            )
            self._argv[request.mode] = argv
        async with alone_on_first_use(first_use_file(self.preset, self.env)):
            if self.workdir is not None:
                return await self._run(
                    argv, request.prompt.encode(), request.time_limit, self.workdir
                )
            with tempfile.TemporaryDirectory(prefix="freemad-agent-") as workdir:
                return await self._run(argv, request.prompt.encode(), request.time_limit, workdir)

    async def _check_login(self, time_limit: float) -> CallResult | None:
        """Ask the CLI whether it is logged in, once, where it has a quick way to say so.

        `codex exec` without a login does not fail: it waits for the network. `codex login status`
        answers in a tenth of a second. aider with neither a model nor a key waits minutes for a
        browser login; `aider --exit` says so in a second. A key in the environment counts as a
        login.
        """
        preset = self.preset
        if self._login_checked or not preset.login_check:
            return self._login
        self._login_checked = True
        if any(self.env.get(name) for name in preset.login_env):
            return None
        argv = [self.config.command_words[0], *preset.login_check]
        if preset.login_check_args:  # aider's model decides whether it needs a login
            argv += option_words(self.config)
        stdin = preset.login_check_stdin
        with tempfile.TemporaryDirectory(prefix="freemad-agent-") as workdir:
            check = await self._run(
                argv, stdin, min(time_limit, 30.0), workdir, extract_output=False
            )
        if check.status is CallStatus.OK:
            return None
        if check.status in {CallStatus.EXIT_ERROR, CallStatus.NOT_LOGGED_IN}:
            asked = " ".join(argv[:3]) + (" ..." if len(argv) > 3 else "")
            detail = f"`{asked}` says: {check.detail.split(': ', 1)[-1]}"
            self._login = replace(check, status=CallStatus.NOT_LOGGED_IN, detail=detail)
        return self._login

    async def _run(
        self,
        argv: list[str],
        prompt: bytes,
        time_limit: float,
        workdir: str,
        *,
        extract_output: bool = True,
    ) -> CallResult:
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        run = _Run(loop, self.max_output_bytes)
        try:
            argv = [resolve_program(argv[0], self.env.get("PATH")), *argv[1:]]
            command = self._wrapped(argv, workdir)
            # The prompt is never logged: it goes on stdin, and may hold anything. The argv is
            # redacted only when someone reads it: that costs more than the rest of a call's logs.
            if log.isEnabledFor(logging.INFO):
                log.info(
                    "agent %s: runs %s (in %s; the prompt, %d bytes, on stdin)",
                    self.config.id,
                    argv_for_log(argv),
                    workdir,
                    len(prompt),
                )
            if command != argv and log.isEnabledFor(logging.DEBUG):
                log.debug("agent %s: wrapped as %s", self.config.id, argv_for_log(command))
            transport, _ = await loop.subprocess_exec(
                lambda: run,
                *command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._marked_env(),
                cwd=workdir,
                start_new_session=True,
            )
            reaper.watch(transport.get_pid())
        except (CommandNotFound, OSError, SandboxUnavailable) as exc:
            log.info("agent %s: cannot start %s: %s", self.config.id, argv[0], exc)
            return CallResult(
                CallStatus.SPAWN_ERROR, detail=f"cannot start {argv[0]}: {exc}", argv=tuple(argv)
            )
        try:
            await _within(run.communicate(prompt), time_limit)
        except asyncio.TimeoutError:
            run.timed_out = True
        finally:
            # Also on cancellation: the whole process group goes, children included, and the
            # agent is reaped before we return, so no zombie outlives the call.
            _kill_group(transport.get_pid())
            reaper.forget(transport.get_pid())
            transport.close()
            await run.reaped()
        output = self.preset.output if extract_output else "text"
        result = self._result(run, argv, time.monotonic() - started, time_limit, output)
        log.info(
            "agent %s: %s after %.1fs (exit status %s, %d bytes out)%s",
            self.config.id,
            result.status.value,
            result.duration,
            result.exit_code,
            len(run.stdout),
            f": {result.detail}" if result.detail else "",
        )
        return result

    def _marked_env(self) -> dict[bytes, bytes]:
        """The agent's environment with this process's reaper mark (its children inherit it),
        encoded once: `subprocess` would encode every variable again for every call."""
        name, token = reaper.mark()
        key, value = os.fsencode(name), os.fsencode(token)
        if self._marked.get(key) != value:
            env = {**self.env, name: token}
            self._marked = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
        return self._marked

    def _wrapped(self, argv: list[str], workdir: str) -> list[str]:
        """The command line that runs `argv`: in the sandbox's agent profile, or on the host."""
        if self.sandbox is None:
            return [*guard(), *argv]
        view = self.view or View()
        view = View.of([Path(workdir), *view.writable], view.read_only, view.hidden)
        return self.sandbox.agent_argv(argv, Path(workdir), view, self.preset.home)

    def _result(
        self, run: _Run, argv: list[str], duration: float, limit: float, output: str
    ) -> CallResult:
        stdout = _decode(bytes(run.stdout))
        stderr = _decode(bytes(run.stderr))[-_STDERR_TAIL:]
        base = CallResult(
            CallStatus.OK,
            stdout,
            stderr_tail=stderr,
            exit_code=run.returncode,
            duration=duration,
            argv=tuple(argv),
        )
        if run.timed_out:
            return replace(
                base, status=CallStatus.TIMEOUT, detail=f"no answer within {limit:.1f}s; killed"
            )
        if run.too_large:
            detail = f"printed more than {self.max_output_bytes} bytes; killed"
            return replace(base, status=CallStatus.OUTPUT_TOO_LARGE, text="", detail=detail)
        found = extract(output, stdout)
        if run.returncode == 0 and found.error is None:
            return replace(
                base,
                text=found.text,
                input_tokens=found.input_tokens,
                output_tokens=found.output_tokens,
            )
        error = found.error or extract_error(output, stderr)
        login = _matching_line(NOT_LOGGED_IN, error or "", stderr, stdout[-8192:])
        status = CallStatus.NOT_LOGGED_IN if login else CallStatus.EXIT_ERROR
        if not login and _matching_line(CONTEXT_EXCEEDED, error or "", stderr):
            status = CallStatus.CONTEXT_EXCEEDED
        # An older CLI refuses a flag the preset passes, in a usage text: say which and why.
        program = Path(self.config.command_words[0]).name
        said = f"{stderr}\n{stdout[-8192:]}"
        refused = "" if login else refused_flag(self.preset, program, said)
        # CLIs print warnings before their real message and the cause after a traceback or a
        # usage text: the line that says "log in", else the last one that names an error.
        reason = (
            login or refused or error or cause_line(stderr) or cause_line(stdout) or "no output"
        )
        return replace(
            base,
            status=status,
            input_tokens=found.input_tokens,
            output_tokens=found.output_tokens,
            detail=f"exit status {run.returncode}: {_first_line(reason)}",
        )


class _Run(asyncio.SubprocessProtocol):
    """One running agent: its output as it arrives (stdout capped, stderr's tail) and its exit."""

    def __init__(self, loop: asyncio.AbstractEventLoop, cap: int) -> None:
        self.cap = cap
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.returncode: int | None = None
        self.timed_out = False
        self.too_large = False
        self.transport: asyncio.SubprocessTransport | None = None
        self._exited = loop.create_future()
        self._stdout_closed = loop.create_future()
        self._overflow = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            if len(self.stdout) + len(data) > self.cap:
                self.too_large = True
                _resolve(self._overflow)
            elif not self.too_large:
                self.stdout += data
        elif fd == 2:
            self.stderr += data
            if len(self.stderr) > 4 * _STDERR_TAIL:
                del self.stderr[: len(self.stderr) - _STDERR_TAIL]

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            _resolve(self._stdout_closed)

    def process_exited(self) -> None:
        assert self.transport is not None
        self.returncode = self.transport.get_returncode()
        _resolve(self._exited)

    async def communicate(self, prompt: bytes) -> None:
        assert self.transport is not None
        stdin = self.transport.get_pipe_transport(0)
        if isinstance(stdin, asyncio.WriteTransport):
            # Buffered by the loop; an agent that exits without reading it is not our failure.
            stdin.write(prompt)
            stdin.write_eof()
        await asyncio.wait({self._exited, self._overflow}, return_when=asyncio.FIRST_COMPLETED)
        if self.too_large:
            return
        # Leftover children may hold stdout open; they get a moment before the group is killed.
        if not self._stdout_closed.done():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._stdout_closed), _EXIT_GRACE)

    async def reaped(self) -> None:
        if not self._exited.done():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._exited), _REAP_WAIT)


if sys.version_info >= (3, 11):

    async def _within(work: Coroutine[Any, Any, None], limit: float) -> None:
        """Await `work`, cancelled with TimeoutError after `limit` seconds, in the caller's task
        (`asyncio.wait_for` runs it in a task of its own: one more per agent call)."""
        async with asyncio.timeout(limit):
            await work

else:  # pragma: no cover - Python 3.10

    async def _within(work: Coroutine[Any, Any, None], limit: float) -> None:
        await asyncio.wait_for(work, limit)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace").replace("\x00", "")


def _matching_line(pattern: re.Pattern[str], *texts: str) -> str:
    for text in texts:
        for line in text.splitlines():
            if pattern.search(line):
                return line.strip()[:300]
    return ""


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""
