"""Debate runs on GitHub: `/freemad debate`, the `freemad:debate` label, and a `workflow_dispatch`
debate with no issue. On a thread the debate keeps one status comment
(`freemad.github.run_progress`): posted at once, edited as each round finishes, and at the end the
result (winner, score table, rounds, a link to the run); on a pull request a check run shows the
same progress. The run is in the store from its start (`freemad.debate.live_store`): a dashboard
reading the store shows it while it runs."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from freemad.core.run_events import EventSink, fan_out
from freemad.debate.debate_record import DebateResult
from freemad.errors import FreemadError
from freemad.github.comments import render_debate
from freemad.github.public_text import public_reason
from freemad.github.run_progress import RunProgress
from freemad.github.thread import Clients, Outcome, Thread
from freemad.markdown import escape_markdown


def start(thread: Thread, requirement: str, options: Mapping[str, Any]) -> Outcome:
    """Debate `requirement`, its progress and then its result in one comment on the thread."""
    from freemad.debate import check_requirement

    # Refused before anything is posted: a requirement no debate takes leaves no run behind.
    requirement = check_requirement(requirement, thread.config)
    summary = {"goal": requirement[:200], "issue": {"repo": thread.repo, "number": thread.number}}
    rounds = options.get("rounds")
    total = thread.config.debate.rounds if rounds is None else int(rounds)
    where = "pull request" if thread.is_pull_request else "issue"
    progress = RunProgress(thread, "FREE-MAD debate", f"debating this {where}", total)
    progress.post(thread.starting("a debate"))
    try:
        result, body = _run(thread, requirement, options, summary, progress)
    except Exception as exc:  # said on the thread, then raised as before
        # Another exception's text may hold anything: only its kind is shown.
        why = public_reason(exc) if isinstance(exc, FreemadError) else type(exc).__name__
        said = f"FREE-MAD could not finish the debate: {escape_markdown(why, 500)}"
        progress.edit(said, title="Could not finish", conclusion="failure")
        raise
    body += thread.pages_note_once()  # no run page to link: how to get one, said once
    won = result.status == "completed" and result.final_answer_id is not None
    title = f"Winner: {result.final_answer_id}" if won else f"Debate {result.status}"
    progress.edit(body, title=title, conclusion="success" if won else "failure")
    thread.link(result.run_id, "debate", progress.comment_id)
    return Outcome(
        "debate",
        run_id=result.run_id,
        status=result.status,
        final_answer=result.final_solution,
        comment_url=progress.html_url,
        summary=body,
    )


def debate_on(clients: Clients, requirement: str, rounds: int | None) -> Outcome:
    """A debate with no issue to answer on (workflow_dispatch): the outcome carries it all."""
    text = clients.clean(requirement)
    result, body = _run(clients, text, {"rounds": rounds}, {"goal": text[:200]})
    return Outcome(
        "debate",
        run_id=result.run_id,
        status=result.status,
        final_answer=result.final_solution,
        summary=body,
    )


def _run(
    clients: Clients,
    requirement: str,
    options: Mapping[str, Any],
    summary: dict[str, Any],
    on_round: EventSink | None = None,
) -> tuple[DebateResult, str]:
    """Run the debate, kept in the store as it goes (a dashboard reading the store shows it live),
    and render the comment."""
    from freemad.debate import check_requirement, run_debate
    from freemad.debate.live_store import StoreJournal

    config, store, settings = clients.config, clients.store, clients.settings
    rounds = options.get("rounds")
    # Refused before the run is made: a requirement no debate takes leaves no run behind.
    requirement = check_requirement(requirement, config)
    run_id = uuid.uuid4().hex
    # What is kept (on the state branch, published by Pages) and posted is redacted with the
    # config's patterns, as a transcript on disk is; the events kept while it runs are too.
    with StoreJournal(store, config, run_id, requirement, summary) as journal:
        result = run_debate(
            requirement,
            config,
            rounds=int(rounds) if rounds is not None else None,
            agents=clients.ports or None,
            on_event=fan_out(journal, on_round),
            run_id=run_id,
            adapters=clients.adapters,
        )
        result = DebateResult.model_validate(journal.finish(result))
    run_url = settings.run_url("debate", result.run_id)
    return result, render_debate(result, run_url, settings.job_url)
