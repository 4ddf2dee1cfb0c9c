"""A debated pull-request review: the diff shown to the agents, the debate, and the findings the
Free-MAD score keeps, placed inline (on a line of the diff) or in the review's body.

Each agent's SOLUTION is a review in the grammar of `freemad.core.review_findings`; a garbled one is that
agent's unparseable turn (asked once more first), never the run's failure. The whole debate is
the ordinary one (`run_debate`: deadlines, budgets, events, transcript); what it decides for a
review is not its winning answer but each finding's score (`freemad.core.review_score`).

The diff and the pull request's text are untrusted: they reach the agents inside the prompt, on
stdin, never on a command line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from freemad.adapters import Adapters
from freemad.agents.agent_port import AgentPort
from freemad.config.models import FreemadConfig
from freemad.core.review_diff import Diff, DiffError, Fitted, LeftOut, fit_diff, parse_diff
from freemad.core.review_findings import (
    NO_FINDINGS,
    REVIEW_MARKER,
    SEVERITIES,
    Finding,
    ReviewFormatError,
    parse_review,
    severity_rank,
)
from freemad.core.review_score import ReviewScore, ScoredFinding, score_review
from freemad.core.run_events import EventSink
from freemad.core.scoring import Weights
from freemad.debate.debate_record import DebateResult
from freemad.debate.debate_runner import run_debate
from freemad.errors import UsageError

ReviewEvent = Literal["COMMENT", "APPROVE", "REQUEST_CHANGES"]

INSTRUCTIONS = f"""{REVIEW_MARKER}

Review the pull request below as a careful senior engineer: find bugs, security holes, broken
edge cases and misleading code in the lines it changes. Report only real problems, each once.

Your SOLUTION is your review: one finding per problem, each a heading line and the text under it,

### PATH:LINE [SEVERITY]
What is wrong, and why it matters.

```suggestion
the replacement for that line (optional; GitHub offers it as a one-click fix)
```

PATH is the file as the diff names it (its new path), LINE a line number in the new version of
the file, SEVERITY one of {", ".join(SEVERITIES)}. Prefer lines the diff adds or shows. If there
is nothing to report, the SOLUTION is "{NO_FINDINGS}"
"""


# Closes the diff, so a blank context line at its end survives the requirement's trimming.
DIFF_END = "(end of the diff)\n"


class ReviewRefused(UsageError):
    """The diff gives a review nothing to work on (empty, binary only, not a diff)."""


@dataclass(frozen=True)
class ReviewRequest:
    diff: Diff
    fitted: Fitted
    requirement: str


@dataclass(frozen=True)
class ReviewResult:
    request: ReviewRequest
    debate: DebateResult
    score: ReviewScore | None  # None when no agent gave a review
    errors: Mapping[str, str] = field(default_factory=dict)  # agent -> its last failure

    @property
    def surviving(self) -> tuple[ScoredFinding, ...]:
        return self.score.surviving if self.score is not None else ()

    def placed(self) -> tuple[list[ScoredFinding], list[ScoredFinding]]:
        """The surviving findings on a line of the diff (inline comments), and the others."""
        inline: list[ScoredFinding] = []
        outside: list[ScoredFinding] = []
        diff = self.request.diff
        for scored in self.surviving:
            path = diff.resolve(scored.finding.path)
            if diff.in_diff(path, scored.finding.line):
                finding = replace(scored.finding, path=path)
                inline.append(replace(scored, finding=finding))
            else:
                outside.append(scored)
        return inline, outside

    def event(self, config: FreemadConfig) -> ReviewEvent:
        """COMMENT, unless the config asks for REQUEST_CHANGES or APPROVE and the findings fit."""
        worst = config.review.request_changes_at
        if worst is not None and any(
            severity_rank(s.finding.severity) <= severity_rank(worst) for s in self.surviving
        ):
            return "REQUEST_CHANGES"
        if config.review.approve_when_clean and self.score is not None and not self.surviving:
            return "APPROVE"
        return "COMMENT"


def review_request(
    diff_text: str, config: FreemadConfig, context: str = "", unseen: Sequence[LeftOut] = ()
) -> ReviewRequest:
    """The requirement a review debate is run on: the instructions, `context` (the pull
    request's title and body, already cleaned), and the diff, cut to fit (`fit_diff`) within
    `security.max_requirement_size`; `unseen` are files the diff could not carry (GitHub gave
    no patch), listed as left out. ReviewRefused for a diff with nothing to review."""
    if unseen and not diff_text.strip():
        raise ReviewRefused(
            f"GitHub shows no patch for any of the {len(unseen)} file(s) of this pull request "
            "(too large to show): there is nothing the agents could read"
        )
    try:
        diff = parse_diff(diff_text)
    except DiffError as exc:
        raise ReviewRefused(str(exc)) from None
    if not diff.text_files:
        raise ReviewRefused(
            f"the diff changes only binary files ({len(diff.files)}): there is no text to review"
        )
    head = INSTRUCTIONS + (f"\nThe pull request:\n\n{context.strip()}\n" if context.strip() else "")
    head += "\nThe diff:\n\n"
    limit = config.security.max_requirement_size
    total = min(config.review.max_diff_chars or limit, limit - len(head))
    while True:
        fitted = fit_diff(diff, max_file_chars=config.review.max_file_chars, max_total_chars=total)
        requirement = head + fitted.text + DIFF_END
        if len(requirement) <= limit or total <= 0:
            break
        total -= len(requirement) - limit  # the summary lines took the room: fit again
    if not fitted.shown:
        raise ReviewRefused(
            f"no file of the diff fits the review's limits ({len(diff.files)} file(s), "
            f"review.max_file_chars {config.review.max_file_chars}, "
            f"security.max_requirement_size {limit}): raise them to review this diff"
        )
    if unseen:
        fitted = replace(fitted, left_out=(*fitted.left_out, *unseen))
        requirement = (
            requirement.replace(DIFF_END, "", 1)
            + "".join(
                f"# not shown (GitHub gives no patch: too large): {o.summary}\n" for o in unseen
            )
            + DIFF_END
        )
    return ReviewRequest(diff, fitted, requirement)


def for_review(config: FreemadConfig) -> FreemadConfig:
    """The config a review debate runs with: no finalizer (a review is decided finding by
    finding, not by one winning answer a finalizer could rewrite)."""
    if config.debate.finalizer is None:
        return config
    debate = config.debate.model_copy(update={"finalizer": None})
    return config.model_copy(update={"debate": debate})


def check_solution(config: FreemadConfig) -> Callable[[str], list[Finding]]:
    """The check a review debate holds each solution to: the findings grammar."""
    limit = config.review.max_findings

    def check(solution: str) -> list[Finding]:
        return parse_review(solution, max_findings=limit)

    return check


def run_review(
    request: ReviewRequest,
    config: FreemadConfig,
    *,
    rounds: int | None = None,
    agents: Mapping[str, AgentPort] | None = None,
    on_event: EventSink | None = None,
    run_id: str | None = None,
    adapters: Adapters | None = None,
) -> ReviewResult:
    """Debate the review and score its findings (see the module doc)."""
    debate = run_debate(
        request.requirement,
        for_review(config),
        rounds=rounds,
        agents=agents,
        on_event=on_event,
        run_id=run_id,
        adapters=adapters,
        check=check_solution(config),
    )
    return fold_review(request, debate, config)


def fold_review(
    request: ReviewRequest, debate: DebateResult, config: FreemadConfig
) -> ReviewResult:
    """The findings each agent held round by round, read back from the debate's transcript,
    and their scores."""
    limit = config.review.max_findings
    rounds: list[dict[str, Sequence[Finding]]] = []
    held: dict[str, list[Finding]] = {}
    errors: dict[str, str] = {}
    for record in debate.transcript:
        now: dict[str, Sequence[Finding]] = {}
        for agent, turn in record.agents.items():
            if turn.status == "ok" and turn.response is not None:
                try:
                    held[agent] = parse_review(turn.response.solution, max_findings=limit)
                except ReviewFormatError as exc:  # redacted since it was checked: as a failure
                    errors[agent] = f"unparseable: {exc}"
            elif turn.error is not None:
                errors[agent] = ": ".join(p for p in (turn.error.cause, turn.error.detail) if p)
            if agent in held:
                now[agent] = held[agent]
        rounds.append(now)
    score = None
    if any(rounds):
        score = score_review(
            rounds,
            Weights.from_sequence(config.scoring.weights),
            min_score=config.review.min_score,
            normalize=config.scoring.normalize,
        )
    return ReviewResult(request, debate, score, errors)


def summary_data(result: ReviewResult, config: FreemadConfig) -> dict[str, Any]:
    """What a run's record keeps of a review, for status pages and the Action's outputs."""
    inline, outside = result.placed()
    return {
        "findings": len(result.surviving),
        "inline": len(inline),
        "in_body": len(outside),
        "left_out": [o.path for o in result.request.fitted.left_out],
        "event": result.event(config),
    }
