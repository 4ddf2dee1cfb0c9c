"""A pull-request review as agents write it: findings, their identity, and the reply's grammar.
No I/O.

An agent's review is the SOLUTION of a debate reply, a list of findings, each a heading line
and the text under it::

    ### src/app.py:42 [major]
    The loop never ends when `n` is 0.

    ```suggestion
    while n > 0:
    ```

The heading names the file (its new path), the line in the new file and the severity (one of
`SEVERITIES`); the text says what is wrong; an optional `suggestion` fence is the replacement
for that line, as GitHub's suggestion blocks are. A review with nothing to report says
"No findings." Text before the first heading is ignored; headings inside code fences do not
count. Anything else (no heading and no "No findings.", a heading without text, an unknown
severity, too many findings) is a `ReviewFormatError`: that agent's reply is unparseable, and
the debate asks it once more, as for any reply outside the contract.

A finding's identity is its place, `path:line`: two agents flagging the same line hold the same
finding, whatever their words, so the Free-MAD score groups and scores them together
(`freemad.core.review_score`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from freemad.core.answer_identity import answer_id, fence_info, fence_spans, split_lines
from freemad.core.replies import ReplyFormatError

__all__ = [
    "NO_FINDINGS",
    "REVIEW_MARKER",
    "SEVERITIES",
    "Finding",
    "ReviewFormatError",
    "finding_id",
    "parse_review",
    "severity_rank",
]

# The first line of a review's requirement: how an agent (the bundled mock among them) knows
# it is asked for a review.
REVIEW_MARKER = "FREE-MAD review request"
NO_FINDINGS = "No findings."
SEVERITIES = ("critical", "major", "minor", "nit")
MAX_FINDINGS = 50

_HEADING = re.compile(
    r"#{1,6}[ \t]+`?(?P<path>[^\s`:][^`:]*?)`?:(?P<line>\d{1,7})`?"
    r"[ \t]*\[(?P<severity>[A-Za-z]+)\][ \t]*#*[ \t]*"
)
_LOOSE_HEADING = re.compile(r"#{1,6}[ \t]+\S+:\d")
_NO_FINDINGS = re.compile(r"\bno\s+findings\b", re.IGNORECASE)


class ReviewFormatError(ReplyFormatError):
    """A review that is not in the grammar; the message names what is wrong, in one line."""


@dataclass(frozen=True)
class Finding:
    """One finding: a line of a file in the new version, how bad, what, and maybe a fix."""

    path: str
    line: int
    severity: str
    body: str
    suggestion: str | None = None

    @property
    def place(self) -> str:
        return f"{self.path}:{self.line}"


def severity_rank(severity: str) -> int:
    """0 for the most severe: sorts findings worst first."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def normalize_path(path: str) -> str:
    """A path as the diff names it: no leading `./`, `/` separators. (git's `a/` and `b/` are
    left to `Diff.resolve`: a repository may have a folder named `a`.)"""
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def finding_id(finding: Finding) -> str:
    """The finding's identity: its place, hashed as answers' canonical forms are."""
    return answer_id(f"finding\x00{finding.path}\x00{finding.line}")


def _trim(lines: list[str]) -> str:
    return "\n".join(lines).strip("\n").rstrip()


def _finding(
    heading: re.Match[str], lines: list[str], spans: list[tuple[int, int, int]]
) -> Finding:
    """The finding a heading opens; `lines` are those under it, `spans` their closed fences."""
    severity = heading.group("severity").lower()
    place = f"{heading.group('path')}:{heading.group('line')}"
    if severity not in SEVERITIES:
        raise ReviewFormatError(
            f"finding {place!r} has severity {severity[:20]!r}; use one of {', '.join(SEVERITIES)}"
        )
    line = int(heading.group("line"))
    if line < 1:
        raise ReviewFormatError(f"finding {place!r} names line 0; lines count from 1")
    suggestion: str | None = None
    body = list(lines)
    for start, end, _indent in spans:
        if fence_info(lines[start]).split(" ")[0].lower() == "suggestion":
            suggestion = "\n".join(lines[start + 1 : end])
            body = lines[:start] + lines[end + 1 :]
            break
    text = _trim(body)
    if not text:
        raise ReviewFormatError(f"finding {place!r} has no text saying what is wrong")
    return Finding(normalize_path(heading.group("path")), line, severity, text, suggestion)


def parse_review(text: str, *, max_findings: int = MAX_FINDINGS) -> list[Finding]:
    """The findings of a review (see the module doc), in order; [] for "No findings."

    Two findings on one line are one: their texts joined, the worse severity, the first
    suggestion."""
    lines = split_lines(text)
    fenced = fence_spans(lines, require_close=True)
    inside = {i for start, end, _ in fenced for i in range(start, end + 1)}
    starts: list[tuple[int, re.Match[str]]] = []
    for index, line in enumerate(lines):
        if index in inside:
            continue
        match = _HEADING.fullmatch(line.strip())
        if match is not None:
            starts.append((index, match))
        elif _LOOSE_HEADING.match(line.strip()):
            raise ReviewFormatError(
                f"heading {line.strip()[:60]!r} is not `### PATH:LINE [SEVERITY]`"
            )
    if not starts:
        if _NO_FINDINGS.search(text):
            return []
        raise ReviewFormatError(
            "the review has no finding (`### PATH:LINE [SEVERITY]` and its text) and does not "
            f"say {NO_FINDINGS!r}"
        )
    if len(starts) > max_findings:
        raise ReviewFormatError(
            f"the review has {len(starts)} findings; at most {max_findings} are taken"
        )
    found: dict[str, Finding] = {}
    for number, (index, match) in enumerate(starts):
        end = starts[number + 1][0] if number + 1 < len(starts) else len(lines)
        block = lines[index + 1 : end]
        spans = [(s - index - 1, e - index - 1, i) for s, e, i in fenced if index < s and e < end]
        finding = _finding(match, block, spans)
        same = found.get(finding.place)
        if same is None:
            found[finding.place] = finding
        else:
            worse = min(same.severity, finding.severity, key=severity_rank)
            found[finding.place] = replace(
                same,
                severity=worse,
                body=f"{same.body}\n\n{finding.body}",
                suggestion=same.suggestion if same.suggestion is not None else finding.suggestion,
            )
    return list(found.values())


def render_finding(finding: Finding) -> str:
    """A finding in the reply grammar again (`parse_review` reads it back as it was)."""
    text = f"### {finding.path}:{finding.line} [{finding.severity}]\n{finding.body}\n"
    if finding.suggestion is not None:
        fence = "```" + "`" * _longest_backticks(finding.suggestion)
        text += f"\n{fence}suggestion\n{finding.suggestion}\n{fence}\n"
    return text


def _longest_backticks(text: str) -> int:
    runs = re.findall(r"`+", text)
    return max((len(run) - 2 for run in runs if len(run) >= 3), default=0)


def render_review(findings: list[Finding]) -> str:
    """A whole review in the reply grammar."""
    if not findings:
        return NO_FINDINGS + "\n"
    return "\n".join(render_finding(f) for f in findings)
