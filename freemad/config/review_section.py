"""The `review:` section: how a debated pull-request review reads the diff and what it posts
(`freemad review`, `/freemad review`; docs/github.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from freemad.config.strict import PositiveInt, StrictModel
from freemad.config.strict import doc as _doc

Severity = Literal["critical", "major", "minor", "nit"]


class ReviewConfig(StrictModel):
    """A review debate: each agent's review is a list of findings, and the Free-MAD score
    decides which survive."""

    max_file_chars: PositiveInt = _doc(
        "A file whose part of the diff is longer is summarised for the agents (its path and "
        "counts), never dropped; the review lists it.",
        12_000,
    )
    max_diff_chars: PositiveInt | None = _doc(
        "Characters of diff shown to the agents in all; files past it are summarised, the "
        "smallest kept first. null: what security.max_requirement_size leaves.",
        None,
    )
    max_findings: Annotated[int, Field(ge=1, le=500)] = _doc(
        "Findings one agent's review may hold; a review with more is unparseable.", 50
    )
    min_score: float | None = _doc(
        "The score a finding needs to survive; null: the weight w1 (scoring.weights[0]), what "
        "one agent gives a finding in the first round.",
        None,
    )
    request_changes_at: Severity | None = _doc(
        "Post the review as REQUEST_CHANGES when a surviving finding is this severe or worse; "
        "null: never (the review is a COMMENT).",
        None,
    )
    approve_when_clean: bool = _doc(
        "Post the review as APPROVE when no finding survives; false: a COMMENT.", False
    )
