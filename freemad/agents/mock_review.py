"""The bundled mock agents' reviews: canned findings on the lines a pull request's diff adds, a
different eye per persona, so a review debate with the default config has something to decide.

- iterative: a TODO or FIXME left in (minor);
- recursive: debug output left in, `print(` or `console.log(` (minor; the suggestion deletes it);
- memoized: a bare `except:` (major; the suggestion catches `Exception`), and TODOs as iterative.

A diff with none of these gets "No findings."
"""

from __future__ import annotations

import re

from freemad.core.review_diff import DiffError, parse_diff
from freemad.core.review_findings import NO_FINDINGS, Finding, render_review

_TODO = re.compile(r"\b(TODO|FIXME)\b")
_DEBUG = re.compile(r"\bprint\(|\bconsole\.log\(")
_BARE_EXCEPT = re.compile(r"^(\s*)except\s*:")


def _added_lines(diff_text: str) -> list[tuple[str, int, str]]:
    """(path, new-file line, text) of every line the diff adds."""
    try:
        diff = parse_diff(diff_text)
    except DiffError:
        return []
    from unidiff import PatchSet

    added = []
    for changed, parsed in zip(diff.files, PatchSet(diff_text), strict=False):
        for hunk in parsed:
            for row in hunk:
                if row.is_added and row.target_line_no is not None:
                    added.append((changed.path, row.target_line_no, row.value.rstrip("\n")))
    return added


def _findings(persona: str, path: str, line: int, text: str) -> list[Finding]:
    found = []
    if persona in ("iterative", "memoized") and _TODO.search(text):
        found.append(
            Finding(path, line, "minor", "Unfinished work is left in: resolve it or file an issue.")
        )
    if persona == "recursive" and _DEBUG.search(text):
        found.append(Finding(path, line, "minor", "Debug output is left in.", ""))
    bare = _BARE_EXCEPT.match(text)
    if persona == "memoized" and bare:
        found.append(
            Finding(
                path,
                line,
                "major",
                "A bare except also catches KeyboardInterrupt and SystemExit.",
                f"{bare.group(1)}except Exception:",
            )
        )
    return found


def review(persona: str, requirement: str) -> tuple[str, str]:
    """The persona's review of the diff in a review request: (solution, reasoning)."""
    _, _, diff_text = requirement.partition("\nThe diff:\n")
    diff_text = diff_text.partition("\n(end of the diff)")[0] + "\n"
    findings = [
        finding
        for path, line, text in _added_lines(diff_text.lstrip("\n"))
        for finding in _findings(persona, path, line, text)
    ]
    reasoning = f"The {persona} mock reviewer read every added line ({len(findings)} finding(s))."
    return (render_review(findings) if findings else NO_FINDINGS), reasoning
