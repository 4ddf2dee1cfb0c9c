"""The evolve decision, pure: what an evolve run keeps, when it stops, and what it does next.

This package is the one import path for the judge and the supervisor (`freemad.core.evolve`
re-exports both). Its modules, one concern each; none does I/O:

- `judge`: predicates, judge-stage parsing, measurements and the admission rule for one candidate.
- `population`: a generation's admission rule: which of its candidates wins, and its confirmation.
- `supervisor`: stall and loop detection, directives, when to ask a person, the stop rules.
- `fold`: a run as a fold over its events (`EvolveState`), and the one next action to take.
- `git_names`: the run's branch and version tags as git names them, and a version's commit message.

The runtime that drives these with agents, a sandbox and git is `freemad.evolve`."""

from freemad.core.evolve.judge import (
    COMPONENT_PATTERN,
    REPLY_STAGE,
    WORKER_STAGE,
    ComparatorSpec,
    Direction,
    JudgeSpec,
    Measurement,
    ParseMode,
    Predicate,
    StageOutcome,
    StageSpec,
    Verdict,
    best_ever,
    failure_signature,
    judge,
    measure,
    parse_predicate,
    parse_stage,
)
from freemad.core.evolve.supervisor import (
    Detection,
    Directive,
    IterationRecord,
    StopReason,
    StopSpec,
    SupervisorSpec,
    active,
    broken_worker,
    detect,
    needs_human,
    should_stop,
)

__all__ = [
    "COMPONENT_PATTERN",
    "REPLY_STAGE",
    "WORKER_STAGE",
    "ComparatorSpec",
    "Detection",
    "Direction",
    "Directive",
    "IterationRecord",
    "JudgeSpec",
    "Measurement",
    "ParseMode",
    "Predicate",
    "StageOutcome",
    "StageSpec",
    "StopReason",
    "StopSpec",
    "SupervisorSpec",
    "Verdict",
    "active",
    "best_ever",
    "broken_worker",
    "detect",
    "failure_signature",
    "judge",
    "measure",
    "needs_human",
    "parse_predicate",
    "parse_stage",
    "should_stop",
]
