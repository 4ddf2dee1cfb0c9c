"""Debate runs on GitHub: `/freemad debate`, the `freemad:debate` label, and a `workflow_dispatch`
debate with no issue. The result is one comment: winner, score table, rounds, a link to the run.
The run is in the store from its start (`freemad.debate.live_store`): a dashboard reading the
store shows it while it runs."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from freemad.debate.debate_record import DebateResult
from freemad.github.comments import render_debate
from freemad.github.thread import Clients, Outcome, Thread


def start(thread: Thread, requirement: str, options: Mapping[str, Any]) -> Outcome:
    """Debate `requirement` and post the result on the thread."""
    summary = {"goal": requirement[:200], "issue": {"repo": thread.repo, "number": thread.number}}
    result, body = _run(thread, requirement, options, summary)
    posted = thread.comment(body)
    thread.link(result.run_id, "debate", posted.id)
    return Outcome(
        "debate",
        run_id=result.run_id,
        status=result.status,
        final_answer=result.final_solution,
        comment_url=posted.html_url,
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
    clients: Clients, requirement: str, options: Mapping[str, Any], summary: dict[str, Any]
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
            on_event=journal,
            run_id=run_id,
            adapters=clients.adapters,
        )
        result = DebateResult.model_validate(journal.finish(result))
    run_url = settings.run_url("debate", result.run_id)
    return result, render_debate(result, run_url, settings.job_url)
