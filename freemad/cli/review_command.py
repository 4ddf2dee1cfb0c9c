"""`freemad review --diff FILE`: a debated review of a diff, run locally, printed as markdown."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from freemad.cli.options import config_option, rounds_option
from freemad.errors import FreemadError, UsageError


@click.command("review")
@click.option(
    "--diff",
    "diff_path",
    required=True,
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="A unified diff (`git diff`, a pull request's .diff); `-` reads stdin.",
)
@config_option()
@rounds_option
@click.option("--json", "as_json", is_flag=True, help="Print the review as JSON, not markdown.")
def review_command(
    *, diff_path: str, config_path: str | None, rounds: int | None, as_json: bool
) -> None:
    """Review the diff in FILE by debate and print the review.

    Each agent writes a review as findings (file, line, severity, text, an optional
    suggestion); in critique rounds they read each other's; the Free-MAD score of each
    finding decides which survive. The review says each agent's stance, every finding's
    score, and the files it summarised instead of reading (review.max_file_chars).

    \b
    Exit status: 0 a review was made; 1 the debate gave none;
                 2 bad input: the diff (empty, binary only, not a diff), an option, the config.
    """
    from freemad.cli.loading import load_config
    from freemad.debate.review_debate import review_request, run_review
    from freemad.debate.review_markdown import render_markdown
    from freemad.logs import start_logging
    from freemad.wiring import ADAPTERS

    config = load_config(config_path).config
    text = _read(diff_path)
    request = review_request(text, config)  # refused here, before any agent starts
    start_logging(config)
    result = run_review(request, config, rounds=rounds, adapters=ADAPTERS)
    from freemad.redact import Redactor

    # What is printed is redacted with the config's patterns, as a transcript on disk is.
    redactor = Redactor(config.security.redact_patterns)
    if as_json:
        click.echo(redactor.text(json.dumps(_as_json(result, config), indent=2)))
    else:
        click.echo(redactor.text(render_markdown(result, config)), nl=False)
    if result.score is None:
        raise FreemadError(
            f"the review debate gave no review: {result.debate.error or 'no answer'}"
        )


def _read(path: str) -> str:
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the diff {path!r}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"the diff {path!r} is not UTF-8 text") from None


def _as_json(result: object, config: object) -> dict[str, object]:
    from freemad.config.models import FreemadConfig
    from freemad.debate.review_debate import ReviewResult

    assert isinstance(result, ReviewResult) and isinstance(config, FreemadConfig)
    inline, outside = result.placed()

    def finding(scored: object, where: str) -> dict[str, object]:
        from freemad.core.review_score import ScoredFinding

        assert isinstance(scored, ScoredFinding)
        f = scored.finding
        return {
            "path": f.path,
            "line": f.line,
            "severity": f.severity,
            "body": f.body,
            "suggestion": f.suggestion,
            "score": scored.score,
            "raised_by": list(scored.raised_by),
            "placed": where,
        }

    score = result.score
    return {
        "run_id": result.debate.run_id,
        "status": result.debate.status,
        "event": result.event(config),
        "findings": [finding(s, "inline") for s in inline] + [finding(s, "body") for s in outside],
        "scores": {s.finding.place: s.score for s in score.findings} if score else {},
        "stances": [s.__dict__ for s in score.stances] if score else [],
        "errors": dict(result.errors),
        "left_out": [o.__dict__ for o in result.request.fitted.left_out],
    }
