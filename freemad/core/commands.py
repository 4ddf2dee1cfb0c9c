"""The ``/freemad`` comment-command grammar: parse a comment body into a ``Command``. No I/O.

Where a command is read:

- The body goes through ``freemad.core.untrusted.clean`` first, so a command hidden in an HTML
  comment does nothing, and invisible characters are gone before anything is matched. (So
  ``/free\\u200bmad debate`` *is* a command: its author typed one, the reader sees one.)
- Only the first non-blank line counts; leading blank lines are skipped because GitHub does not
  render them. A ``/freemad`` on any later line is not a command, nor is a quoted one
  (``> /freemad ...``, what "Quote reply" produces), nor one in a code span, a fence or an
  indented code block (a tab or four spaces of indentation; up to three spaces are allowed).
- The line must start with exactly ``/freemad`` followed by whitespace or its end:
  ``/freemadx`` and ``/FreeMAD`` are ordinary text. Trailing whitespace is ignored.

The grammar: ``/freemad VERB [key=value ...] [TEXT]``, then an optional body (the following
lines). Verbs and keys are lower case.

- Run-starting verbs (debate, plan, code, evolve, review) take options: ``key=value`` words right after
  the verb, shell-quoted as in POSIX (``key="two words"``); the key must be written bare, so a
  word quoted whole (``"a=b"``) is text. ``--`` ends the options explicitly. An unknown key is an
  error even where no option exists yet (plan, code), so adding one later never changes what an
  existing command means. Keys may use ``-`` for ``_`` (``max-iterations=5``).
- The text is the rest of the first line after the verb and options, verbatim (quotes kept, so
  ``/freemad answer Use SQLite, not "Postgres"`` gives ``Use SQLite, not "Postgres"``). answer
  and reject take no options, so all of their line is text.
- The body is every later line, blank lines around it trimmed; any verb may carry one (a note
  under ``/freemad stop``, a long answer under ``/freemad answer``). A verb that needs text
  (answer, reject, evolve) is satisfied by the line or the body: ``Command.full_text`` is both.
- ``approve`` takes at most one STAGE word (a task stage, or ``publish``); the control verbs take
  nothing on their line.

Malformed commands raise ``CommandError``, whose message is one line fit to post as a reply.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from freemad.core.untrusted import clean

__all__ = ["VERBS", "Command", "CommandError", "help_text", "parse_comment"]

PREFIX = "/freemad"
# verb -> (arguments shown in help, one-line description, example after "/freemad ")
_VERB_HELP: dict[str, tuple[str, str, str]] = {
    "debate": (
        "[rounds=N] [REQUIREMENT]",
        "debate the requirement, or the issue's title and body",
        "debate rounds=2 Write a CSV parser",
    ),
    "plan": ("[GOAL]", "start a planning task on the goal, or on the issue", "plan"),
    "code": (
        "[GOAL]",
        "start a coding task; its branch becomes a PR after `approve publish`",
        "code Add a --verbose flag",
    ),
    "evolve": (
        "[max_iterations=N] GOAL",
        "evolve this pull request's head toward a measurable goal",
        "evolve max_iterations=20 Make the test suite faster",
    ),
    "review": (
        "[rounds=N] [FOCUS]",
        "review this pull request's diff by debate; posted as a review with inline comments",
        "review rounds=2 Check the error handling",
    ),
    "answer": (
        "TEXT",
        "answer the question the waiting run asked",
        'answer Use SQLite, not "Postgres"',
    ),
    "approve": (
        "[STAGE]",
        "approve the waiting stage; `approve publish` opens the pull request",
        "approve publish",
    ),
    "reject": (
        "REASON",
        "send the waiting stage back with a reason",
        "reject The plan skips migrations",
    ),
    "resume": ("", "resume a paused or interrupted run", "resume"),
    "pause": ("", "pause the run after its current step", "pause"),
    "stop": ("", "stop the run for good", "stop"),
    "status": ("", "reply with the run's current state", "status"),
    "decline": ("", "decline to answer; the run goes on without an answer", "decline"),
    "help": ("", "reply with this help", "help"),
}
VERBS: tuple[str, ...] = tuple(_VERB_HELP)
TEXT_VERBS = frozenset({"debate", "plan", "code", "evolve", "review", "answer", "reject"})
NEEDS_TEXT = frozenset({"evolve", "answer", "reject"})
OPTION_VERBS = frozenset({"debate", "plan", "code", "evolve", "review"})
# verb -> option -> inclusive integer range
OPTIONS: dict[str, dict[str, tuple[int, int]]] = {
    "debate": {"rounds": (0, 10)},
    "evolve": {"max_iterations": (1, 1000)},
    "review": {"rounds": (0, 10)},
}

_HEAD = re.compile(r"/freemad(?=\s|$)")
_VERB = re.compile(r"\s*(\S+)")
_OPTION_KEY = re.compile(r"\s*([a-z][a-z0-9_-]*)=")
_END_OF_OPTIONS = re.compile(r"\s*--(?=\s|$)")
# One POSIX shell word (no whitespace outside quotes). Each alternative starts with a different
# character, so matching is linear; shlex then unquotes the word.
_SHELL_WORD = re.compile(r"""(?:[^\s"'\\]|\\.|"(?:[^"\\]|\\.)*"|'[^']*')*""")
_STAGE = re.compile(r"[a-z][a-z0-9_-]*")
_CODE_INDENT = re.compile(r"\t| {4}")


class CommandError(ValueError):
    """A malformed ``/freemad`` command; the message is one line, fit to post as a reply."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


@dataclass(frozen=True)
class Command:
    verb: str
    text: str = ""
    options: dict[str, str | int] = field(default_factory=dict)
    body: str = ""
    stage: str | None = None

    @property
    def full_text(self) -> str:
        """The text on the command line and the body under it, joined by a newline."""
        return "\n".join(part for part in (self.text, self.body) if part)


def _quote(word: str) -> str:
    """User input echoed in a reply: short, and in a code span so it cannot mention anyone."""
    word = word.replace("`", "'")
    return f"`{word[:40]}…`" if len(word) > 40 else f"`{word}`"


def _verb_list() -> str:
    return ", ".join(VERBS)


def _unquote(raw: str, key: str) -> str:
    try:
        words = shlex.split(raw, comments=False, posix=True)
    except ValueError as exc:
        raise CommandError(f"Cannot read the value of option `{key}`: {exc}.") from None
    return words[0] if words else ""


def _option_value(verb: str, key: str, value: str) -> int:
    low, high = OPTIONS[verb][key]
    if not (value.isascii() and value.isdigit() and len(value) <= 6) or not (
        low <= int(value) <= high
    ):
        raise CommandError(
            f"Option `{key}` of `/freemad {verb}` must be a whole number from {low} to {high}, "
            f"not {_quote(value)}."
        )
    return int(value)


def _parse_options(verb: str, line: str, pos: int) -> tuple[dict[str, str | int], int]:
    """Leading ``key=value`` words from ``pos``; returns them and where the text starts."""
    options: dict[str, str | int] = {}
    while True:
        end = _END_OF_OPTIONS.match(line, pos)
        if end:
            return options, end.end()
        key_match = _OPTION_KEY.match(line, pos)
        if key_match is None:
            return options, pos
        key = key_match.group(1).replace("-", "_")
        raw = _SHELL_WORD.match(line, key_match.end())
        assert raw is not None  # the pattern matches the empty string
        if raw.end() < len(line) and not line[raw.end()].isspace():
            raise CommandError(f"Unbalanced quote or trailing backslash in option `{key}`.")
        known = OPTIONS.get(verb, {})
        if key not in known:
            accepted = ", ".join(f"`{name}`" for name in known) or "none"
            raise CommandError(
                f"Unknown option {_quote(key)} for `/freemad {verb}` (accepted: {accepted}); "
                "put `--` before text that starts with `key=value`."
            )
        if key in options:
            raise CommandError(f"Option `{key}` is given twice.")
        options[key] = _option_value(verb, key, _unquote(raw.group(), key))
        pos = raw.end()


def _words(line: str, pos: int, verb: str) -> list[str]:
    try:
        return shlex.split(line[pos:], comments=False, posix=True)
    except ValueError as exc:
        raise CommandError(f"Cannot read the arguments of `/freemad {verb}`: {exc}.") from None


def _body(lines: list[str]) -> str:
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    return "\n".join(lines[start:]).rstrip()


def _command_line(text: str) -> tuple[str, list[str]] | None:
    """The first non-blank line, if it is a ``/freemad`` command, and the lines after it."""
    lines = text.split("\n")
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        indent = raw[: len(raw) - len(raw.lstrip())]
        if _CODE_INDENT.search(indent) or not _HEAD.match(line):
            return None
        return line, lines[index + 1 :]
    return None


def parse_comment(body: str) -> Command | None:
    """The command in a comment; None for an ordinary comment; ``CommandError`` if malformed."""
    found = _command_line(clean(body))
    if found is None:
        return None
    line, rest = found
    after = _body(rest)
    verb_match = _VERB.match(line, len(PREFIX))
    if verb_match is None:
        raise CommandError(f"Say what FREE-MAD should do: `/freemad VERB`, one of {_verb_list()}.")
    verb, pos = verb_match.group(1), verb_match.end()
    if verb not in _VERB_HELP:
        raise CommandError(
            f"Unknown command {_quote(verb)}; the verbs are {_verb_list()} (`/freemad help`)."
        )
    if verb in TEXT_VERBS:
        options: dict[str, str | int] = {}
        if verb in OPTION_VERBS:
            options, pos = _parse_options(verb, line, pos)
        text = line[pos:].strip()
        if verb in NEEDS_TEXT and not (text or after):
            usage = _VERB_HELP[verb][0]
            raise CommandError(f"`/freemad {verb}` needs text: `/freemad {verb} {usage}`.")
        return Command(verb, text=text, options=options, body=after)
    if verb == "approve":
        words = _words(line, pos, verb)
        if len(words) > 1:
            raise CommandError("`/freemad approve` takes at most one STAGE, such as `publish`.")
        stage = words[0] if words else None
        if stage is not None and not _STAGE.fullmatch(stage):
            raise CommandError(
                f"{_quote(stage)} is not a stage name; try `/freemad approve publish`."
            )
        return Command(verb, body=after, stage=stage)
    if line[pos:].strip():
        raise CommandError(
            f"`/freemad {verb}` takes nothing on its line; put a note on the lines below it."
        )
    return Command(verb, body=after)


def help_text(may_use: Callable[[str], bool] | None = None) -> str:
    """Markdown for the ``/freemad help`` reply: the grammar and every verb with an example;
    with ``may_use``, only the verbs it allows (the sender's), and how many it left out."""
    shown = {v: h for v, h in _VERB_HELP.items() if may_use is None or may_use(v)}
    rows = "\n".join(
        f"| `/freemad {verb}{' ' + args if args else ''}` | {what} | `/freemad {example}` |"
        for verb, (args, what, example) in shown.items()
    )
    hidden = len(_VERB_HELP) - len(shown)
    withheld = (
        f"These are the commands you may use here; {hidden} more need write access.\n\n"
        if hidden
        else ""
    )
    return (
        "### FREE-MAD commands\n\n"
        "Write the command on the **first line** of a comment: `/freemad VERB [key=value ...] "
        "[TEXT]`. Text may go on past the first line. Only people with write access can start "
        "or steer a run; `help` works for everyone and `status` for anyone who can read the "
        "repository.\n\n"
        f"{withheld}"
        "| command | what it does | example |\n|---|---|---|\n"
        f"{rows}\n\n"
        "Options are `key=value` words right after the verb (quote a value with spaces: "
        '`key="two words"`); put `--` before text that itself starts with `key=value`. '
        "Everything after the options is taken as written, quotes included.\n"
    )
