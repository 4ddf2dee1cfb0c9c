"""A review debate's result as markdown: the summary (each agent's stance and the scores), the
findings outside the diff, and each finding's comment.

The agents' words are untrusted: a finding's text is an inert block quote (no mention, link or
HTML works in it), its place a code span; a suggestion is a fenced `suggestion` block, whose
contents GitHub shows as code and offers as a one-click change of that line.
"""

from __future__ import annotations

import re

from freemad.config.models import FreemadConfig
from freemad.core.review_score import ScoredFinding
from freemad.debate.review_debate import ReviewResult
from freemad.markdown import code_span, escape_markdown, escape_markdown_block

MARKER = "<!-- freemad:review -->"
# GitHub takes at most 65,536 characters in a review's body or a comment: long lists and texts
# are cut, saying how much.
MAX_ROWS = 100
MAX_FINDING_CHARS = 4000


def suggestion_block(text: str) -> str:
    """A GitHub suggestion block, its fence longer than any backtick run in `text`."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}suggestion\n{text}\n{fence}" if text else f"{fence}suggestion\n{fence}"


def finding_comment(scored: ScoredFinding) -> str:
    """One finding as an inline comment's body."""
    finding = scored.finding
    head = (
        f"**{finding.severity}** · score {scored.score:.2f} · raised by "
        f"{escape_markdown(', '.join(scored.raised_by))}"
    )
    text = finding.body
    if len(text) > MAX_FINDING_CHARS:
        text = (
            text[:MAX_FINDING_CHARS]
            + f"\n[... {len(finding.body) - MAX_FINDING_CHARS} more characters]"
        )
    parts = [head, escape_markdown_block(text)]
    if finding.suggestion is not None:
        parts.append(suggestion_block(finding.suggestion))
    return "\n\n".join(parts)


def _finding_section(scored: ScoredFinding) -> str:
    place = code_span(scored.finding.place)
    return f"#### {place}\n\n{finding_comment(scored)}"


def render_summary(result: ReviewResult, config: FreemadConfig) -> str:
    """The review's body: what survived, the stances, the scores, what was left out, and the
    surviving findings that are not on a line of the diff (GitHub takes no comment there)."""
    debate, score = result.debate, result.score
    inline, outside = result.placed()
    rounds = len(debate.transcript)
    lines = [MARKER, "### FREE-MAD review", ""]
    if score is None:
        reason = debate.error or "no agent gave a review"
        lines += [f"The review debate gave no review: {escape_markdown(reason)}", ""]
        return "\n".join(lines)
    agents = len(score.stances)
    lines.append(
        f"**{len(result.surviving)} finding(s)** survived a debate of {agents} agent(s) over "
        f"{rounds} round(s) (a finding survives with a score of at least {score.min_score:g}): "
        f"{len(inline)} on lines of the diff, {len(outside)} below."
    )
    lines.append("")
    lines += ["| agent | findings at the end | of them surviving | changed its review |"]
    lines += ["|---|---:|---:|---|"]
    for stance in score.stances:
        shown = "no findings (clean)" if not stance.findings else str(stance.findings)
        changed = "yes" if stance.changed else "no"
        lines.append(
            f"| {escape_markdown(stance.agent)} | {shown} | {stance.surviving} | {changed} |"
        )
    for agent, error in sorted(result.errors.items()):
        if agent not in {s.agent for s in score.stances}:
            lines.append(
                f"| {escape_markdown(agent)} | failed: {escape_markdown(error, 120)} | | |"
            )
    lines += ["", "| finding | severity | score | raised by | survived |", "|---|---|---:|---|---|"]
    for scored in score.findings[:MAX_ROWS]:
        lines.append(
            f"| {code_span(scored.finding.place, table=True)} | {scored.finding.severity} | "
            f"{scored.score:.2f} | {escape_markdown(', '.join(scored.raised_by))} | "
            f"{'yes' if scored.survived else 'no'} |"
        )
    if len(score.findings) > MAX_ROWS:
        lines.append(f"| ({len(score.findings) - MAX_ROWS} more, lower) | | | | |")
    if score.clean_score is not None:
        lines.append(f"| (no findings) | | {score.clean_score:.2f} | | |")
    left_out = result.request.fitted.left_out
    if left_out:
        lines += ["", "**Not reviewed** (the agents saw a summary line only):", ""]
        lines += [f"- {code_span(o.summary)}: {_why(o.reason)}" for o in left_out[:MAX_ROWS]]
        if len(left_out) > MAX_ROWS:
            lines.append(f"- and {len(left_out) - MAX_ROWS} more file(s)")
    if outside:
        lines += ["", "**Findings not on a line of the diff:**", ""]
        lines += [_finding_section(s) + "\n" for s in outside]
    return "\n".join(lines).rstrip() + "\n"


def _why(reason: str) -> str:
    return {
        "binary": "a binary file",
        "file_size": "its diff is longer than review.max_file_chars",
        "total_size": "the diff's other files filled review.max_diff_chars",
        "no_patch": "GitHub shows no patch for it (too large)",
    }.get(reason, reason)


def render_markdown(result: ReviewResult, config: FreemadConfig) -> str:
    """The whole review as one markdown document (`freemad review`): the summary, then every
    surviving finding, inline ones included."""
    inline, _outside = result.placed()
    text = render_summary(result, config)
    if inline:
        text += "\n**Findings on lines of the diff:**\n\n"
        text += "\n".join(_finding_section(s) + "\n" for s in inline)
    return text
