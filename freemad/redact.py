"""Redaction of secrets matched by `security.redact_patterns`, for transcripts and logs alike;
and the credential-looking strings a text holds (`find_secrets`), for the debate's secret scan."""

from __future__ import annotations

import logging
import math
import re
import shlex
import unicodedata
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

MARK = "[REDACTED]"


class Redactor:
    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = [re.compile(p) for p in patterns]

    def text(self, value: str) -> str:
        for pattern in self.patterns:
            value = pattern.sub(MARK, value)
        return value

    def data(self, value: Any) -> Any:
        """The same structure with every string (keys included) redacted."""
        if not self.patterns:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


# Option values and words that are credentials whatever the config's patterns say.
_TOKEN_SHAPES = re.compile(r"^(?:sk-|sk_|ghp_|gho_|ghs_|github_pat_|glpat-|xox[abpr]-|AKIA)\S{6,}")


def _secret_name(name: str) -> bool:
    from freemad.sandbox.process import looks_secret

    name = name.lstrip("-").replace("-", "_")
    return bool(name) and looks_secret(name) and not name.upper().endswith("TOKENS")


def argv_for_log(argv: Sequence[str]) -> str:
    """A command line for a log: the values of options named like a credential (`--api-key X`,
    `--token=X`, `API_KEY=X`) and words shaped like a token (`sk-...`) become [REDACTED]."""
    words: list[str] = []
    hide_next = False
    for word in argv:
        if hide_next and not word.startswith("-"):
            words.append(MARK)
            hide_next = False
            continue
        hide_next = False
        name, equals, _value = word.partition("=")
        if equals and _secret_name(name):
            words.append(f"{name}={MARK}")
        elif _TOKEN_SHAPES.match(word) or find_secrets(word):
            words.append(MARK)
        else:
            words.append(word)
            hide_next = word.startswith("-") and _secret_name(word)
    return shlex.join(words)


class RedactingFilter(logging.Filter):
    """Redacts the fully formatted message, so arguments cannot smuggle a secret past it: the
    config's patterns, and credential-looking strings (`redact_secrets`), which an agent CLI's
    error may quote."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_secrets(self.redactor.text(message))
        if redacted != message or record.args:
            record.msg, record.args = redacted, None
        return True


# Credential shapes, one list: the secret scan of debate answers (`find_secrets`) reads it, and
# so does `argv_for_log` for a logged command line's words. Every quantifier is bounded and each
# pattern starts with a literal, so a scan does a bounded amount of work per character: a
# megabyte answer cannot make it backtrack. Prefixes that are rare inside words match anywhere
# (a letter before `AKIA` hides nothing); `sk-` and `sk_` only at a word's start (`risk-free`).
SECRET_SHAPES: tuple[tuple[str, str], ...] = (
    ("private_key", r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----"),
    ("aws_access_key_id", r"(?:AKIA|ASIA)[A-Z0-9]{16}"),
    ("github_token", r"gh[pousr]_[A-Za-z0-9]{20,255}"),
    ("github_token", r"github_pat_[A-Za-z0-9_]{20,255}"),
    ("gitlab_token", r"glpat-[A-Za-z0-9_-]{20,255}"),
    ("slack_token", r"xox[abpr]-[A-Za-z0-9-]{10,255}"),
    ("anthropic_key", r"(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_-]{20,255}"),
    ("openai_key", r"(?<![A-Za-z0-9])sk-(?!ant-)[A-Za-z0-9_-]{20,255}"),
    ("stripe_key", r"(?<![A-Za-z0-9])[sr]k_(?:live|test)_[A-Za-z0-9]{20,255}"),
    ("google_api_key", r"AIza[0-9A-Za-z_-]{35}"),
)
ASSIGNED_SECRET = "assigned_secret"  # noqa: S105 - the name of a kind of find
# `name = "value"`, `name: value`: a credential's name, then a long value of letters and digits
# whose entropy is high (a real secret, not `os.environ["X"]` or a placeholder).
_ASSIGNMENT = re.compile(
    r"(?i)(?<![a-z0-9])(?:password|passwd|pwd|secret|client[_-]?secret|api[_-]?key|"
    r"access[_-]?key|access[_-]?token|auth[_-]?token|token)[\"']?[ \t]{0,5}[:=][ \t]{0,5}"
    r"[\"']?([^\s\"'`,;)]{16,200})"
)
_MIN_ENTROPY = 3.5  # bits per character; random keys of 16 characters and more have about 4
_SHAPES = tuple((kind, re.compile(pattern)) for kind, pattern in SECRET_SHAPES)
_PEM_END = "-----END "
# Characters no reader sees (zero-width spaces and joiners, soft hyphens, direction marks, tags)
# and letters that look like ASCII ones: a secret written with them is still one to a reader.
_INVISIBLE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
    "\ufff9-\ufffb\U000e0001\U000e0020-\U000e007f]"
)
_LOOKALIKES = str.maketrans(
    "АВЕКМНОРСТХаеорсухІіЈјЅѕԁΑΒΕΖΗΙΚΜΝΟΡΤΥΧοι",
    "ABEKMHOPCTXaeopcyxIiJjSsdABEZHIKMNOPTYXoi",
)
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


@dataclass(frozen=True, slots=True)
class Secret:
    """A credential-looking string in a text: its kind and where it is (`start` and `end` index
    the text; `line` and `column` count from 1)."""

    kind: str
    start: int
    end: int
    line: int
    column: int

    def report(self) -> dict[str, Any]:
        """What a transcript keeps of it: the kind and the place, never a character of it."""
        return {"kind": self.kind, "line": self.line, "column": self.column}


class _View:
    """A text as the scan reads it, keeping where each piece of it comes from.

    Non-ASCII characters read in compatibility form (NFKC: full-width letters are ASCII), with
    look-alike letters read as the ASCII they imitate and invisible ones dropped. `joined` also
    reads the lines as one: each line's end (a closing quote, the `+` or `\\` of a continued
    string, spaces) and the next one's start (indentation, `#`, `//` or `>`, an opening quote)
    are dropped, so a key cut over lines is whole again."""

    def __init__(self, text: str, *, joined: bool) -> None:
        self.starts: list[int] = []  # per piece: where it starts in the view
        self.origins: list[int] = []  # per piece: where it starts in the text
        self.ends: list[int] = []  # per piece: where it ends in the text
        self.exact: list[bool] = []  # the piece is the text itself, character for character
        parts: list[str] = []
        size = 0
        for begin, end in _lines(text) if joined else [(0, len(text))]:
            for o_start, o_end, shown in _normalized(text, begin, end):
                if shown:
                    self.starts.append(size)
                    self.origins.append(o_start)
                    self.ends.append(o_end)
                    self.exact.append(o_end - o_start == len(shown))
                    parts.append(shown)
                    size += len(shown)
        self.text = "".join(parts)

    def origin(self, index: int, *, end: bool) -> int:
        """Where the view's `index` (a match's start, or its end with `end`) is in the text."""
        index -= int(end)
        piece = bisect_right(self.starts, index) - 1
        if self.exact[piece]:
            return self.origins[piece] + index - self.starts[piece] + int(end)
        return self.ends[piece] if end else self.origins[piece]


def _lines(text: str) -> Iterator[tuple[int, int]]:
    """Each line's span in `text` without the glue `_View` drops."""
    begin = 0
    while True:
        newline = text.find("\n", begin)
        line = text[begin : len(text) if newline < 0 else newline]
        head = len(line) - len(line.lstrip(" \t"))
        for marker in ("#", "//", ">"):
            if line.startswith(marker, head):
                head += len(marker)
                head = len(line) - len(line[head:].lstrip(" \t"))
                break
        head += line[head : head + 1] in ("'", '"', "`")
        body = line.rstrip(" \t\r")
        for glue in ("\\", "+"):  # `"AKIA" + \` ends a line continued in Python
            if body.endswith(glue):
                body = body[: -len(glue)].rstrip(" \t")
        if body.endswith(("'", '"', "`")) and len(body) > head:
            body = body[:-1]
        if len(body) > head:
            yield begin + head, begin + len(body)
        if newline < 0:
            return
        begin = newline + 1


def _normalized(text: str, begin: int, end: int) -> Iterator[tuple[int, int, str]]:
    """`text[begin:end]` as pieces (start, end, what the scan reads): runs that read as they are
    written whole, each other character alone."""
    at = begin
    for match in _NON_ASCII.finditer(text, begin, end):
        run = match.group()
        if (
            unicodedata.normalize("NFKC", run) == run
            and run.translate(_LOOKALIKES) == run
            and not _INVISIBLE.search(run)
        ):
            continue  # read as written: part of the run around it
        if match.start() > at:
            yield at, match.start(), text[at : match.start()]
        for index in range(match.start(), match.end()):
            char = text[index]
            shown = "" if _INVISIBLE.match(char) else unicodedata.normalize("NFKC", char)
            yield index, index + 1, shown.translate(_LOOKALIKES)
        at = match.end()
    if end > at:
        yield at, end, text[at:end]


def _secret_value(value: str) -> bool:
    """A value of letters and digits whose entropy is that of a random key."""
    if not (any(c.isalpha() for c in value) and any(c.isdigit() for c in value)):
        return False
    size = len(value)
    entropy = -sum(n / size * math.log2(n / size) for n in Counter(value).values())
    return entropy >= _MIN_ENTROPY


def _matches(view: str) -> Iterator[tuple[str, int, int]]:
    """(kind, start, end) of each credential-looking string in `view`."""
    for kind, pattern in _SHAPES:
        closing = -1  # where the next END line of a key block is (-2: none left)
        for match in pattern.finditer(view):
            end = match.end()
            if kind == "private_key":
                # The block is the secret, to its END line or else to the end of the text. One
                # search for the END line serves every header before it.
                if closing != -2 and closing < end:
                    found = view.find(_PEM_END, end)
                    closing = found if found >= 0 else -2
                stop = view.find("-----", closing + len(_PEM_END)) if closing >= 0 else -1
                end = stop + 5 if stop >= 0 else len(view)
            yield kind, match.start(), end
    for match in _ASSIGNMENT.finditer(view):
        if _secret_value(match.group(1)):
            yield ASSIGNED_SECRET, match.start(1), match.end(1)


def find_secrets(text: str) -> list[Secret]:
    """Every credential-looking string in `text` (the shapes of `SECRET_SHAPES` and credentials
    assigned to a name), in order of place; overlapping ones are one. Linear in `text`'s size."""
    spans: list[tuple[int, int, str]] = []
    for joined in (False, True):
        if joined and "\n" not in text:
            break
        view = _View(text, joined=joined)
        single = _union(spans)
        for kind, start, end in _matches(view.text):
            span = (view.origin(start, end=False), view.origin(end, end=True), kind)
            if joined and _inside(single, span[0]):
                continue  # read whole within one line already: the join adds only noise
            spans.append(span)
    secrets: list[Secret] = []
    for start, end, kind in sorted(spans, key=lambda span: (span[0], -span[1])):
        if secrets and start < secrets[-1].end:
            last = secrets[-1]
            if end > last.end:
                secrets[-1] = Secret(last.kind, last.start, end, last.line, last.column)
            continue
        line = text.count("\n", 0, start) + 1
        column = start - text.rfind("\n", 0, start)
        secrets.append(Secret(kind, start, end, line, column))
    return secrets


def _union(spans: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
    """The places `spans` cover, as sorted spans that do not overlap."""
    union: list[tuple[int, int]] = []
    for start, end, _kind in sorted(spans):
        if union and start <= union[-1][1]:
            union[-1] = (union[-1][0], max(end, union[-1][1]))
        else:
            union.append((start, end))
    return union


def _inside(union: list[tuple[int, int]], index: int) -> bool:
    at = bisect_right(union, index, key=lambda span: span[0]) - 1
    return at >= 0 and union[at][0] <= index < union[at][1]


def redact_secrets(text: str, secrets: list[Secret] | None = None) -> str:
    """`text` with every credential-looking string in it (`find_secrets`, or those given)
    replaced by a mark naming its kind."""
    found = find_secrets(text) if secrets is None else secrets
    parts, at = [], 0
    for secret in found:
        parts += [text[at : secret.start], f"[REDACTED {secret.kind}]"]
        at = secret.end
    parts.append(text[at:])
    return "".join(parts)
