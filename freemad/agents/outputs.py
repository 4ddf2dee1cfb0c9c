"""Reading each agent CLI's stdout: the final message, the token usage where it says, its error.

One function per output format a preset names (`Preset.output`); the samples each was written
against are in tests/agents/samples.py, taken from the published CLIs (docs/agents.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Extracted:
    """The agent's final message and token usage when the CLI reports them, or the CLI's error."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None


def extract(output_format: str, stdout: str) -> Extracted:
    """Turn a CLI's stdout into the final message; formats that carry usage report it."""
    reader = _READERS.get(output_format)
    return reader(stdout) if reader is not None else Extracted(stdout)


def extract_error(output_format: str, stderr: str) -> str | None:
    """The error a CLI reports on stderr in its own format: gemini's JSON error object."""
    if output_format != "gemini_json":
        return None
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == "{"]
    if not starts:
        return None
    event = _json_object("\n".join(lines[starts[-1] :]))
    error = event.get("error") if event else None
    return str(error.get("message")) if isinstance(error, dict) and error.get("message") else None


# What a failed CLI says, read from its last lines: tracebacks, yargs and click print the cause
# after the stack or the usage text. Terminal colours and lines of drawing characters (a logo,
# a spinner) carry no cause; a stack frame is where, not why.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_FRAME = re.compile(r"^(?:at |File \"|\^+$|~+$|Traceback \(most recent call last\):|Node\.js v\d)")
_ERROR_WORDS = re.compile(
    r"error|exception|fatal|failed|failure|denied|not found|no such|unknown|invalid|cannot|"
    r"can't|unable|refused|missing|unrecognized|unexpected|not allowed|exceed",
    re.IGNORECASE,
)
_CAUSE_LIMIT = 300


def cause_line(text: str) -> str:
    """The one line of a failed program's output that says why: the last line with an error
    word that is not a stack frame, else the last line with a letter in it; "" for none."""
    lines = [" ".join(_CONTROL.sub("", _ANSI.sub("", line)).split()) for line in text.splitlines()]
    lines = [line for line in lines if any(c.isalpha() for c in line)]
    told = [line for line in lines if not _FRAME.match(line)]
    for line in reversed(told):
        if _ERROR_WORDS.search(line):
            return line[:_CAUSE_LIMIT]
    return (told or lines or [""])[-1][:_CAUSE_LIMIT]


def _codex_events(stdout: str) -> Extracted:
    """`codex exec --json` prints JSON lines; the last agent message is the answer."""
    message: str | None = None
    error = None
    input_tokens = output_tokens = None
    for event in _json_lines(stdout):
        kind, item = event.get("type"), event.get("item")
        if kind == "item.completed" and isinstance(item, dict):
            if item.get("type") == "agent_message":
                message = str(item.get("text", ""))
        elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
            input_tokens = _int(event["usage"].get("input_tokens"))
            output_tokens = _int(event["usage"].get("output_tokens"))
        elif kind == "turn.failed":
            failure = event.get("error")
            error = str(failure.get("message") if isinstance(failure, dict) else failure)
    if message is None:
        # No agent message: keep the raw output visible to the parser and the transcript.
        return Extracted(stdout, input_tokens, output_tokens, error)
    return Extracted(message, input_tokens, output_tokens, error)


def _claude_result(stdout: str) -> Extracted:
    """`claude -p --output-format json` prints one result object; `is_error` marks a failure."""
    event = _json_object(stdout)
    if event is None or "result" not in event:
        return Extracted(stdout)
    usage = _dict(event.get("usage"))
    text = str(event.get("result") or "")
    return Extracted(
        text,
        _int(usage.get("input_tokens")),
        _int(usage.get("output_tokens")),
        (text or "claude reported an error") if event.get("is_error") else None,
    )


def _gemini_result(stdout: str) -> Extracted:
    """`gemini -o json` prints one object with `response` and per-model token stats."""
    event = _json_object(stdout)
    if event is None:
        return Extracted(stdout)
    if isinstance(event.get("error"), dict):
        return Extracted("", error=str(event["error"].get("message", "gemini reported an error")))
    models = _dict(_dict(event.get("stats")).get("models"))
    tokens = [_dict(m.get("tokens")) for m in models.values() if isinstance(m, dict)]
    input_tokens = sum(_int(t.get("prompt")) or 0 for t in tokens) if tokens else None
    output_tokens = sum(_int(t.get("candidates")) or 0 for t in tokens) if tokens else None
    return Extracted(str(event.get("response") or ""), input_tokens, output_tokens)


def _copilot_events(stdout: str) -> Extracted:
    """`copilot -p --output-format json` prints JSON lines: the last `assistant.message` is the
    answer, a `session.error` the failure, and the closing `result` its exit code. It reports
    no token counts (only premium requests)."""
    message: str | None = None
    error = None
    for event in _json_lines(stdout):
        kind, data = event.get("type"), _dict(event.get("data"))
        if kind == "assistant.message" and isinstance(data.get("content"), str):
            message = data["content"]
        elif kind == "session.error":
            error = str(data.get("message") or "copilot reported an error")
        elif kind == "result" and _int(event.get("exitCode")) and error is None:
            error = f"copilot ended with exit code {event['exitCode']}"
    if message is None:
        return Extracted(stdout, error=error)
    return Extracted(message, error=error)


def _opencode_events(stdout: str) -> Extracted:
    """`opencode run --format json` prints JSON lines: `text` parts (the last is the answer),
    `step_finish` parts with that step's tokens (summed), and `error` events."""
    message: str | None = None
    error = None
    input_tokens = output_tokens = None
    for event in _json_lines(stdout):
        kind, part = event.get("type"), _dict(event.get("part"))
        if kind == "text" and isinstance(part.get("text"), str):
            message = part["text"]
        elif kind == "step_finish" and isinstance(part.get("tokens"), dict):
            input_tokens = (input_tokens or 0) + (_int(part["tokens"].get("input")) or 0)
            output_tokens = (output_tokens or 0) + (_int(part["tokens"].get("output")) or 0)
        elif kind == "error":
            failure = _dict(event.get("error"))
            said = _dict(failure.get("data")).get("message") or failure.get("name")
            error = str(said or "opencode reported an error")
    if message is None:
        return Extracted(stdout, input_tokens, output_tokens, error)
    return Extracted(message, input_tokens, output_tokens, error)


def _qwen_result(stdout: str) -> Extracted:
    """`qwen -o json` prints one JSON array of messages; its `result` message has the answer,
    `is_error`, `error.message` and the run's `usage`."""
    try:
        messages = json.loads(stdout)
    except ValueError:
        return Extracted(stdout)
    if not isinstance(messages, list):
        return Extracted(stdout)
    results = [m for m in messages if isinstance(m, dict) and m.get("type") == "result"]
    if not results:
        return Extracted(stdout)
    result = results[-1]
    usage = _dict(result.get("usage"))
    text = str(result.get("result") or "")
    error = None
    if result.get("is_error"):
        error = str(_dict(result.get("error")).get("message") or text or "qwen reported an error")
    return Extracted(text, _int(usage.get("input_tokens")), _int(usage.get("output_tokens")), error)


def _llm_response(stdout: str) -> Extracted:
    """`llm prompt --json` prints a JSON array holding the logged response: `response`,
    `input_tokens` and `output_tokens`. Its errors go to stderr as `Error: ...`."""
    try:
        records = json.loads(stdout)
    except ValueError:
        return Extracted(stdout)
    if not isinstance(records, list) or not records or not isinstance(records[-1], dict):
        return Extracted(stdout)
    record = records[-1]
    return Extracted(
        str(record.get("response") or ""),
        _int(record.get("input_tokens")),
        _int(record.get("output_tokens")),
    )


# aider's closing line: "Tokens: 11 sent, 5 received." or
# "Tokens: 2.3k sent, 1.1k cache write, 120 received. Cost: $0.01 message, $0.01 session."
_AIDER_TOKENS = re.compile(r"^Tokens: (?P<sent>[\d.]+k?) sent,.*?(?P<got>[\d.]+k?) received\.")


def _aider_text(stdout: str) -> Extracted:
    """aider has no JSON output. Its stdout is a banner (`Aider v...` up to a blank line), the
    answer, and a `Tokens: N sent, M received.` line. It exits 0 even when the model call
    fails, so a reply without that line is its error (e.g. `litellm.AuthenticationError`)."""
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Aider v")), None)
    if start is not None:
        blank = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
        lines = lines[blank:]
    tokens = [i for i, line in enumerate(lines) if _AIDER_TOKENS.match(line)]
    if not tokens:
        said = [line.strip() for line in lines if line.strip()]
        failure = next((line for line in said if "error" in line.lower()), None)
        return Extracted(stdout, error=failure or (said[-1] if said else "aider gave no answer"))
    found = _AIDER_TOKENS.match(lines[tokens[-1]])
    assert found is not None
    answer = "\n".join(lines[: tokens[-1]]).strip("\n")
    return Extracted(answer, _count(found["sent"]), _count(found["got"]))


def _count(text: str) -> int | None:
    """aider's `2.3k` as 2300 (it rounds, so the count is approximate above 1000)."""
    try:
        return round(float(text[:-1]) * 1000) if text.endswith("k") else int(text)
    except ValueError:
        return None


_READERS: dict[str, Callable[[str], Extracted]] = {
    "codex_json": _codex_events,
    "claude_json": _claude_result,
    "gemini_json": _gemini_result,
    "copilot_json": _copilot_events,
    "opencode_json": _opencode_events,
    "qwen_json": _qwen_result,
    "llm_json": _llm_response,
    "aider_text": _aider_text,
}


def _json_lines(text: str) -> list[dict[str, Any]]:
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        events = _json_lines(text)
        return events[-1] if events else None
    return value if isinstance(value, dict) else None


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: object) -> int | None:
    """A count the CLI reported; a negative one is none (the text's estimate stands in)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None
